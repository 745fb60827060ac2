"""Writing the agents ledger (docs/ledgers.md): threads, turns opened with their query, messages
added while the agent works, turns completed, interrupted or written as compactions (sealed with
their Merkle hash: ``brainframe.services.ledger.ledgers``), and what a thread shows the agent's
model."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from brainframe.events import (
    Event,
    TurnEnded,
    TurnStarted,
    event_log_rows,
    projectors_run,
    publish_after_commit,
)
from brainframe.events.conversations import TurnEvent
from brainframe.models import (
    Agent,
    AgentTask,
    LedgerEvent,
    Message,
    OriginRegistry,
    Person,
    Session,
    Thread,
    Turn,
)
from brainframe.services.ledger.ledgers import (
    GENESIS,
    TURN_FIELDS,
    LedgerRefusal,
    _seal,
    ledger_unit,
    message_hash,
    turn_hash,
)

# --- agents ledger: writing ---------------------------------------------------------------------


@dataclass(frozen=True)
class MessageSpec:
    role: str
    content: str
    author: str = ""
    person: Person | None = None
    event: LedgerEvent | None = None


def _message_write(turn: Turn, seq: int, spec: MessageSpec) -> Message:
    return Message.objects.create(**_message_rows(turn.pk, seq, [spec])[0])


def thread_create(*, agent: Agent, title: str = "", parent: Thread | None = None) -> Thread:
    return Thread.objects.create(agent=agent, title=title[:200], parent=parent)


# A write's messages (``_message_rows``, as JSON), inserted by one statement.
_MESSAGES_INSERT = """
    INSERT INTO ledger_messages (id, turn_id, seq, role, person_id, author, content, event_id,
        created_at, content_hash)
    SELECT r.id, r.turn_id, r.seq, r.role, r.person_id, r.author, r.content, r.event_id,
        r.created_at, r.content_hash
      FROM jsonb_to_recordset(%(messages)s::jsonb) AS r(id uuid, turn_id uuid, seq integer,
        role text, person_id uuid, author text, content text, event_id uuid,
        created_at timestamptz, content_hash text)
"""

_OPEN_READ = """
SELECT t.turns_count, t.head_id, h.row_hash,
       EXISTS (SELECT 1 FROM ledger_turns o WHERE o.thread_id = t.id AND o.status = 'open')
  FROM ledger_threads t LEFT JOIN ledger_turns h ON h.id = t.head_id
 WHERE t.id = %s AND t.agent_id = %s
   FOR UPDATE OF t
"""

# The turn, its messages and the thread's new head in one statement (the foreign keys are
# checked at commit).
_OPEN_WRITE = (
    """
WITH turn AS (
    INSERT INTO ledger_turns (id, thread_id, seq, parent_id, parent_hash, turn_type, status,
        agent_id, session_id, origin_id, task_id, channel_context, answer, tool_calls, summary,
        started_at, completed_at, row_hash)
    VALUES (%(id)s, %(thread_id)s, %(seq)s, %(parent_id)s, %(parent_hash)s, 'normal',
        %(status)s, %(agent_id)s, %(session_id)s, %(origin_id)s, %(task_id)s,
        %(channel_context)s::jsonb, %(answer)s, %(calls)s::uuid[], '', %(started_at)s,
        %(completed_at)s, %(row_hash)s)
), messages AS ("""
    + _MESSAGES_INSERT
    + """), head AS (
    UPDATE ledger_threads SET head_id = %(id)s, turns_count = turns_count + 1, updated_at = now()
     WHERE id = %(thread_id)s RETURNING id
)
"""
)


def _message_rows(
    turn_id: uuid.UUID, first_seq: int, specs: list[MessageSpec]
) -> list[dict[str, Any]]:
    rows = []
    for seq, spec in enumerate(specs, start=first_seq):
        row: dict[str, Any] = {
            "turn_id": turn_id,
            "seq": seq,
            "role": spec.role,
            "person_id": spec.person.pk if spec.person else None,
            "author": spec.author,
            "content": spec.content,
            "event_id": spec.event.pk if spec.event else None,
            "created_at": timezone.now(),
        }
        row["content_hash"] = message_hash(row)
        row["id"] = uuid.uuid4()
        rows.append(row)
    return rows


def _as_json(value: Any) -> str:
    return json.dumps(value, default=str)


def turn_open(
    *,
    thread: Thread,
    agent: Agent,
    query: list[MessageSpec],
    session: Session | None = None,
    origin: OriginRegistry | None = None,
    task: AgentTask | None = None,
    channel_context: dict[str, Any] | None = None,
) -> Turn:
    """Open the thread's next turn with its query. Refused while another turn of the thread is
    open (``turn_in_progress``). Two statements: the thread locked and read, then the turn, its
    messages, the thread's head and its ``conversation:turn_started`` event written together."""
    with ledger_unit(), connection.cursor() as cursor:
        cursor.execute(_OPEN_READ, [thread.pk, agent.pk])
        found = cursor.fetchone()
        if found is None:
            raise LedgerRefusal(404, "unknown_thread", "no such thread of yours", field="thread")
        count, head_id, head_hash, busy = found
        if busy:
            raise LedgerRefusal(
                409, "turn_in_progress", "the thread has a turn in progress", field="thread"
            )
        turn = Turn(
            id=uuid.uuid4(),
            thread_id=thread.pk,
            seq=count + 1,
            parent_id=head_id,
            parent_hash=head_hash or GENESIS,
            agent=agent,
            session=session,
            origin=origin,
            task=task,
            channel_context=channel_context or {},
            started_at=timezone.now(),
            status=Turn.Status.OPEN.value,
            tool_calls=[],
        )
        turn._state.adding, turn._state.db = False, "default"
        _write(
            cursor,
            _OPEN_WRITE,
            _turn_params(turn, _message_rows(turn.pk, 1, query)),
            [turn_started_event(turn)],
        )
    return turn


