"""The approvals pages: open cards, batches, one approval on its own, standing approvals and
grants; every decision goes through ``broker.services.approvals`` like the API's and the admin's."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from brainframe.models import (
    ApprovalRequest,
    CapabilityGrant,
    ReviewerPreference,
    StandingApproval,
)
from brainframe.services.access.grants import grant_withdraw
from brainframe.services.access.standing import standing_live, standing_revoke
from broker.services.approvals import (
    ApprovalError,
    approval_approve_standing,
    approval_decide,
    reviewer_groups,
)
from broker.services.batches import approvals_decide_batch
from dashboard.data import selectors
from dashboard.live.cards import card_context, may_add_reviewers


def _card(request: HttpRequest, approval: ApprovalRequest, **extra: Any) -> dict[str, Any]:
    return card_context(approval, request.user, **extra)


def _approval(approval_id: Any) -> ApprovalRequest:
    return get_object_or_404(
        ApprovalRequest.objects.select_related(*selectors.CARD_RELATED), pk=approval_id
    )


@login_required
def approvals(request: HttpRequest) -> HttpResponse:
    """Open approvals, most urgent first; batches of one chain (``?batches=wide``: of any
    chain); approved calls not yet run, with whether a worker took them up."""
    items = selectors.open_approvals()
    chains, groups = selectors.chains_for(items), reviewer_groups(request.user)
    user = request.user
    cards = [card_context(a, user, chain=chains.get(a.pk, []), groups=groups) for a in items]
    waiting = [card_context(a, user, groups=groups) for a in selectors.approved_not_run()]
    widened = request.GET.get("batches") == "wide"
    return render(
        request,
        "dashboard/approvals.html",
        {
            "cards": cards,
            "waiting": waiting,
            "batches": selectors.batches(items, widened=widened),
            "widened": widened,
            "can_review": bool(groups),
            "may_add_reviewers": may_add_reviewers(user),
            "standing": standing_live(),
            "grants": CapabilityGrant.objects.filter(withdrawn_at__isnull=True)
            .select_related("agent", "person", "granted_by_call")
            .order_by("-created_at")[:100],
            "digest": _digest_of(user.pk),
            "digest_choices": ReviewerPreference.Digest.choices,
        },
    )


@login_required
def approval_page(request: HttpRequest, approval_id: Any) -> HttpResponse:
    """One approval, open or decided (where a chain or a log row links to); ``?partial=1``:
    its card alone, which a card waiting on a worker fetches to show when the call ran."""
    approval = _approval(approval_id)
    context = _card(request, approval, standalone=True)
    if request.GET.get("partial"):
        return render(request, "dashboard/partials/approval_card.html", context)
    return render(request, "dashboard/approval.html", context)


@login_required
@require_POST
def approvals_batch(request: HttpRequest, action: str) -> HttpResponse:
    """Approve or reject the ticked members of a batch the reviewer saw: each is its own
    decision (``approvals_decide_batch``); the answer reports each, and the cards update.
    Calls of several chains only from a batch the reviewer widened."""
    ids = request.POST.getlist("approval")
    try:
        results = approvals_decide_batch(
            approval_ids=ids,
            reviewer=request.user,  # type: ignore[arg-type]
            action=action,
            reason=request.POST.get("reason", ""),
            across_chains=request.POST.get("widened") == "1",
        )
    except ApprovalError as exc:
        return render(
            request,
            "dashboard/partials/batch_result.html",
            {"error": exc.detail, "code": exc.code, "batch_id": request.POST.get("batch", "")},
            status=422,
        )
    decided = [r for r in results if r.decided]
    cards = [
        _card(request, a, oob=True)
        for a in ApprovalRequest.objects.select_related(*selectors.CARD_RELATED).filter(
            pk__in=[r.approval_id for r in decided]
        )
    ]
    return render(
        request,
        "dashboard/partials/batch_result.html",
        {
            "action": action,
            "decided": decided,
            "left": [r for r in results if not r.decided],
            "cards": cards,
            "batch_id": request.POST.get("batch", ""),
        },
    )


@login_required
@require_POST
def approval_standing(request: HttpRequest, approval_id: str) -> HttpResponse:
    """Approve this call and calls exactly like it for the next N hours."""
    approval = _approval(approval_id)
    try:
        hours = float(request.POST.get("hours", ""))
    except ValueError:
        hours = 0.0
    try:
        approval_approve_standing(
            approval_id=approval.pk,
            reviewer=request.user,  # type: ignore[arg-type]
            hours=hours,
            any_keys=request.POST.getlist("any"),
            reason=request.POST.get("reason", ""),
        )
    except ApprovalError as exc:
        approval = _approval(approval_id)
        return render(
            request,
            "dashboard/partials/approval_card.html",
            _card(request, approval, error=exc.detail, code=exc.code),
            status=409 if exc.status == 409 else 422,
        )
    return render(
        request, "dashboard/partials/approval_card.html", _card(request, _approval(approval_id))
    )


@login_required
@require_POST
def approval_action(request: HttpRequest, approval_id: str, action: str) -> HttpResponse:
    approval = _approval(approval_id)
    if action not in ("approve", "reject", "modify", "escalate"):
        return HttpResponseBadRequest("unknown action")
    arguments = None
    raw = request.POST.get("arguments", "")
    if action == "modify":
        problem = ""
        try:
            arguments = json.loads(raw)
        except ValueError as exc:
            problem = f"Not valid JSON: {exc}"
        if not problem and not isinstance(arguments, dict):
            problem = "The arguments must be a JSON object."
        if problem:
            return render(
                request,
                "dashboard/partials/approval_card.html",
                _card(request, approval, error=problem, arguments_json=raw, editing=True),
                status=422,
            )
    try:
        approval_decide(
            approval_id=approval.pk,
            reviewer=request.user,  # type: ignore[arg-type]
            action=action,
            reason=request.POST.get("reason", ""),
            arguments=arguments,
            lesson=request.POST.get("lesson", "")[:2000],
        )
    except ApprovalError as exc:
        approval = _approval(approval_id)
        problems = [f"{e['path']}: {e['message']}" for e in exc.errors]
        return render(
            request,
            "dashboard/partials/approval_card.html",
            _card(
                request,
                approval,
                error=exc.detail,
                code=exc.code,
                problems=problems,
                editing=action == "modify",
                arguments_json=raw or json.dumps(approval.arguments, indent=2),
            ),
            status=409 if exc.status == 409 else 422,
        )
    return render(
        request, "dashboard/partials/approval_card.html", _card(request, _approval(approval_id))
    )


def _digest_of(user_id: Any) -> str:
    chosen = ReviewerPreference.objects.filter(user_id=user_id).values_list("digest", flat=True)
    return chosen.first() or ReviewerPreference.Digest.IMMEDIATE


@login_required
@require_POST
def digest_preference(request: HttpRequest) -> HttpResponse:
    """A reviewer chooses how approval e-mails reach them: each at once, or a digest."""
    choice = request.POST.get("digest", "")
    if choice not in ReviewerPreference.Digest.values:
        return JsonResponse(
            {
                "code": "invalid",
                "detail": f"digest: one of {', '.join(ReviewerPreference.Digest.values)}",
                "field": "digest",
            },
            status=400,
        )
    ReviewerPreference.objects.update_or_create(
        user_id=request.user.pk, defaults={"digest": choice}
    )
    return redirect(reverse("dashboard:approvals") + "#notifications")


@login_required
@require_POST
def standing_revoke_view(request: HttpRequest, standing_id: str) -> HttpResponse:
    standing = get_object_or_404(StandingApproval, pk=standing_id)
    if not reviewer_groups(request.user):
        return JsonResponse(
            {"code": "not_a_reviewer", "detail": "only reviewers revoke standing approvals"},
            status=403,
        )
    standing_revoke(standing=standing, by=request.user, reason="revoked on the board")
    return redirect(reverse("dashboard:approvals") + "#standing")


@login_required
@require_POST
def grant_revoke_view(request: HttpRequest, grant_id: str) -> HttpResponse:
    """Withdraw a live capability grant at once (docs/access.md, "Grants")."""
    grant = get_object_or_404(CapabilityGrant, pk=grant_id)
    if not reviewer_groups(request.user):
        return JsonResponse(
            {"code": "not_a_reviewer", "detail": "only reviewers revoke grants"}, status=403
        )
    grant_withdraw(grant=grant, reason=f"revoked on the board by {request.user.get_username()}")
    return redirect(reverse("dashboard:approvals") + "#grants")
