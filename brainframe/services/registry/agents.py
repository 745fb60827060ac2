"""Changes staff make to agents (the admin calls these); every open board shows them at once."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from brainframe.events import AgentChanged, AgentStatusChanged, emit
from brainframe.models import Agent


def agent_changed(*, agent: Agent) -> None:
    """Staff edited the agent (paused it, renamed it…): refresh its status card on every open
    board once the edit is committed."""
    _announce([agent.agent_id])


def agent_set_paused(*, agents: Iterable[Agent], paused: bool) -> int:
    """Pause agents (the broker refuses their requests at once: ``auth_agent_paused``) or let
    them work again (Idle until their next heartbeat). Returns how many changed."""
    changed = []
    with transaction.atomic():
        for agent in agents:
            if (agent.status == Agent.Status.PAUSED) == paused:
                continue
            previous = agent.status
            agent.status = Agent.Status.PAUSED if paused else Agent.Status.IDLE
            agent.save(update_fields=["status", "updated_at"])
            changed.append(agent.agent_id)
            emit(
                AgentStatusChanged(
                    agent_id=agent.agent_id, status=agent.status, previous=previous, by="staff"
                )
            )
    _announce(changed)
    return len(changed)


def _announce(agent_ids: list[str]) -> None:
    emit(*(AgentChanged(agent_id=agent_id) for agent_id in agent_ids))
