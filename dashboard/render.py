"""Event → HTML: which partials to push for each board event (out-of-band swaps)."""

from __future__ import annotations

import json
from typing import Any

from django.template.loader import render_to_string

from brainframe.models import Agent, ApprovalRequest, ToolCall
from broker.services.approvals import can_decide

from . import selectors


def _log_row(entry: dict[str, Any]) -> str:
    return render_to_string("dashboard/partials/log_row.html", {"entry": entry, "oob": True})


def render_event(event: str, payload: dict[str, Any], user: Any) -> str:
    parts: list[str] = []
    if event == "tool_call":
        call = ToolCall.objects.select_related("agent").filter(pk=payload["call_id"]).first()
        if call is not None:
            entry = selectors.log_entry_for_call(call)
            # A call's row is replaced as it progresses (review → approved → OK): drop the old
            # row, then put the current one on top.
            parts.append(f'<li id="{entry["id"]}" hx-swap-oob="delete"></li>')
            parts.append(_log_row(entry))
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
    elif event in ("task_changed", "heartbeat", "level_changed"):
        agent = Agent.objects.filter(pk=payload.get("agent_id")).first()
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
