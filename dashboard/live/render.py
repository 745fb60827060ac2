"""Event → HTML: which partials to push for each board event (out-of-band swaps).

``RENDERERS`` maps each event type the board shows to the function that renders it; events
not in it (every Guardian assessment, a threat alert) are for other listeners and cost the board
nothing.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import mark_safe

from brainframe.events import (
    AgentChanged,
    ApprovalCreated,
    ApprovalDecided,
    ApprovalEscalated,
    ApprovalEvent,
    ApprovalExpired,
    CouncilChanged,
    Event,
    Heartbeat,
    LevelChanged,
    ModelToolCallFlagged,
    TaskChanged,
    ToolCallChanged,
)
from brainframe.models import Agent, AgentTask, ApprovalRequest, MonitoringLevelChange, ToolCall
from brainframe.services.eventlog.reading import event_summary
from broker.services.approvals import OPEN
from dashboard.data import action_log, selectors
from dashboard.live.cards import card_context

_UUID_TEXT = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_UUID = re.compile(f"^{_UUID_TEXT}$")
_UUID_IN = re.compile(_UUID_TEXT)


def short_ids(text: str) -> str:
    """``text`` escaped, each id in it shortened as ``short_subject`` does."""
    escaped = str(conditional_escape(text))
    return mark_safe(  # escaped above; the ids are hex digits and dashes
        _UUID_IN.sub(
            lambda m: f'<code class="id" title="{m[0]}" data-copy="{m[0]}">{m[0][:8]}</code>',
            escaped,
        )
    )


def short_subject(subject: str) -> str:
    """An event's subject as the feed shows it: an id shortened to its first 8 characters, the
    whole id in its title and copied on a click; other subjects as they are (at most 36)."""
    if _UUID.match(subject):
        return format_html(
            '<code class="id" title="{}" data-copy="{}">{}</code>', subject, subject, subject[:8]
        )
    return format_html("{}", subject[:36])


def render_feed_row(event: Event, *, at: datetime | None = None, oob: bool = True) -> str:
    """One event of the event log as the feed shows it (no database read: the payload is all)."""
    payload = event.__dict__
    when = timezone.localtime(at or timezone.now())
    call_id = payload.get("call_id")
    link = (
        format_html(' <a href="{}">chain</a>', reverse("dashboard:call-chain", args=[call_id]))
        if call_id
        else ""
    )
    row = format_html(
        '<li class="feed-row family-{}" data-family="{}" data-event="{}">'
        '<time datetime="{}">{}</time> <span class="kind">{}</span> '
        '<span class="actor">[{}]</span> <span class="subject">{}</span> — {}{}</li>',
        event.family(),
        event.family(),
        event.NAME,
        when.isoformat(),
        when.strftime("%d %b %Y %H:%M:%S"),
        event.NAME,
        payload.get("agent_id") or "system",
        short_subject(event.about()),
        short_ids(event_summary(event.NAME, payload)),
        link,
    )
    return f'<ol hx-swap-oob="afterbegin:#event-feed">{row}</ol>' if oob else str(row)


CONVERSATION_FAMILY = "conversation"


def render_conversation_refresh(event: Event, conversation: str) -> str:
    """For a page showing conversations: an element that, swapped in, reloads what the event
    changed (the open thread's turns, or the conversations list). Empty: not this page's."""
    thread_id = event.__dict__.get("thread_id")
    if conversation == "all":
        url, target = reverse("dashboard:conversations"), "#conversations"
        select = ' hx-select="#conversations"'
    elif thread_id and thread_id == conversation:
        url = reverse("dashboard:conversation", args=[thread_id]) + "?partial=1"
        target, select = "#conversation-turns", ""
    else:
        return ""
    return format_html(
        '<div id="conversation-refresh" hx-swap-oob="true"><span hx-get="{}" '
        'hx-trigger="load" hx-target="{}" hx-swap="outerHTML"{}></span></div>',
        url,
        target,
        mark_safe(select),
    )


def _log_row(entry: dict[str, Any]) -> str:
    return render_to_string("dashboard/partials/log_row.html", {"entry": entry, "oob": True})


def _replacing_row(entry: dict[str, Any]) -> str:
    """A row that moves on (a call: review → approved → OK; a task between columns): drop its
    old row, then put the current one on top."""
    return f'<li id="{entry["id"]}" hx-swap-oob="delete"></li>\n' + _log_row(entry)


def render_call_event(event: ToolCallChanged) -> str:
    """A tool call's row straight from its event (no database read)."""
    entry = action_log.call_log_entry(
        call_id=event.call_id,
        agent_id=event.agent_id,
        at=datetime.fromisoformat(event.timestamp),
        actor=event.agent_name,
        tool_id=event.tool_id,
        decision=event.decision,
        code=event.code,
        outcome=event.outcome,
        duration_ms=event.duration_ms,
        o_tag=event.o_tag,
    )
    return _replacing_row(entry)


def _tool_call(event: Event, user: Any) -> list[str]:
    assert isinstance(event, ToolCallChanged)
    call = ToolCall.objects.select_related("agent").filter(pk=event.call_id).first()
    return [_replacing_row(action_log.log_entry_for_call(call))] if call is not None else []


def ran_after_approval(event: Event) -> bool:
    """A call that waited for a reviewer started or finished running: its card says so."""
    return (
        isinstance(event, ToolCallChanged)
        and event.decision == ToolCall.Decision.PENDING_APPROVAL
        and event.outcome != ToolCall.Outcome.NOT_RUN
    )


def render_approved_call(event: ToolCallChanged, user: Any) -> str:
    """The card of the approval a call waited on, as it stands now that the call ran."""
    approval = (
        ApprovalRequest.objects.select_related(*selectors.CARD_RELATED)
        .filter(tool_call_id=uuid.UUID(event.call_id))
        .first()
    )
    if approval is None:
        return ""
    return render_to_string(
        "dashboard/partials/approval_card.html", card_context(approval, user, oob=True)
    )


def _approval(event: Event, user: Any) -> list[str]:
    assert isinstance(event, ApprovalEvent)
    approval = (
        ApprovalRequest.objects.select_related(*selectors.CARD_RELATED)
        .filter(pk=event.approval_id)
        .first()
    )
    if approval is None:
        return []
    created = isinstance(event, ApprovalCreated)
    template = (
        "dashboard/partials/approval_new.html"
        if created
        else "dashboard/partials/approval_card.html"
    )
    parts: list[str] = [render_to_string(template, card_context(approval, user, oob=True))]
    if not created:
        parts.append(_log_row(action_log.log_entry_for_approval(approval)))
    open_count = ApprovalRequest.objects.filter(status__in=OPEN).count()
    parts.append(
        render_to_string(
            "dashboard/partials/open_count.html", {"open_count": open_count, "oob": True}
        )
    )
    return parts


def _status_card(agent_id: str | None, *, kanban: bool = False) -> list[str]:
    """The agent's status card (and its Kanban), as they stand now."""
    agent = Agent.objects.filter(pk=agent_id).first() if agent_id else None
    if agent is None:
        return []
    parts: list[str] = [
        render_to_string(
            "dashboard/partials/status_card.html",
            {"card": selectors.status_card(agent), "oob": True},
        )
    ]
    if kanban:
        parts.append(
            render_to_string(
                "dashboard/partials/kanban.html",
                {"agent": agent, "columns": selectors.kanban(agent), "oob": True},
            )
        )
    return parts


def _task(event: Event, user: Any) -> list[str]:
    assert isinstance(event, TaskChanged)
    task = AgentTask.objects.select_related("agent").filter(pk=event.task_id).first()
    parts = [_replacing_row(action_log.log_entry_for_task(task))] if task is not None else []
    return parts + _status_card(event.agent_id, kanban=True)


def _level(event: Event, user: Any) -> list[str]:
    assert isinstance(event, LevelChanged)
    parts: list[str] = []
    if event.change_id is not None:
        change = (
            MonitoringLevelChange.objects.select_related("agent", "changed_by")
            .filter(pk=event.change_id)
            .first()
        )
        if change is not None:
            parts.append(_log_row(action_log.log_entry_for_level_change(change)))
    return parts + _status_card(event.agent_id)  # none for a tool's level change


def _model_flag(event: Event, user: Any) -> list[str]:
    assert isinstance(event, ModelToolCallFlagged)
    return [_log_row(action_log.log_entry_for_model_flag(event))]


def _council(event: Event, user: Any) -> list[str]:
    assert isinstance(event, CouncilChanged)
    return [render_to_string("dashboard/partials/tally.html", {"t": event, "oob": True})]


def _agent(event: Event, user: Any) -> list[str]:
    assert isinstance(event, AgentChanged | Heartbeat)
    return _status_card(event.agent_id)


#: What the board shows, by event type.
RENDERERS: dict[type[Event], Callable[[Event, Any], list[str]]] = {
    ToolCallChanged: _tool_call,
    ApprovalCreated: _approval,
    ApprovalDecided: _approval,
    ApprovalEscalated: _approval,
    ApprovalExpired: _approval,
    TaskChanged: _task,
    LevelChanged: _level,
    AgentChanged: _agent,
    Heartbeat: _agent,
    ModelToolCallFlagged: _model_flag,
    CouncilChanged: _council,
}


def renders(event: Event) -> bool:
    """Whether the board shows ``event`` (others, such as every Guardian assessment, are for
    other listeners: no thread hop, no database read for them)."""
    return type(event) in RENDERERS


def render_event(event: Event, user: Any) -> str:
    renderer = RENDERERS.get(type(event))
    return "\n".join(renderer(event, user)) if renderer is not None else ""
