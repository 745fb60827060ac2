"""The board's action log (seed 000 §12): a row per tool call, decided approval, task and level
change, built alike from a database row and from a live event, and the newest rows of an agent."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Q
from django.urls import reverse

from brainframe.events import ModelToolCallFlagged
from brainframe.models import Agent, AgentTask, ApprovalRequest, MonitoringLevelChange, ToolCall


def log_entry_for_call(call: ToolCall) -> dict[str, Any]:
    return call_log_entry(
        call_id=str(call.id),
        agent_id=call.agent_id,
        at=call.timestamp,
        actor=call.agent.name if hasattr(call, "agent") else call.agent_id,
        tool_id=call.requested_tool_id,
        decision=call.decision,
        code=call.decision_code,
        outcome=call.outcome,
        duration_ms=call.duration_ms,
        o_tag=call.o_tag_id,
    )


def call_log_entry(
    *,
    call_id: str,
    agent_id: str,
    at: Any,
    actor: str,
    tool_id: str,
    decision: str,
    code: str,
    outcome: str,
    duration_ms: int | None,
    o_tag: Any,
) -> dict[str, Any]:
    """A tool call's row in the action log, from the call's values (a row or a board event)."""
    if decision in (ToolCall.Decision.EXECUTED, ToolCall.Decision.EXECUTED_POST_REVIEW):
        label = {
            "succeeded": "OK",
            "pending": "RUNNING",
            "failed": "FAILED",
            "timed_out": "TIMED OUT",
        }.get(outcome, outcome.upper())
        tone = {"succeeded": "ok", "pending": "warn"}.get(outcome, "bad")
    elif decision == ToolCall.Decision.PENDING_APPROVAL:
        label, tone = {
            "succeeded": ("APPROVED · OK", "ok"),
            "failed": ("APPROVED · FAILED", "bad"),
            "cancelled": ("NOT RUN", "muted"),
        }.get(outcome, ("REVIEW", "warn"))
    else:
        label, tone = f"{ToolCall.Decision(decision).label.upper()} {code}", "bad"
    return {
        "id": f"call-{call_id}",
        "agent_id": agent_id,
        "at": at,
        "actor": actor,
        "kind": "tool_call",
        "subject": tool_id,
        "label": label,
        "tone": tone,
        "duration_ms": duration_ms,
        "o_tag": o_tag,
    }


def log_entry_for_approval(approval: ApprovalRequest) -> dict[str, Any]:
    who = approval.decided_by.get_username() if approval.decided_by else "System"
    return {
        "id": f"approval-event-{approval.id}-{approval.status}",
        "agent_id": approval.agent_id,
        "href": reverse("dashboard:approval", args=[approval.id]),
        "at": approval.decided_at or approval.created_at,
        "actor": who.title() if who == "System" else who,
        "kind": "approval",
        "subject": approval.tool_id,
        "label": approval.status.upper(),
        "tone": {"approved": "ok", "modified": "ok", "rejected": "bad"}.get(
            approval.status, "warn"
        ),
        "duration_ms": None,
        "o_tag": None,
    }


_TASK_TONES = {
    AgentTask.Status.DONE: "ok",
    AgentTask.Status.REVIEW: "warn",
    AgentTask.Status.FAILED: "bad",
    AgentTask.Status.CANCELLED: "muted",
}


def log_entry_for_task(task: AgentTask) -> dict[str, Any]:
    """A task's row: where it is now. Like a call's, it is replaced as the task moves."""
    return {
        "id": f"task-{task.task_id}",
        "agent_id": task.agent_id,
        "at": task.updated_at,
        "actor": task.agent.name,
        "kind": "task",
        "subject": task.title,
        "href": reverse("dashboard:task-chain", args=[task.task_id]),
        "label": task.get_status_display().upper(),
        "tone": _TASK_TONES.get(AgentTask.Status(task.status), ""),
        "duration_ms": None,
        "o_tag": None,
    }


def log_entry_for_level_change(change: MonitoringLevelChange) -> dict[str, Any]:
    """A graduation, demotion or staff change of a tool's or an agent's monitoring level."""
    subject = change.tool_id if change.tool_id else change.agent.name if change.agent else ""
    step = change.to_level - change.from_level
    return {
        "id": f"level-{change.pk}",
        "agent_id": change.agent_id or "",
        "at": change.created_at,
        "actor": change.changed_by.get_username() if change.changed_by else "System",
        "kind": "level",
        "subject": subject,
        "label": f"L{change.from_level} → L{change.to_level} · "
        f"{MonitoringLevelChange.Rule(change.rule).label}",
        "tone": "ok" if step > 0 else "bad" if step < 0 else "warn",
        "duration_ms": None,
        "o_tag": None,
    }


def log_entry_for_model_flag(event: ModelToolCallFlagged) -> dict[str, Any]:
    """A tool call a model proposed through the gateway whose arguments the Guardian flagged."""
    return {
        "id": f"llm-{event.request_id}-{event.tool}",
        "agent_id": event.agent_id,
        "at": datetime.fromisoformat(event.at),
        "actor": event.agent_id,
        "kind": "model proposed",
        "subject": event.tool,
        "href": reverse("admin:brainframe_llmrequest_change", args=[event.request_id]),
        "label": f"GUARDIAN {event.action.upper()} {event.risk:.2f} · "
        + ", ".join(event.patterns[:3]),
        "tone": "bad" if event.action == "block" else "warn",
        "duration_ms": None,
        "o_tag": None,
    }


def action_log(agent: Agent | None = None, limit: int = 40) -> list[dict[str, Any]]:
    """The newest rows of ``agent`` (None: of every agent), as the live stream adds them: tool
    calls, decided approvals, tasks where they stand, and level changes of tools and agents
    (a tool's level change belongs to no agent: shown with every agent's)."""
    calls = ToolCall.objects.select_related("agent").order_by("-timestamp")
    decided = ApprovalRequest.objects.select_related("decided_by").filter(decided_at__isnull=False)
    tasks = AgentTask.objects.select_related("agent").order_by("-updated_at")
    levels = MonitoringLevelChange.objects.select_related("agent", "changed_by")
    if agent is not None:
        calls, decided, tasks = (
            calls.filter(agent=agent),
            decided.filter(agent=agent),
            tasks.filter(agent=agent),
        )
        levels = levels.filter(Q(agent=agent) | Q(agent__isnull=True))
    entries = [log_entry_for_call(c) for c in calls[:limit]]
    entries += [log_entry_for_approval(a) for a in decided.order_by("-decided_at")[:limit]]
    entries += [log_entry_for_task(t) for t in tasks[:limit]]
    entries += [log_entry_for_level_change(c) for c in levels.order_by("-created_at")[:limit]]
    entries.sort(key=lambda e: e["at"], reverse=True)
    return entries[:limit]
