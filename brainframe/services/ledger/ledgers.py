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
``brainframe/services/ledger/conversations.py``; writing turns in
``brainframe/services/ledger/turns.py``.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from brainframe.models import (
    Channel,
    ChannelIdentity,
    LedgerEvent,
    Message,
    OriginRegistry,
    Person,
    Thread,
    TimerTicks,
    Turn,
)

GENESIS = "0" * 64


class LedgerRefusal(Exception):
    """A ledger write that cannot be made: HTTP status, machine-readable code, the field."""

    def __init__(self, status: int, code: str, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.field = status, code, detail, field


@contextmanager
def ledger_unit() -> Iterator[None]:
    """One transaction for a ledger write: its own, or part of the caller's without a savepoint
    (two round trips fewer). A refusal is raised before anything is written, so when the unit is
    part of the caller's transaction, that transaction goes on usable."""
    nested = connection.in_atomic_block
    try:
        with transaction.atomic(savepoint=False):
            yield
    except LedgerRefusal:
        if nested:
            transaction.set_rollback(False)
        raise


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


TURN_FIELDS = (
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
    row = {f: getattr(turn, f) for f in TURN_FIELDS if f != "row_hash"}
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
    for row in Turn.objects.filter(thread_id=thread_id).order_by("seq").values(*TURN_FIELDS):
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
