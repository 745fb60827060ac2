"""The work an agent holds (docs/access.md, "Authority is derived"): the people and the managers it
is working for right now, whether or not a request names them.

A call or a read that names no person's chain is decided under the limits of **every** person
whose work the agent holds (a claimed task whose chain a person's message started), and a call
that names no delegated work under **every** manager of the delegated work it holds: leaving the
task out of a request never escapes a limit that would apply with it.

Work is held from the moment the agent claims the task until it is finished (in progress):

- held for a person: such a task whose O-Tag carries a principal;
- held for a manager: such a task made by ``agents.delegate``.

A task in the inbox not yet claimed is not held: a call naming it is decided under its chain all
the same, but one that names nothing is the agent's own until it claims one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import connection

from brainframe.models import Agent, AgentTask, Delegation, OriginRegistry

_SQL = (
    "SELECT o.principal::text, d.id FROM agent_tasks t "
    "LEFT JOIN origin_registry o ON o.id = t.o_tag AND o.principal IS NOT NULL "
    "LEFT JOIN delegations d ON d.task_id = t.task_id "
    "WHERE t.agent_id = %s AND t.status = %s AND (o.id IS NOT NULL OR d.id IS NOT NULL)"
)


@dataclass(frozen=True)
class HeldWork:
    #: (principal, its stored JSON text) of each distinct person whose work is held.
    principals: tuple[tuple[dict[str, Any], str], ...] = ()
    #: The delegations whose work is held, each with its manager.
    delegations: tuple[Delegation, ...] = ()

    def names(self) -> str:
        """The people, for a refusal's detail: 'Linh Tran and Joe Lee'."""
        who = [p.get("name") or p.get("sender") or "an unknown sender" for p, _ in self.principals]
        return " and ".join(dict.fromkeys(str(w) for w in who))


NOTHING_HELD = HeldWork()


def held_work(agent: Agent | str) -> HeldWork:
    """What ``agent`` holds now: one indexed query (``agent_tasks`` by agent and status)."""
    agent_id = agent if isinstance(agent, str) else agent.agent_id
    with connection.cursor() as cursor:
        cursor.execute(_SQL, [agent_id, AgentTask.Status.IN_PROGRESS])
        rows = cursor.fetchall()
    if not rows:
        return NOTHING_HELD
    principals: dict[str, dict[str, Any]] = {}
    delegation_ids = []
    for principal, delegation_id in rows:
        if principal is not None:
            principals.setdefault(principal, json.loads(principal))
        if delegation_id is not None:
            delegation_ids.append(delegation_id)
    delegations = (
        tuple(
            Delegation.objects.select_related("manager")
            .filter(pk__in=delegation_ids)
            .order_by("created_at")
        )
        if delegation_ids
        else ()
    )
    return HeldWork(tuple((p, text) for text, p in principals.items()), delegations)


def reading_principals(agent: Agent, task: AgentTask | None) -> list[dict[str, Any]]:
    """The people a read is done for: the named task's person, else (no task, or a task no
    person's message started) every person whose work the agent holds. Sharing's MAC and ABAC
    layers must allow the read for each of them."""
    if task is not None and task.o_tag_id is not None:
        principal = (
            OriginRegistry.objects.filter(pk=task.o_tag_id)
            .values_list("principal", flat=True)
            .first()
        )
        if principal is not None:
            return [principal]
    return [principal for principal, _ in held_work(agent).principals]
