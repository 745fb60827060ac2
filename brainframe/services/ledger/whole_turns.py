"""A whole turn recorded at once (docs/ledgers.md): for an agent that writes a turn once it is
over — its query and notes, the tool calls it made, its answer — sealed as it is written, in a
read and one statement (``brainframe_turn_head``, ``brainframe_record_turn``: migration 0031)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.db import connection
from django.utils import timezone

from brainframe.events import event_log_rows, projectors_run, publish_after_commit
from brainframe.models import Agent, AgentTask, OriginRegistry, Thread, Turn
from brainframe.services.ledger.ledgers import GENESIS, TURN_FIELDS, LedgerRefusal, turn_hash
from brainframe.services.ledger.turns import (
    MessageSpec,
    _check_calls,
    _message_rows,
    _turn_params,
    turn_ended_event,
)


def turn_record(
    *,
    thread: Thread,
    agent: Agent,
    query: list[MessageSpec],
    answer: str,
    tool_calls: list[uuid.UUID],
    origin: OriginRegistry | None = None,
    task: AgentTask | None = None,
    channel_context: dict[str, Any] | None = None,
) -> Turn:
    """A whole turn at once (its query and notes, the tool calls it made, the answer), sealed as
    it is written: for an agent that records a turn once it is over.

    Two statements and no transaction of its own: a read (the thread's head, whether a turn is
    open, which of the calls are the agent's), then one statement that moves the thread's head
    only if it is still where the read found it and writes the turn, its messages and its
    ``conversation:turn_ended`` event with it — all or nothing, as any single statement. Another
    turn written in between: read again and retry."""
    calls = list(dict.fromkeys(tool_calls))
    said = list(query)
    if answer:
        said.append(MessageSpec("answer", answer, author=f"agent:{agent.agent_id}"))
    for _attempt in range(5):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT * FROM brainframe_turn_head(%s, %s, %s::uuid[])",
                [thread.pk, agent.pk, [str(c) for c in calls]],
            )
            found = cursor.fetchone()
        if found is None:
            raise LedgerRefusal(404, "unknown_thread", "no such thread of yours", field="thread")
        count, head_id, head_hash, busy, mine = found
        if busy:
            raise LedgerRefusal(
                409, "turn_in_progress", "the thread has a turn in progress", field="thread"
            )
        _check_calls(calls, mine)
        now = timezone.now()
        turn = Turn(
            id=uuid.uuid4(),
            thread_id=thread.pk,
            seq=count + 1,
            parent_id=head_id,
            parent_hash=head_hash or GENESIS,
            agent=agent,
            origin=origin,
            task=task,
            channel_context=channel_context or {},
            started_at=now,
            completed_at=now,
            status=Turn.Status.COMPLETED.value,
            answer=answer,
            tool_calls=calls,
        )
        turn._state.adding, turn._state.db = False, "default"
        messages = _message_rows(turn.pk, 1, said)
        row = {f: getattr(turn, f) for f in TURN_FIELDS if f != "row_hash"}
        turn.row_hash = turn_hash(row, [m["content_hash"] for m in messages])
        events = [turn_ended_event(turn)]
        rows = event_log_rows(events)
        # One statement, atomic on its own (migration 0031): the head moves only if it is still
        # where the read found it and no turn is open; then the turn, its messages, its event.
        document = {
            **_turn_params(turn, messages),
            "channel_context": turn.channel_context,
            "messages": messages,
            "expected": count,
            "events": rows,
        }
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT brainframe_record_turn(%s::jsonb)", [json.dumps(document, default=str)]
            )
            written = bool(cursor.fetchone()[0])
        if written:
            projectors_run(rows)
            publish_after_commit(*events)
            return turn
    raise LedgerRefusal(409, "thread_busy", "the thread kept changing; try again", field="thread")
