"""Event → HTML: which partials to push for each board event (out-of-band swaps)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.template.loader import render_to_string

from brainframe.models import Agent, AgentTask, ApprovalRequest, MonitoringLevelChange, ToolCall
from broker.services.approvals import can_decide

from . import selectors


def _log_row(entry: dict[str, Any]) -> str:
    return render_to_string("dashboard/partials/log_row.html", {"entry": entry, "oob": True})


def _replacing_row(entry: dict[str, Any]) -> str:
    """A row that moves on (a call: review → approved → OK; a task between columns): drop its
    old row, then put the current one on top."""
    return f'<li id="{entry["id"]}" hx-swap-oob="delete"></li>\n' + _log_row(entry)


def render_call_event(payload: dict[str, Any]) -> str | None:
    """A tool call's row straight from its event (no database read), or None when the event
    does not carry what the row shows."""
    if "agent_name" not in payload:
        return None
    entry = selectors.call_log_entry(
        call_id=payload["call_id"],
        at=datetime.fromisoformat(payload["timestamp"]),
        actor=payload["agent_name"],
        tool_id=payload["tool_id"],
        decision=payload["decision"],
        code=payload["code"],
        outcome=payload["outcome"],
        duration_ms=payload["duration_ms"],
        o_tag=payload.get("o_tag"),
    )
    return _replacing_row(entry)


def renders(event: str) -> bool:
    """Whether the board shows ``event`` (others, such as every Guardian assessment, are for
    other listeners: no thread hop, no database read for them)."""
    return event == "tool_call" or event.startswith("approval_") or event in _AGENT_EVENTS


_AGENT_EVENTS = ("task_changed", "heartbeat", "level_changed", "agent_changed")


def render_event(event: str, payload: dict[str, Any], user: Any) -> str:
    parts: list[str] = []
    if event == "tool_call":
        call = ToolCall.objects.select_related("agent").filter(pk=payload["call_id"]).first()
        if call is not None:
            parts.append(_replacing_row(selectors.log_entry_for_call(call)))
    elif event.startswith("approval_"):
        approval = (
            ApprovalRequest.objects.select_related("agent", "tool", "r_tag", "decided_by", "vpol")
            .filter(pk=payload["approval_id"])
            .first()
        )
        if approval is not None:
            template = (
                "dashboard/partials/approval_new.html"
                if event == "approval_created"
                else "dashboard/partials/approval_card.html"
            )
            parts.append(
                render_to_string(
                    template,
                    {
                        "approval": approval,
                        "chain": selectors.chain_for(approval),
                        "can_decide": can_decide(user, approval),
                        "arguments_json": json.dumps(
                            approval.arguments, indent=2, ensure_ascii=False
                        ),
                        "oob": True,
                    },
                )
            )
            if event != "approval_created":
                parts.append(_log_row(selectors.log_entry_for_approval(approval)))
            parts.append(
                render_to_string(
                    "dashboard/partials/open_count.html",
                    {
                        "open_count": ApprovalRequest.objects.filter(
                            status__in=["pending", "escalated"]
                        ).count(),
                        "oob": True,
                    },
                )
            )
    elif event in _AGENT_EVENTS:
        if event == "task_changed":
            task = AgentTask.objects.select_related("agent").filter(pk=payload["task_id"]).first()
            if task is not None:
                parts.append(_replacing_row(selectors.log_entry_for_task(task)))
        elif event == "level_changed" and payload.get("change_id") is not None:
            change = (
                MonitoringLevelChange.objects.select_related("agent", "changed_by")
                .filter(pk=payload["change_id"])
                .first()
            )
            if change is not None:
                parts.append(_log_row(selectors.log_entry_for_level_change(change)))
        agent_id = payload.get("agent_id")  # none for a tool's level change
        agent = Agent.objects.filter(pk=agent_id).first() if agent_id else None
        if agent is not None:
            parts.append(
                render_to_string(
                    "dashboard/partials/status_card.html",
                    {"card": selectors.status_card(agent), "oob": True},
                )
            )
            if event == "task_changed":
                parts.append(
                    render_to_string(
                        "dashboard/partials/kanban.html",
                        {"agent": agent, "columns": selectors.kanban(agent), "oob": True},
                    )
                )
    return "\n".join(parts)
