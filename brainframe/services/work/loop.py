"""The agent's loop and its input (seed 004, docs/channels.md "Yielding the turn").

New input for an agent is what it did not make itself: a task in its inbox or one it took up, a
person's message in one of its turns (a steer), a decision on one of its approvals, a hook's
message for it. ``loop.yield_turn`` sleeps until there is some; the loop latch counts the calls
an agent makes without any.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Q

from brainframe.models import AgentTask, ApprovalRequest, HookMessage, Message


def loop_traffic(*, agent_id: str, since: datetime, limit: int = 20) -> list[dict[str, Any]]:
    """What arrived for the agent after ``since`` (newest last): tasks (new, or taken up),
    people's messages in its turns, decisions on its approvals, its hooks' messages."""
    found: list[dict[str, Any]] = []
    tasks = (
        AgentTask.objects.filter(agent_id=agent_id)
        .filter(Q(created_at__gt=since) | Q(started_at__gt=since))
        .order_by("created_at")
        .values("task_id", "title", "status", "created_at")[:limit]
    )
    found += [
        {"kind": "task", "task_id": str(t["task_id"]), "title": t["title"],
         "status": t["status"], "at": t["created_at"]}
        for t in tasks
    ]  # fmt: skip
    messages = (
        Message.objects.filter(
            turn__agent_id=agent_id,
            role__in=[Message.Role.USER, Message.Role.STEER],
            created_at__gt=since,
            event__isnull=False,
        )
        .order_by("created_at")
        .values("turn_id", "role", "author", "created_at")[:limit]
    )
    found += [
        {"kind": "message", "turn_id": str(m["turn_id"]), "role": m["role"],
         "from": m["author"], "at": m["created_at"]}
        for m in messages
    ]  # fmt: skip
    decided = (
        ApprovalRequest.objects.filter(agent_id=agent_id, decided_at__gt=since)
        .order_by("decided_at")
        .values("id", "tool_id", "status", "decided_at")[:limit]
    )
    found += [
        {"kind": "approval", "approval_id": str(a["id"]), "tool_id": a["tool_id"],
         "status": a["status"], "at": a["decided_at"]}
        for a in decided
    ]  # fmt: skip
    hooks = (
        HookMessage.objects.filter(agent_id=agent_id, created_at__gt=since)
        .order_by("created_at")
        .values("id", "hook_id", "created_at")[:limit]
    )
    found += [
        {"kind": "hook", "hook_id": str(h["hook_id"]), "message_id": str(h["id"]),
         "at": h["created_at"]}
        for h in hooks
    ]  # fmt: skip
    found.sort(key=lambda item: item["at"])
    return [{**item, "at": item["at"].isoformat()} for item in found[-limit:]]
