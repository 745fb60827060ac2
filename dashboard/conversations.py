"""The board's conversations (docs/ledgers.md): sessions and threads, one thread's turns with
their messages, tool calls and approvals inline (compactions folded), and the tree of who
delegated what. Live: a conversation event for the open thread reloads its turns."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from brainframe.models import (
    ApprovalRequest,
    Delegation,
    LedgerEvent,
    Session,
    Thread,
    ToolCall,
    Turn,
)

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
def conversation_page(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
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
    context = {
        "thread": thread,
        "page": page,
        "turns": _turn_rows(rows),
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
        if request.GET.get("partial")
        else "dashboard/conversation.html"
    )
    return render(request, template, context)


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
            }
        )
    return rows
