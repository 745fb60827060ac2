"""The board's proposed rules (docs/access.md, "Proposed rules"): what recurring rejections and
refusals suggest; each is tried on recorded history (what-if) before staff accept it."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from brainframe.models import RuleProposal
from brainframe.services.trust.proposals import ProposalError, proposal_decide, proposal_draft
from broker.errors import BrokerRefusal
from broker.services.replay import policy_replay


def _may_decide(request: HttpRequest) -> bool:
    return bool(request.user.has_perm("brainframe.change_validationpolicy"))


@login_required
def proposals_page(request: HttpRequest) -> HttpResponse:
    proposals = RuleProposal.objects.select_related("decided_by").order_by("status", "-count")
    return render(
        request,
        "dashboard/proposals.html",
        {"proposals": proposals[:200], "can_decide": _may_decide(request)},
    )


@login_required
def proposal_whatif(request: HttpRequest, proposal_id: str) -> HttpResponse:
    """The proposed rule tried on the last 30 days of calls, with accept and dismiss."""
    proposal = get_object_or_404(RuleProposal, pk=proposal_id)
    target, new, draft = proposal_draft(proposal)
    error, report = "", None
    try:
        report = policy_replay(kind="vpol", target=target, draft=draft).as_dict()
    except BrokerRefusal as exc:
        error = exc.detail
    return render(
        request,
        "dashboard/proposal_whatif.html",
        {
            "proposal": proposal,
            "target": "" if new else target,
            "report": report,
            "error": error,
            "can_decide": _may_decide(request),
        },
    )


@login_required
@require_POST
def proposal_decide_view(request: HttpRequest, proposal_id: str, action: str) -> HttpResponse:
    if action not in ("accept", "dismiss"):
        return JsonResponse(
            {"code": "unknown_action", "detail": action, "field": "action"}, status=400
        )
    if not _may_decide(request):
        return JsonResponse(
            {"code": "forbidden", "detail": "staff who may change V-Pols decide proposals"},
            status=403,
        )
    try:
        proposal_decide(proposal_id=proposal_id, by=request.user, accept=action == "accept")
    except ProposalError as exc:
        return JsonResponse({"code": exc.code, "detail": exc.detail}, status=exc.status)
    return redirect(reverse("dashboard:proposals"))