def _turn_params(turn: Turn, messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": turn.pk,
        "thread_id": turn.thread_id,
        "seq": turn.seq,
        "parent_id": turn.parent_id,
        "parent_hash": turn.parent_hash,
        "status": str(turn.status),
        "agent_id": turn.agent_id,
        "session_id": turn.session_id,
        "origin_id": turn.origin_id,
        "task_id": turn.task_id,
        "channel_context": _as_json(turn.channel_context),
        "answer": turn.answer,
        "calls": [str(c) for c in turn.tool_calls],
        "started_at": turn.started_at,
        "completed_at": turn.completed_at,
        "row_hash": turn.row_hash,
        "messages": _as_json(messages),
    }


def _open_turn_for(turn_id: uuid.UUID, agent: Agent) -> Turn:
    turn = Turn.objects.select_for_update().filter(pk=turn_id, agent=agent).first()
    if turn is None:
        raise LedgerRefusal(404, "unknown_turn", "no such turn of yours", field="turn")
    _check_open(turn.status)
    return turn


def _check_open(status: str) -> None:
    if status == Turn.Status.INTERRUPTED:
        raise LedgerRefusal(
            409,
            "turn_interrupted",
            "a newer message interrupted this turn; answer the turn that replaced it",
            field="turn",
        )
    if status != Turn.Status.OPEN:
        raise LedgerRefusal(409, "turn_closed", "the turn is already complete", field="turn")


def message_add(*, turn_id: uuid.UUID, agent: Agent, spec: MessageSpec) -> Message:
    """Add a message to an open turn (the agent's own notes, a steering message)."""
    with transaction.atomic():
        turn = _open_turn_for(turn_id, agent)
        return _message_append(turn, spec)


def _message_append(turn: Turn, spec: MessageSpec) -> Message:
    last = Message.objects.filter(turn=turn).order_by("-seq").values_list("seq", flat=True).first()
    return _message_write(turn, (last or 0) + 1, spec)


def _check_calls(calls: list[uuid.UUID], mine: list[uuid.UUID]) -> None:
    """Refuse a turn that names tool calls that are not the agent's own."""
    missing = [str(c) for c in calls if c not in set(mine)]
    if missing:
        raise LedgerRefusal(
            400,
            "unknown_tool_calls",
            f"not tool calls of yours: {', '.join(missing[:5])}",
            field="tool_calls",
        )


_COMPLETE_READ = """
SELECT tr.thread_id, tr.seq, tr.parent_hash, tr.turn_type, tr.status, tr.origin_id,
       tr.channel_context, tr.session_id, tr.task_id, tr.started_at,
       (SELECT coalesce(array_agg(m.content_hash ORDER BY m.seq), '{}')
          FROM ledger_messages m WHERE m.turn_id = tr.id),
       (SELECT coalesce(array_agg(c.id), '{}') FROM tool_calls c
         WHERE c.id = ANY(%(calls)s::uuid[]) AND c.agent_id = %(agent_id)s)
  FROM ledger_turns tr
 WHERE tr.id = %(id)s AND tr.agent_id = %(agent_id)s
   FOR UPDATE OF tr
"""

_COMPLETE_WRITE = (
    """
WITH messages AS ("""
    + _MESSAGES_INSERT
    + """), head AS (
    UPDATE ledger_turns SET status = 'completed', completed_at = %(completed_at)s,
           answer = %(answer)s, tool_calls = %(calls)s::uuid[], row_hash = %(row_hash)s
     WHERE id = %(id)s RETURNING id
)
"""
)


def _write(cursor: Any, ctes: str, params: dict[str, Any], events: list[Event]) -> None:
    """Run the write (CTEs ending in ``head``) and append its events in the same statement;
    the views follow in this transaction, the board hears of them after the commit."""
    rows = event_log_rows(events)
    cursor.execute(
        ctes + "SELECT brainframe_append_events(%(events)s::jsonb) FROM head",
        {**params, "events": json.dumps(rows, default=str)},
    )
    projectors_run(rows)
    publish_after_commit(*events)


_T = TypeVar("_T", bound=TurnEvent)


def _turn_event(cls: type[_T], turn: Turn) -> _T:
    return cls(
        turn_id=str(turn.pk),
        thread_id=str(turn.thread_id),
        agent_id=turn.agent_id,
        seq=turn.seq,
        status=turn.status,
        session_id=str(turn.session_id) if turn.session_id else None,
        o_tag=str(turn.origin_id) if turn.origin_id else None,
        tool_calls=len(turn.tool_calls),
    )


