"""The two ledgers (seed 003): the events ledger of what arrived from outside, and the agents
ledger of threads, turns and messages.

Events ledger: one stream, append-only, hash-chained (``row_hash = H(prev_hash, seq, content)``),
written under an advisory lock so the chain has one order; idempotent on (adapter, external id).

Agents ledger: a turn is opened with its query, receives messages while the agent works (the
agent's notes, steering messages from the person), and is sealed when it completes, is
interrupted, or is written as a compaction. Its hash covers its parent's hash, its own fields,
its messages' hashes and its tool calls, so changing any earlier message breaks every later hash
(``ledgers_verify``). A sealed turn and every message are refused UPDATE and DELETE by database
triggers. The queue modes, channel formatting and delegation live in
``brainframe/services/conversations.py``.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from brainframe.models import (
    Agent,
    AgentTask,
    Channel,
    ChannelIdentity,
    LedgerEvent,
    Message,
    OriginRegistry,
    Person,
    Session,
    Thread,
    TimerTicks,
    ToolCall,
    Turn,
)

GENESIS = "0" * 64


class LedgerRefusal(Exception):
    """A ledger write that cannot be made: HTTP status, machine-readable code, the field."""

    def __init__(self, status: int, code: str, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.field = status, code, detail, field


def _sha(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _instant(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat() if value is not None else None


# --- people -------------------------------------------------------------------------------------

_PHONE_JUNK = re.compile(r"[\s().\-]")


def normalise_address(channel: str, address: str) -> str:
    """One spelling per identity: phone numbers as +<digits> (an Australian 0… number as +61…),
    e-mail addresses lower-cased, chat handles lower-cased without a leading @."""
    value = address.strip()
    if channel == Channel.SMS:
        value = _PHONE_JUNK.sub("", value)
        if value.startswith("00"):
            value = "+" + value[2:]
        elif value.startswith("0"):
            value = "+61" + value[1:]
        elif not value.startswith("+"):
            value = "+" + value
        return value
    if channel == Channel.EMAIL:
        match = re.search(r"<([^>]+)>", value)  # "Name <a@b>"
        return (match.group(1) if match else value).strip().lower()
    return value.lower().lstrip("@")


def person_resolve(channel: str, address: str) -> Person | None:
    """The person behind an address on a channel, or None (unknown sender)."""
    identity = (
        ChannelIdentity.objects.select_related("person")
        .filter(channel=channel, address=normalise_address(channel, address), person__active=True)
        .first()
    )
    return identity.person if identity is not None else None


# --- events ledger ------------------------------------------------------------------------------


def _event_content(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "kind": row["kind"],
        "channel": row["channel"],
        "adapter": row["adapter"],
        "external_id": row["external_id"],
        "sender": row["sender"],
        "person": str(row["person_id"]) if row["person_id"] else None,
        "is_group": row["is_group"],
        "text": row["text"],
        "payload": row["payload"],
        "origin": str(row["origin_id"]) if row["origin_id"] else None,
        "received_at": _instant(row["received_at"]),
    }


def ledger_event_hash(prev_hash: str, seq: int, content: dict[str, Any]) -> str:
    return _sha([prev_hash, seq, content])


_EVENT_FIELDS = (
    "id",
    "seq",
    "kind",
    "channel",
    "adapter",
    "external_id",
    "sender",
    "person_id",
    "is_group",
    "text",
    "payload",
    "origin_id",
    "received_at",
    "prev_hash",
    "row_hash",
)


def ledger_event_append(
    *,
    kind: str,
    channel: str,
    adapter: str,
    external_id: str,
    sender: str = "",
    person: Person | None = None,
    is_group: bool = False,
    text: str = "",
    payload: dict[str, Any] | None = None,
    origin: OriginRegistry | None = None,
) -> tuple[LedgerEvent, bool]:
    """Append one external event (or return the one already kept for this adapter and id).
    Must run inside the caller's transaction, so the event and what it starts commit together."""
    assert connection.in_atomic_block, "ledger_event_append runs inside a transaction"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended('events_ledger', 0))")
    existing = LedgerEvent.objects.filter(adapter=adapter, external_id=external_id).first()
    if existing is not None:
        return existing, False
    last = LedgerEvent.objects.order_by("-seq").values_list("seq", "row_hash").first()
    seq, prev_hash = (last[0] + 1, last[1]) if last else (1, GENESIS)
    row: dict[str, Any] = {
        "id": uuid.uuid4(),
        "kind": kind,
        "channel": channel,
        "adapter": adapter,
        "external_id": external_id,
        "sender": sender,
        "person_id": person.pk if person else None,
        "is_group": is_group,
        "text": text,
        "payload": payload or {},
        "origin_id": origin.pk if origin else None,
        "received_at": timezone.now(),
    }
    # JSON as PostgreSQL gives it back (key order of jsonb is its own; the hash sorts keys).
    row["payload"] = json.loads(json.dumps(row["payload"], default=str))
    event = LedgerEvent.objects.create(
        seq=seq,
        prev_hash=prev_hash,
        row_hash=ledger_event_hash(prev_hash, seq, _event_content(row)),
        **row,
    )
    return event, True


