"""The live board (HTMX): an agent's board, notes, the council, supervisors, chains (the
approvals pages are ``dashboard.approvals``). Views read through ``dashboard.data.selectors`` and
decide through the same services as the API and the admin; partials are the same templates the
websocket pushes."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    JsonResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from brainframe.models import (
    Agent,
    AgentNote,
    AgentTask,
    CouncilProposal,
    Deliverable,
    LedgerEvent,
    LLMBudget,
    ToolCall,
    Turn,
)
from brainframe.selectors import flatten, origin_chain
from brainframe.services.council.votes import CouncilError, is_member, proposal_vote, tally
from brainframe.services.work.supervisors import SupervisorError, supervisor_command
from dashboard.data import action_log, selectors


def _selected_agent(request: HttpRequest) -> Agent | None:
    agents = Agent.objects.order_by("name")
    chosen = request.GET.get("agent")
    if chosen:
        return get_object_or_404(Agent, pk=chosen)
    return agents.filter(type=Agent.Type.SANDBOXED).first() or agents.first()


@login_required
def board(request: HttpRequest) -> HttpResponse:
    """An agent's board; the action log is that agent's (``?log=all``: every agent's)."""
    agent = _selected_agent(request)
    all_agents = request.GET.get("log") == "all"
    context: dict[str, Any] = {
        "agents": Agent.objects.order_by("name"),
        "agent": agent,
        "log_all": all_agents or agent is None,
    }
    if agent is not None:
        context.update(
            card=selectors.status_card(agent),
            columns=selectors.kanban(agent),
            notes=selectors.notes(agent),
            deliverables=selectors.deliverables(agent),
            spend=selectors.model_spend(agent),
            log=action_log.action_log(None if all_agents else agent),
            evidence=selectors.evidence(
                max_age=timedelta(minutes=settings.RABS_CHECKPOINT_MAX_AGE_MINUTES)
            ),
        )
    return render(request, "dashboard/board.html", context)


@login_required
@require_POST
def note_update(request: HttpRequest, note_id: str) -> HttpResponse:
    note = get_object_or_404(AgentNote, pk=note_id)
    content = request.POST.get("content", "").strip()
    if not content:
        return render(
            request,
            "dashboard/partials/note.html",
            {"note": note, "editing": True, "error": "A note cannot be empty."},
            status=422,
        )
    if len(content) > 2000:
        return render(
            request,
            "dashboard/partials/note.html",
            {"note": note, "editing": True, "error": "At most 2,000 characters."},
            status=422,
        )
    note.content = content
    note.save(update_fields=["content", "updated_at"])
    return render(request, "dashboard/partials/note.html", {"note": note})


@login_required
def note_edit(request: HttpRequest, note_id: str) -> HttpResponse:
    note = get_object_or_404(AgentNote, pk=note_id)
    return render(
        request,
        "dashboard/partials/note.html",
        {"note": note, "editing": request.GET.get("cancel") is None},
    )


def _proposal_context(request: HttpRequest, proposal: CouncilProposal, **extra: Any) -> Any:
    votes = list(proposal.votes.select_related("member").order_by("seq"))
    return {
        "proposal": proposal,
        "tally": tally(proposal),
        "votes": votes,
        "may_vote": proposal.status == CouncilProposal.Status.OPEN
        and request.user.pk in proposal.electorate
        and all(v.member_id != request.user.pk for v in votes),
        "change_json": json.dumps(proposal.change, indent=2, ensure_ascii=False),
        **extra,
    }


@login_required
def council(request: HttpRequest) -> HttpResponse:
    open_ = CouncilProposal.objects.filter(status=CouncilProposal.Status.OPEN).order_by("deadline")
    closed = CouncilProposal.objects.exclude(status=CouncilProposal.Status.OPEN).order_by(
        "-closed_at"
    )[:10]
    return render(
        request,
        "dashboard/council.html",
        {
            "open": [_proposal_context(request, p) for p in open_.select_related("proposed_by")],
            "closed": [_proposal_context(request, p) for p in closed.select_related("proposed_by")],
            "member": is_member(request.user),
        },
    )


@login_required
@require_POST
def council_vote(request: HttpRequest, proposal_id: str) -> HttpResponse:
    proposal = get_object_or_404(CouncilProposal, pk=proposal_id)
    try:
        proposal = proposal_vote(
            proposal_id=proposal.pk,
            member=request.user,  # type: ignore[arg-type]
            choice=request.POST.get("choice", ""),
            comment=request.POST.get("comment", "").strip(),
        )
    except CouncilError as exc:
        proposal.refresh_from_db()
        return render(
            request,
            "dashboard/partials/proposal.html",
            _proposal_context(request, proposal, error=exc.detail, code=exc.code),
            status=409 if exc.status in (403, 409) else 422,
        )
    proposal.refresh_from_db()
    return render(request, "dashboard/partials/proposal.html", _proposal_context(request, proposal))


_SUPERVISOR_STATUS = {
    "invalid_action": 400,
    "no_supervisor": 409,
    "constitution:LOOPBACK_ONLY": 409,
    "token_unreadable": 409,
}


@login_required
@require_POST
def supervisor_action(request: HttpRequest, agent_id: str) -> HttpResponse:
    """Staff restart (drain or force) or stop an agent through its supervisor; the answer is the
    agent's refreshed status card, or a JSON error with its code."""
    agent = get_object_or_404(Agent, pk=agent_id)
    if not request.user.has_perm("brainframe.add_supervisorcommand"):
        return JsonResponse(
            {"code": "permission_denied", "detail": "restarting agents is not allowed for you"},
            status=403,
        )
    try:
        supervisor_command(
            agent=agent,
            action=request.POST.get("action", ""),
            force=request.POST.get("force") in ("on", "true", "1"),
            reason=request.POST.get("reason", "").strip() or "from the board",
            requested_by=request.user,  # type: ignore[arg-type]
        )
    except SupervisorError as exc:
        body = {"code": exc.code, "detail": exc.detail}
        if exc.field:
            body["field"] = exc.field
        return JsonResponse(body, status=_SUPERVISOR_STATUS.get(exc.code, 502))
    return render(
        request, "dashboard/partials/status_card.html", {"card": selectors.status_card(agent)}
    )


@login_required
@require_POST
def model_access(request: HttpRequest, agent_id: str) -> HttpResponse:
    """Suspend or resume an agent's model access (effective on its next request)."""
    if not request.user.has_perm("brainframe.change_llmbudget"):
        return JsonResponse(
            {"code": "permission_denied", "detail": "changing model access is not allowed"},
            status=403,
        )
    value = request.POST.get("suspended")
    if value not in ("true", "false"):
        return JsonResponse(
            {"code": "invalid", "detail": "suspended: true or false", "field": "suspended"},
            status=400,
        )
    budget = get_object_or_404(LLMBudget, agent_id=agent_id)
    budget.suspended = value == "true"
    budget.save(update_fields=["suspended", "updated_at"])
    return redirect(f"{reverse('dashboard:board')}?agent={agent_id}")


@login_required
def deliverable_download(request: HttpRequest, deliverable_id: str) -> FileResponse:
    item = get_object_or_404(Deliverable, pk=deliverable_id)
    try:
        handle = item.file.open("rb")
    except FileNotFoundError:
        raise Http404("the file is missing from the outbox storage") from None
    return FileResponse(
        handle, as_attachment=True, filename=item.filename, content_type=item.content_type
    )


@login_required
def chain(request: HttpRequest, o_tag: str) -> HttpResponse:
    origin, roots = origin_chain(o_tag=o_tag)  # type: ignore[arg-type]
    # The chain's first link: the message that started it, and the turns that answered it.
    started_by = LedgerEvent.objects.filter(origin=origin).select_related("person").first()
    turns = Turn.objects.filter(origin=origin).select_related("thread").order_by("started_at")[:20]
    return render(
        request,
        "dashboard/chain.html",
        {"origin": origin, "nodes": flatten(roots), "started_by": started_by, "turns": turns},
    )


@login_required
def call_chain(request: HttpRequest, call_id: str) -> HttpResponse:
    call = get_object_or_404(ToolCall, pk=call_id)
    if call.o_tag_id is None:
        return HttpResponseBadRequest("this call has no origin")
    return chain(request, str(call.o_tag_id))


@login_required
def task_chain(request: HttpRequest, task_id: str) -> HttpResponse:
    task = get_object_or_404(AgentTask, pk=task_id)
    o_tag = task.o_tag_id or (
        ToolCall.objects.filter(task=task)
        .exclude(o_tag=None)
        .order_by("timestamp")
        .values_list("o_tag_id", flat=True)
        .first()
    )
    if o_tag is None:
        return render(request, "dashboard/chain.html", {"task": task, "nodes": []})
    return chain(request, str(o_tag))
