"""An agent's inbox: claim, progress, complete, fail. Kanban: To Do → In Progress → Review → Done.

Transitions are conditional UPDATEs checked by row count, so two claimers of one task get one
winner without locks held across a request.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.utils import timezone

from brainframe.events import TaskChanged, emit
from brainframe.models import Agent, AgentTask, ApprovalRequest

Status = AgentTask.Status
OPEN_APPROVAL = [ApprovalRequest.Status.PENDING, ApprovalRequest.Status.ESCALATED]


class TaskTransitionError(Exception):
    """The task is not in a state that allows the transition (e.g. already claimed)."""

    def __init__(self, task: AgentTask, wanted: str) -> None:
        super().__init__(f"task is {task.status}; cannot {wanted}")
        self.task = task
        self.wanted = wanted


def _transition(
    *,
    agent: Agent,
    task_id: uuid.UUID,
    allowed_from: list[str],
    wanted: str,
    changes: dict[str, Any],
) -> AgentTask:
    updated = AgentTask.objects.filter(pk=task_id, agent=agent, status__in=allowed_from).update(
        **changes, updated_at=timezone.now()
    )
    task = AgentTask.objects.get(pk=task_id, agent=agent)  # DoesNotExist: not this agent's
    if not updated:
        raise TaskTransitionError(task, wanted)
    task_announce(task)
    return task


def task_announce(task: AgentTask, *, also_agent_id: str | None = None, owner: bool = True) -> None:
    """Show the task where it stands on every open board (its log row, its agent's Kanban),
    once committed: the board reads the task. ``also_agent_id``: an agent it was moved away
    from, whose Kanban loses it; ``owner`` False: only that one (the save announced the task's
    own agent already)."""
    emit(
        *(
            TaskChanged(
                agent_id=agent_id,
                task_id=str(task.task_id),
                status=task.status,
                owner=task.agent_id,
                title=task.title[:200],
                priority=task.priority,
                progress=task.progress or 0,
                created_at=task.created_at.isoformat() if task.created_at else "",
            )
            for agent_id in dict.fromkeys([task.agent_id if owner else None, also_agent_id])
            if agent_id
        )
    )


def task_claim(*, agent: Agent, task_id: uuid.UUID) -> AgentTask:
    return _transition(
        agent=agent,
        task_id=task_id,
        allowed_from=[Status.TODO],
        wanted="claim",
        changes={"status": Status.IN_PROGRESS, "started_at": timezone.now()},
    )


def task_progress(*, agent: Agent, task_id: uuid.UUID, progress: int, note: str = "") -> AgentTask:
    changes: dict[str, Any] = {"progress": progress}
    if note:
        task = AgentTask.objects.get(pk=task_id, agent=agent)
        changes["payload"] = {**task.payload, "last_note": note[:2000]}
    return _transition(
        agent=agent,
        task_id=task_id,
        allowed_from=[Status.IN_PROGRESS],
        wanted="report progress",
        changes=changes,
    )


def task_complete(*, agent: Agent, task_id: uuid.UUID, result: Any) -> AgentTask:
    """Done, unless a human still has to look at one of its calls: then Review."""
    waiting = ApprovalRequest.objects.filter(task_id=task_id, status__in=OPEN_APPROVAL).exists()
    return _transition(
        agent=agent,
        task_id=task_id,
        allowed_from=[Status.IN_PROGRESS],
        wanted="complete",
        changes={
            "status": Status.REVIEW if waiting else Status.DONE,
            "result": result,
            "progress": 100,
            "completed_at": timezone.now(),
        },
    )


def task_fail(*, agent: Agent, task_id: uuid.UUID, reason: str) -> AgentTask:
    return _transition(
        agent=agent,
        task_id=task_id,
        allowed_from=[Status.TODO, Status.IN_PROGRESS],
        wanted="fail",
        changes={"status": Status.FAILED, "failure_reason": reason, "completed_at": timezone.now()},
    )


def task_list(*, agent: Agent, status: str | None = None) -> Any:
    queryset = AgentTask.objects.filter(agent=agent)
    if status:
        queryset = queryset.filter(status=status)
    return queryset.order_by("-priority", "created_at")