def events_ledger_verify() -> list[str]:
    """The events ledger, row by row: no gap, each row names the previous hash, each hash
    matches its content."""
    problems: list[str] = []
    seq, last = 0, GENESIS
    for row in LedgerEvent.objects.order_by("seq").values(*_EVENT_FIELDS).iterator(5000):
        where = f"events ledger #{row['seq']} (id {row['id']})"
        if row["seq"] != seq + 1:
            problems.append(f"{where}: sequence jumps from {seq}")
        elif row["prev_hash"] != last:
            problems.append(f"{where}: chain broken (previous hash does not match)")
        elif row["row_hash"] != ledger_event_hash(
            row["prev_hash"], row["seq"], _event_content(row)
        ):
            problems.append(f"{where}: row hash does not match its content")
        seq, last = row["seq"], row["row_hash"]
    return problems


def timer_tick(now: datetime | None = None) -> TimerTicks:
    """Count one minute-timer tick in its hour's aggregate row."""
    now = now or timezone.now()
    hour = now.replace(minute=0, second=0, microsecond=0)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO events_ledger_timer_ticks (hour, ticks, first_at, last_at) "
            "VALUES (%s, 1, %s, %s) ON CONFLICT (hour) DO UPDATE SET "
            "ticks = events_ledger_timer_ticks.ticks + 1, last_at = EXCLUDED.last_at",
            [hour, now, now],
        )
    return TimerTicks.objects.get(pk=hour)


# --- agents ledger: hashes ----------------------------------------------------------------------


def message_hash(row: dict[str, Any]) -> str:
    return _sha(
        [
            str(row["turn_id"]),
            row["seq"],
            row["role"],
            str(row["person_id"]) if row["person_id"] else None,
            row["author"],
            row["content"],
            str(row["event_id"]) if row["event_id"] else None,
            _instant(row["created_at"]),
        ]
    )


def turn_hash(row: dict[str, Any], message_hashes: list[str]) -> str:
    return _sha(
        [
            row["parent_hash"],
            str(row["id"]),
            str(row["thread_id"]),
            row["seq"],
            row["turn_type"],
            row["status"],
            row["agent_id"],
            str(row["origin_id"]) if row["origin_id"] else None,
            row["channel_context"],
            row["answer"],
            sorted(str(c) for c in row["tool_calls"]),
            row["summary"],
            str(row["summarised_through_id"]) if row["summarised_through_id"] else None,
            str(row["first_kept_id"]) if row["first_kept_id"] else None,
            _instant(row["completed_at"]),
            message_hashes,
        ]
    )


_TURN_FIELDS = (
    "id",
    "thread_id",
    "seq",
    "parent_hash",
    "turn_type",
    "status",
    "agent_id",
    "origin_id",
    "channel_context",
    "answer",
    "tool_calls",
    "summary",
    "summarised_through_id",
    "first_kept_id",
    "completed_at",
    "row_hash",
)
_MESSAGE_FIELDS = (
    "turn_id",
    "seq",
    "role",
    "person_id",
    "author",
    "content",
    "event_id",
    "created_at",
    "content_hash",
)


def _seal(turn: Turn, status: str) -> Turn:
    """Complete the turn's hash and write it with its final state (the trigger refuses any later
    change)."""
    turn.status = status
    turn.completed_at = timezone.now()
    row = {f: getattr(turn, f) for f in _TURN_FIELDS if f != "row_hash"}
    # jsonb round trip, as verification will read it
    row["channel_context"] = json.loads(json.dumps(turn.channel_context, default=str))
    hashes = list(
        Message.objects.filter(turn=turn).order_by("seq").values_list("content_hash", flat=True)
    )
    turn.row_hash = turn_hash(row, hashes)
    turn.save(
        update_fields=[
            "status",
            "completed_at",
            "row_hash",
            "answer",
            "tool_calls",
            "interrupted_by",
        ]
    )
    return turn


