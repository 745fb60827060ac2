"""The agent's side of the agents ledger (docs/ledgers.md): each task's work is written to a turn
in the control plane — the turn an inbound message or a delegation opened (``payload.turn_id``),
else one the agent opens — completed with the answer and the tool calls made; messages a person
sends while the agent works (``steer``) are read from the turn and given to the model; a long
thread is compacted with a summary the agent's own model writes. The local SQLite store stays the
agent's cache; the ledger is the record. A ledger write that fails is logged, never fatal to the
task (the calls themselves are in the audit whatever happens)."""

from __future__ import annotations

import logging
from typing import Any

from agents_vm.client.sdk import BrokerClient, BrokerError

logger = logging.getLogger("agents_vm.client.turns")


class TurnInterrupted(Exception):
    """A newer message interrupted this task's turn (queue mode ``interrupt``)."""


class Turns:
    broker: BrokerClient

    # Set up by the loop.
    _steered: dict[str, set[int]]

    def ledger_turn(self, task: dict[str, Any], memory: Any, text: str) -> str | None:
        """The turn this task is recorded in: the one it came with, the one already started,
        or a new one."""
        task_id = task["task_id"]
        payload = task.get("payload") or {}
        known = memory.turn_get(task_id) or (
            payload.get("turn_id") if isinstance(payload, dict) else None
        )
        if known:
            memory.turn_set(task_id, known)
            return str(known)
        try:
            turn = self.broker.turn_start(text, task_id=task_id, title=task.get("title", ""))
        except (BrokerError, OSError) as exc:
            logger.warning("task %s: no ledger turn (%s)", task_id, exc)
            return None
        memory.turn_set(task_id, turn["turn_id"])
        return str(turn["turn_id"])

    def steering(self, turn_id: str | None) -> list[str]:
        """Messages the person sent into the turn since the model last saw them. Raises
        TurnInterrupted when a newer message ended the turn."""
        if not turn_id:
            return []
        try:
            turn = self.broker.turn(turn_id)
        except (BrokerError, OSError) as exc:
            logger.warning("turn %s unreadable: %s", turn_id, exc)
            return []
        if turn.get("status") == "interrupted":
            raise TurnInterrupted(turn_id)
        seen = self._steered.setdefault(turn_id, set())
        fresh = [
            m for m in turn.get("messages", []) if m["role"] == "steer" and m["seq"] not in seen
        ]
        seen.update(m["seq"] for m in fresh)
        return [f"{m['author'] or 'The person'} adds: {m['content']}" for m in fresh]

    def turn_done(self, turn_id: str | None, answer: str, call_ids: list[str]) -> dict[str, Any]:
        """Complete the turn with the answer and the calls made; the finished turn (or {})."""
        if not turn_id:
            return {}
        try:
            return self.broker.turn_complete(turn_id, answer, call_ids)
        except (BrokerError, OSError) as exc:
            logger.warning("turn %s not completed: %s", turn_id, exc)
            return {}

    def maybe_compact(
        self, turn: dict[str, Any], after: int, keep: int, summarise: Any
    ) -> dict[str, Any] | None:
        """When the thread's visible turns exceed ``after``, ask the model (``summarise``: the
        previous summary and the turns to fold → text) for a summary of all but the last
        ``keep``, and write it as a compaction turn."""
        thread = turn.get("thread")
        if not thread or after <= 0:
            return None
        try:
            context = self.broker.thread_context(thread)
            turns = context["turns"]
            if len(turns) <= after:
                return None
            keep = max(1, min(keep, len(turns) - 1))
            folded, kept = turns[:-keep], turns[-keep]
            summary = summarise(context.get("summary", ""), folded)
            return self.broker.compact(thread, summary, folded[-1]["turn_id"], kept["turn_id"])
        except (BrokerError, OSError, KeyError) as exc:
            logger.warning("thread %s not compacted: %s", thread, exc)
            return None


def transcript(turns: list[dict[str, Any]]) -> str:
    """Turns as plain lines for a summary prompt."""
    lines = []
    for turn in turns:
        for m in turn.get("messages", []):
            lines.append(f"[{m['role']}] {m.get('author') or ''}: {m['content']}")
    return "\n".join(lines)
