"""The board's conversations (docs/ledgers.md, docs/channels.md): sessions and threads, one
thread's turns with their messages, tool calls and approvals inline (compactions folded), each
answer's delivery on its channel, a Matrix room's chat read straight from the homeserver with a
chat box to post in it, and the tree of who delegated what. Live: a conversation event for the
open thread reloads its turns (and its chat)."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from brainframe.models import (
    ApprovalRequest,
    Delegation,
    LedgerEvent,
    MatrixRoom,
    OutboundMessage,
    Session,
    Thread,
    ToolCall,
    Turn,
)
from brainframe.services.ledger.formatting import markdown_html
from broker.channels.base import SendFailure
from broker.channels.chat import chat_human_post
from broker.channels.matrix import MatrixUnavailable, bot_user_id, room_messages
from broker.services.approvals import reviewer_groups

TURNS_PER_PAGE = 50


@login_required
def conversations_page(request: HttpRequest) -> HttpResponse:
    sessions = Session.objects.select_related("agent", "person", "thread").order_by("-updated_at")[
        :100
    ]
    threads = (
        Thread.objects.filter(sessions__isnull=True)
        .select_related("agent", "parent")
        .order_by("-updated_at")[:100]
    )
    return render(
        request,
        "dashboard/conversations.html",
        {
            "sessions": sessions,
            "threads": threads,
            "tree": delegation_tree(),
            "socket": "/ws/board/?conversation=all",
        },
    )


def delegation_tree(limit: int = 200) -> list[dict[str, Any]]:
    """Delegations as nested nodes (roots first, newest first), each with its children."""
    rows = list(Delegation.objects.select_related("task").order_by("-created_at")[:limit])
    children: dict[Any, list[Delegation]] = {}
    for d in rows:
        children.setdefault(d.parent_id, []).append(d)
    known = {d.pk for d in rows}

    def node(d: Delegation) -> dict[str, Any]:
        return {"d": d, "children": [node(c) for c in reversed(children.get(d.pk, []))]}

    return [node(d) for d in rows if d.parent_id is None or d.parent_id not in known]


@login_required
def conversation_page(
    request: HttpRequest, thread_id: uuid.UUID, *, partial: bool = False
) -> HttpResponse:
    thread = get_object_or_404(Thread.objects.select_related("agent", "parent"), pk=thread_id)
    turns = Turn.objects.filter(thread=thread).order_by("seq").prefetch_related("messages")
    paginator = Paginator(turns, TURNS_PER_PAGE, allow_empty_first_page=True)
    raw = request.GET.get("page")
    number = paginator.num_pages
    if raw is not None:
        try:
            number = min(max(1, int(raw)), paginator.num_pages)
        except ValueError:
            number = paginator.num_pages
    page = paginator.page(number)
    rows = list(page.object_list)
    room = MatrixRoom.objects.filter(session__thread=thread).select_related("agent").first()
    context = {
        "thread": thread,
        "page": page,
        "turns": _turn_rows(rows),
        "room": room,
        "chat": _chat(room) if room is not None and number == paginator.num_pages else None,
        "sessions": list(thread.sessions.select_related("person")),
        "delegations": list(
            Delegation.objects.filter(thread=thread).select_related("manager", "call")
        ),
        "children": list(thread.children.select_related("agent").order_by("created_at")),
        "socket": f"/ws/board/?conversation={thread.pk}",
        "live": number == paginator.num_pages,
    }
    template = (
        "dashboard/partials/conversation_turns.html"
        if partial or request.GET.get("partial")
        else "dashboard/conversation.html"
    )
    return render(request, template, context)


def _chat(room: MatrixRoom) -> dict[str, Any]:
    """The room's latest messages, read from the homeserver as the room's bot reads them (the
    control plane keeps no copy of the chat beyond the ledgers)."""
    try:
        lines = room_messages(user_id=bot_user_id(room.agent_id), room_id=room.room_id)
    except MatrixUnavailable as exc:
        return {"error": str(exc), "lines": []}
    except Exception as exc:  # the homeserver down or refusing: the page still shows the rest
        return {"error": f"the homeserver could not be read: {exc}", "lines": []}
    # An agent's Markdown as our renderer makes it (raw HTML escaped); people's text as text.
    shown = [
        {"line": line, "html": mark_safe(markdown_html(line.body)) if line.ours else ""}
        for line in lines
    ]
    return {"error": "", "lines": shown}


@login_required
@require_POST
def conversation_chat(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """The chat box: a reviewer or staff member posts in the conversation's room as
    themselves (``chat.human.post``); it comes back from the homeserver as their message."""
    room = get_object_or_404(
        MatrixRoom.objects.select_related("session"), session__thread=thread_id
    )
    if not (request.user.is_staff or reviewer_groups(request.user)):
        return HttpResponse("only staff and reviewers post from the board", status=403)
    text = (request.POST.get("text") or "").strip()
    if not text or len(text) > 4000:
        return HttpResponse("write 1 to 4000 characters", status=400)
    try:
        chat_human_post(user=request.user, room=room, text=text)  # type: ignore[arg-type]
    except (SendFailure, MatrixUnavailable) as exc:
        return HttpResponse(f"not posted: {exc}", status=502)
    return conversation_page(request, thread_id, partial=True)


def _turn_rows(turns: list[Turn]) -> list[dict[str, Any]]:
    """Each turn with its messages, the tool calls it made (decision, outcome) and the approvals
    they waited on: one query for the calls and one for the approvals, whatever the page."""
    call_ids = [c for t in turns for c in t.tool_calls]
    calls = {
        c["id"]: c
        for c in ToolCall.objects.filter(pk__in=call_ids).values(
            "id",
            "requested_tool_id",
            "decision",
            "decision_code",
            "outcome",
            "timestamp",
            "o_tag_id",
        )
    }
    approvals: dict[Any, list[dict[str, Any]]] = {}
    for a in ApprovalRequest.objects.filter(tool_call_id__in=call_ids).values(
        "id", "tool_call_id", "status", "decided_by__username", "decision_reason"
    ):
        approvals.setdefault(a["tool_call_id"], []).append(dict(a))
    deliveries: dict[Any, list[OutboundMessage]] = {}
    for outbound in OutboundMessage.objects.filter(turn__in=[t.pk for t in turns]).order_by(
        "created_at"
    ):
        deliveries.setdefault(outbound.turn_id, []).append(outbound)
    origins = {
        e["origin_id"]: e
        for e in LedgerEvent.objects.filter(
            origin_id__in=[t.origin_id for t in turns if t.origin_id]
        ).values("origin_id", "seq", "channel", "sender")
    }
    rows = []
    for t in turns:
        rows.append(
            {
                "turn": t,
                "messages": sorted(t.messages.all(), key=lambda m: m.seq),
                "calls": [
                    {**calls[c], "approvals": approvals.get(c, [])}
                    for c in t.tool_calls
                    if c in calls
                ],
                "event": origins.get(t.origin_id),
                "deliveries": deliveries.get(t.pk, []),
            }
        )
    return rows