def thread_verify(thread_id: uuid.UUID) -> list[str]:
    """One thread's Merkle chain, recomputed from the messages up: the first turn whose stored
    hash differs is reported, and so is every sealed turn after it."""
    problems: list[str] = []
    messages: dict[Any, list[str]] = {}
    for m in (
        Message.objects.filter(turn__thread_id=thread_id)
        .order_by("turn_id", "seq")
        .values(*_MESSAGE_FIELDS)
        .iterator(5000)
    ):
        recomputed = message_hash(m)
        if recomputed != m["content_hash"]:
            problems.append(
                f"thread {thread_id}: message {m['seq']} of turn {m['turn_id']} does not match "
                "its hash"
            )
        messages.setdefault(m["turn_id"], []).append(recomputed)
    expected_parent, seq = GENESIS, 0
    for row in Turn.objects.filter(thread_id=thread_id).order_by("seq").values(*_TURN_FIELDS):
        where = f"thread {thread_id} turn {row['seq']} (id {row['id']})"
        if row["seq"] != seq + 1:
            problems.append(f"{where}: sequence jumps from {seq}")
        seq = row["seq"]
        if row["parent_hash"] != expected_parent:
            problems.append(f"{where}: chain broken (parent hash does not match)")
        if not row["row_hash"]:  # the open turn: nothing sealed yet
            continue
        recomputed = turn_hash({**row, "parent_hash": expected_parent}, messages.get(row["id"], []))
        if recomputed != row["row_hash"]:
            problems.append(f"{where}: hash does not match its messages and content")
        expected_parent = recomputed
    return problems


def ledgers_verify() -> list[str]:
    """Both ledgers: the events ledger's chain and every thread's Merkle chain."""
    problems = events_ledger_verify()
    for thread_id in Thread.objects.values_list("id", flat=True).order_by("created_at"):
        problems.extend(thread_verify(thread_id))
    return problems


# --- agents ledger: writing ---------------------------------------------------------------------


@dataclass(frozen=True)
class MessageSpec:
    role: str
    content: str
    author: str = ""
    person: Person | None = None
    event: LedgerEvent | None = None


def _message_write(turn: Turn, seq: int, spec: MessageSpec) -> Message:
    row: dict[str, Any] = {
        "turn_id": turn.pk,
        "seq": seq,
        "role": spec.role,
        "person_id": spec.person.pk if spec.person else None,
        "author": spec.author,
        "content": spec.content,
        "event_id": spec.event.pk if spec.event else None,
        "created_at": timezone.now(),
    }
    return Message.objects.create(content_hash=message_hash(row), **row)