def turn_started_event(turn: Turn) -> TurnStarted:
    return _turn_event(TurnStarted, turn)


def turn_ended_event(turn: Turn) -> TurnEnded:
    return _turn_event(TurnEnded, turn)


def turn_complete(
    *, turn_id: uuid.UUID, agent: Agent, answer: str, tool_calls: list[uuid.UUID]
) -> Turn:
    """Seal an open turn with its answer and the tool calls it made (the agent's own calls).
    Two statements: the turn locked and read (with its messages' hashes and which of the calls
    are the agent's), then the answer, the sealed turn and its ``conversation:turn_ended`` event
    written together."""
    calls = list(dict.fromkeys(tool_calls))
    with ledger_unit(), connection.cursor() as cursor:
        params: dict[str, Any] = {
            "id": turn_id,
            "agent_id": agent.pk,
            "calls": [str(c) for c in calls],
        }
        cursor.execute(_COMPLETE_READ, params)
        found = cursor.fetchone()
        if found is None:
            raise LedgerRefusal(404, "unknown_turn", "no such turn of yours", field="turn")
        (thread_id, seq, parent_hash, turn_type, status, origin_id, context, session_id,
         task_id, started_at, hashes, mine) = found  # fmt: skip
        _check_open(status)
        _check_calls(calls, mine)
        turn = Turn(
            id=turn_id,
            thread_id=thread_id,
            seq=seq,
            parent_hash=parent_hash,
            turn_type=turn_type,
            status=Turn.Status.COMPLETED.value,
            agent=agent,
            origin_id=origin_id,
            # jsonb comes back as text on Django's connection (JSONField parses it)
            channel_context=json.loads(context) if isinstance(context, str) else context,
            session_id=session_id,
            task_id=task_id,
            started_at=started_at,
            answer=answer,
            tool_calls=calls,
            completed_at=timezone.now(),
        )
        turn._state.adding, turn._state.db = False, "default"
        added = (
            _message_rows(
                turn_id,
                len(hashes) + 1,
                [MessageSpec("answer", answer, author=f"agent:{agent.agent_id}")],
            )
            if answer
            else []
        )
        row = {f: getattr(turn, f) for f in TURN_FIELDS if f != "row_hash"}
        turn.row_hash = turn_hash(row, [*hashes, *(m["content_hash"] for m in added)])
        _write(
            cursor,
            _COMPLETE_WRITE,
            {
                "id": turn_id,
                "messages": _as_json(added),
                "completed_at": turn.completed_at,
                "answer": answer,
                "calls": [str(c) for c in calls],
                "row_hash": turn.row_hash,
            },
            [turn_ended_event(turn)],
        )
    return turn


def turn_interrupt(turn: Turn, *, by: Turn | None = None) -> Turn:
    """Seal an open turn as interrupted (the caller holds its row lock)."""
    turn.interrupted_by = by
    return _seal(turn, Turn.Status.INTERRUPTED)


def compaction_write(
    *,
    thread_id: uuid.UUID,
    agent: Agent,
    summary: str,
    summarised_through: uuid.UUID,
    first_kept: uuid.UUID | None,
) -> Turn:
    """A compaction turn (seed 003 COMPACTION): the summary of every turn up to
    ``summarised_through``, and the first turn kept whole after it. It points at the thread's
    head like any turn; later turns point at it; nothing is deleted."""
    with transaction.atomic():
        thread = Thread.objects.select_for_update().filter(pk=thread_id, agent=agent).first()
        if thread is None:
            raise LedgerRefusal(404, "unknown_thread", "no such thread of yours", field="thread")
        if Turn.objects.filter(thread=thread, status=Turn.Status.OPEN).exists():
            raise LedgerRefusal(
                409, "turn_in_progress", "compact between turns, not during one", field="thread"
            )
        through = Turn.objects.filter(pk=summarised_through, thread=thread).first()
        if through is None:
            raise LedgerRefusal(
                400,
                "unknown_turn",
                "summarised_through must be a turn of this thread",
                field="summarised_through",
            )
        kept = None
        if first_kept is not None:
            kept = Turn.objects.filter(pk=first_kept, thread=thread).first()
            if kept is None or kept.seq <= through.seq:
                raise LedgerRefusal(
                    400,
                    "invalid_first_kept",
                    "first_kept must be a turn of this thread after summarised_through",
                    field="first_kept",
                )
        parent = thread.head
        turn = Turn.objects.create(
            thread=thread,
            seq=thread.turns_count + 1,
            parent=parent,
            parent_hash=parent.row_hash if parent is not None else GENESIS,
            agent=agent,
            turn_type=Turn.Type.COMPACTION,
            summary=summary,
            summarised_through=through,
            first_kept=kept,
        )
        _seal(turn, Turn.Status.COMPLETED)
        Thread.objects.filter(pk=thread.pk).update(head=turn, turns_count=F("turns_count") + 1)
    return turn
