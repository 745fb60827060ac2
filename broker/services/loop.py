"""Yielding the turn (seed 004; docs/channels.md): ``loop.yield_turn`` ends the agent's turn and
sleeps until new traffic arrives for it (a message, a task, an approval decided, a hook's
message: ``loop_traffic``) or its time runs out. The yield is a turn boundary in the event log
(``loop:turn_yielded``); the traffic it wakes to resets the loop latch (``pipeline.latch``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from brainframe.events import TurnYielded, emit
from brainframe.services.work.loop import loop_traffic

from ..pipeline.latch import latch_reset

__all__ = ["loop_traffic", "yield_finished", "yield_started"]


def yield_started(agent_id: str) -> datetime:
    return datetime.now(UTC)


def yield_finished(agent_id: str, *, since: datetime, traffic: list[dict[str, Any]]) -> None:
    """The yield is over (traffic or time): a turn boundary; traffic resets the latch."""
    waited = int((datetime.now(UTC) - since).total_seconds() * 1000)
    kinds = ", ".join(sorted({t["kind"] for t in traffic}))
    if traffic:
        latch_reset(agent_id)
    emit(TurnYielded(agent_id=agent_id, woke=bool(traffic), waited_ms=waited, traffic=kinds))