def thread_create(*, agent: Agent, title: str = "", parent: Thread | None = None) -> Thread:
    return Thread.objects.create(agent=agent, title=title[:200], parent=parent)


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
    open (``turn_in_progress``)."""
    with transaction.atomic():
        thread = Thread.objects.select_for_update().get(pk=thread.pk)
        if Turn.objects.filter(thread=thread, status=Turn.Status.OPEN).exists():
            raise LedgerRefusal(
                409, "turn_in_progress", "the thread has a turn in progress", field="thread"
            )
        parent = thread.head
        turn = Turn.objects.create(
            thread=thread,
            seq=thread.turns_count + 1,
            parent=parent,
            parent_hash=parent.row_hash if parent is not None else GENESIS,
            agent=agent,
            session=session,
            origin=origin,
            task=task,
            channel_context=channel_context or {},
        )
        for seq, spec in enumerate(query, start=1):
            _message_write(turn, seq, spec)
        Thread.objects.filter(pk=thread.pk).update(head=turn, turns_count=F("turns_count") + 1)
    return turn


def _open_turn_for(turn_id: uuid.UUID, agent: Agent) -> Turn:
    turn = Turn.objects.select_for_update().filter(pk=turn_id, agent=agent).first()
    if turn is None:
        raise LedgerRefusal(404, "unknown_turn", "no such turn of yours", field="turn")
    if turn.status == Turn.Status.INTERRUPTED:
        raise LedgerRefusal(
            409,
            "turn_interrupted",
            "a newer message interrupted this turn; answer the turn that replaced it",
            field="turn",
        )
    if turn.status != Turn.Status.OPEN:
        raise LedgerRefusal(409, "turn_closed", "the turn is already complete", field="turn")
    return turn


def message_add(*, turn_id: uuid.UUID, agent: Agent, spec: MessageSpec) -> Message:
    """Add a message to an open turn (the agent's own notes, a steering message)."""
    with transaction.atomic():
        turn = _open_turn_for(turn_id, agent)
        return _message_append(turn, spec)


def _message_append(turn: Turn, spec: MessageSpec) -> Message:
    last = Message.objects.filter(turn=turn).order_by("-seq").values_list("seq", flat=True).first()
    return _message_write(turn, (last or 0) + 1, spec)


def _tool_calls_of(agent: Agent, call_ids: list[uuid.UUID]) -> list[uuid.UUID]:
    unique = list(dict.fromkeys(call_ids))
    found = set(ToolCall.objects.filter(pk__in=unique, agent=agent).values_list("id", flat=True))
    missing = [str(c) for c in unique if c not in found]
    if missing:
        raise LedgerRefusal(
            400,
            "unknown_tool_calls",
            f"not tool calls of yours: {', '.join(missing[:5])}",
            field="tool_calls",
        )
    return unique


def turn_complete(
    *, turn_id: uuid.UUID, agent: Agent, answer: str, tool_calls: list[uuid.UUID]
) -> Turn:
    """Seal an open turn with its answer and the tool calls it made (the agent's own calls)."""
    with transaction.atomic():
        turn = _open_turn_for(turn_id, agent)
        turn.tool_calls = _tool_calls_of(agent, tool_calls)
        turn.answer = answer
        if answer:
            _message_append(turn, MessageSpec("answer", answer, author=f"agent:{agent.agent_id}"))
        return _seal(turn, Turn.Status.COMPLETED)


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


def thread_context(thread: Thread) -> dict[str, Any]:
    """What the agent's model sees of a thread: the latest compaction's summary, then every turn
    from its first kept turn on (or the whole thread when it was never compacted)."""
    compaction = (
        Turn.objects.filter(thread=thread, turn_type=Turn.Type.COMPACTION).order_by("-seq").first()
    )
    turns = Turn.objects.filter(thread=thread, turn_type=Turn.Type.NORMAL).order_by("seq")
    if compaction is not None:
        start = compaction.first_kept.seq if compaction.first_kept else compaction.seq
        turns = turns.filter(seq__gte=start)
    turns = turns.prefetch_related("messages")
    return {
        "thread": str(thread.pk),
        "summary": compaction.summary if compaction else "",
        "compaction": str(compaction.pk) if compaction else None,
        "turns": [turn_as_dict(t) for t in turns],
    }


def turn_as_dict(turn: Turn, *, messages: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "turn_id": str(turn.pk),
        "thread": str(turn.thread_id),
        "seq": turn.seq,
        "turn_type": turn.turn_type,
        "status": turn.status,
        "agent": turn.agent_id,
        "session": str(turn.session_id) if turn.session_id else None,
        "o_tag": str(turn.origin_id) if turn.origin_id else None,
        "task_id": str(turn.task_id) if turn.task_id else None,
        "channel_context": turn.channel_context,
        "answer": turn.answer,
        "tool_calls": [str(c) for c in turn.tool_calls],
        "parent_hash": turn.parent_hash,
        "hash": turn.row_hash or None,
        "started_at": turn.started_at.isoformat() if turn.started_at else None,
        "completed_at": turn.completed_at.isoformat() if turn.completed_at else None,
    }
    if turn.turn_type == Turn.Type.COMPACTION:
        body["summary"] = turn.summary
        body["summarised_through"] = str(turn.summarised_through_id)
        body["first_kept"] = str(turn.first_kept_id) if turn.first_kept_id else None
    if turn.interrupted_by_id:
        body["interrupted_by"] = str(turn.interrupted_by_id)
    if messages:
        body["messages"] = [
            {
                "seq": m.seq,
                "role": m.role,
                "author": m.author,
                "person": str(m.person_id) if m.person_id else None,
                "content": m.content,
                "event": str(m.event_id) if m.event_id else None,
                "at": m.created_at.isoformat(),
            }
            for m in sorted(turn.messages.all(), key=lambda m: m.seq)
        ]
    return body
