"""Managers and workers (seed 003, docs/ledgers.md): ``agents.delegate`` hands work to another
agent — a task under the chain's O-Tag, a thread of its own with the instructions as its first
turn — and the chain of managers above a worker, which the broker holds the worker's calls to."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from brainframe.events import Delegated, emit
from brainframe.models import Agent, AgentTask, Delegation, ToolCall, Turn
from brainframe.services.ledger.ledgers import LedgerRefusal
from brainframe.services.ledger.turns import MessageSpec, thread_create, turn_open


def delegation_of_task(task_id: Any) -> Delegation | None:
    return (
        Delegation.objects.select_related("manager", "parent").filter(task_id=task_id).first()
        if task_id
        else None
    )


def delegation_managers(delegation: Delegation | None) -> list[tuple[Delegation, Agent]]:
    """Every manager above a worker, nearest first."""
    chain: list[tuple[Delegation, Agent]] = []
    while delegation is not None:
        chain.append((delegation, delegation.manager))
        delegation = (
            Delegation.objects.select_related("manager", "parent").get(pk=delegation.parent_id)
            if delegation.parent_id
            else None
        )
    return chain


def delegate(*, call_id: uuid.UUID, arguments: dict[str, Any]) -> dict[str, Any]:
    """An executed ``agents.delegate``: the worker's task (under the manager's O-Tag) and its
    thread, a child of the manager's turn's thread when the call was made in a turn."""
    call = ToolCall.objects.select_related("agent", "task", "o_tag").get(pk=call_id)
    manager = call.agent
    worker = Agent.objects.filter(agent_id=arguments["agent_id"]).first()
    if worker is None or worker.type == Agent.Type.EXTERNAL:
        raise LedgerRefusal(
            400, "unknown_worker", "agent_id must name a native or sandboxed agent", "agent_id"
        )
    if worker.pk == manager.pk:
        raise LedgerRefusal(
            400, "self_delegation", "an agent cannot delegate to itself", "agent_id"
        )
    parent = delegation_of_task(call.task_id)
    depth = parent.depth + 1 if parent else 1
    manager_turn = Turn.objects.filter(tool_calls__contains=[call.pk]).first() or (
        Turn.objects.filter(task_id=call.task_id).order_by("-seq").first() if call.task_id else None
    )
    parent_thread = manager_turn.thread if manager_turn else (parent.thread if parent else None)
    with transaction.atomic():
        thread = thread_create(
            agent=worker,
            title=f"from {manager.agent_id}: {arguments['title']}",
            parent=parent_thread,
        )
        task = AgentTask.objects.create(
            agent=worker,
            title=arguments["title"][:200],
            priority=int(arguments.get("priority", 50)),
            payload={
                "description": arguments["instructions"],
                "delegated_by": manager.agent_id,
                "thread_id": str(thread.pk),
                "depth": depth,
            },
            o_tag=call.o_tag,
        )
        delegation = Delegation.objects.create(
            manager=manager,
            worker=worker,
            call=call,
            task=task,
            thread=thread,
            parent=parent,
            depth=depth,
            instructions=arguments["instructions"],
        )
        task.payload["delegation_id"] = str(delegation.pk)
        AgentTask.objects.filter(pk=task.pk).update(payload=task.payload)
        turn = turn_open(
            thread=thread,
            agent=worker,
            query=[
                MessageSpec("user", arguments["instructions"], author=f"agent:{manager.agent_id}")
            ],
            origin=call.o_tag,
            task=task,
        )
        emit(
            Delegated(
                delegation_id=str(delegation.pk),
                agent_id=manager.agent_id,
                worker_id=worker.agent_id,
                depth=depth,
                task_id=str(task.pk),
                thread_id=str(thread.pk),
                call_id=str(call.pk),
            ),
        )
    return {
        "delegation_id": str(delegation.pk),
        "worker": worker.agent_id,
        "task_id": str(task.pk),
        "thread_id": str(thread.pk),
        "turn_id": str(turn.pk),
        "depth": depth,
    }
