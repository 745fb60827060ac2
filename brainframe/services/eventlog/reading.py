"""Reading the event log: its verification, the board's feed, and what a reader has not seen.

Writing is ``brainframe.events.emit`` (and the decision's own statement): see
``brainframe/models/events.py`` for the chain.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection

from brainframe.events import event_content_hash, event_row_hash
from brainframe.models import EventLogEntry

GENESIS = "0" * 64


def event_log_verify(*, stream: str | None = None) -> list[str]:
    """Every stream's chain, row by row: the sequence has no gap, each row names the previous
    row's hash, and each row's hash matches its content. Returns the problems (none: intact)."""
    problems: list[str] = []
    rows = EventLogEntry.objects.order_by("stream", "seq")
    if stream is not None:
        rows = rows.filter(stream=stream)
    current, seq, last = None, 0, GENESIS
    for row in rows.values(
        "id",
        "stream",
        "seq",
        "name",
        "agent_id",
        "subject",
        "payload",
        "at",
        "prev_hash",
        "row_hash",
    ).iterator(chunk_size=5000):
        if row["stream"] != current:
            current, seq, last = row["stream"], 0, GENESIS
        where = f"event log {row['stream']} #{row['seq']} (id {row['id']}, {row['name']})"
        if row["seq"] != seq + 1:
            problems.append(f"{where}: sequence jumps from {seq}")
        elif row["prev_hash"] != last:
            problems.append(f"{where}: chain broken (previous hash does not match)")
        elif row["row_hash"] != event_row_hash(
            row["prev_hash"], row["seq"], event_content_hash(row)
        ):
            problems.append(f"{where}: row hash does not match its content")
        seq, last = row["seq"], row["row_hash"]
    return problems


def event_log_streams() -> list[str]:
    """Every stream that has events (the agents' and ``system``)."""
    with connection.cursor() as cursor:
        # A loose index scan over (stream, seq): one probe per stream, not a scan of the log.
        cursor.execute(
            """
            WITH RECURSIVE s(stream) AS (
                SELECT min(stream) FROM event_log
                UNION ALL
                SELECT (SELECT min(e.stream) FROM event_log e WHERE e.stream > s.stream)
                  FROM s WHERE s.stream IS NOT NULL
            )
            SELECT stream FROM s WHERE stream IS NOT NULL
            """
        )
        return [row[0] for row in cursor.fetchall()]


@dataclass(frozen=True)
class Unseen:
    """Events a reader has not had yet, in each stream's order, and the cursor after them."""

    entries: list[EventLogEntry]
    cursor: dict[str, int]


def event_log_after(
    cursor: dict[str, int], *, families: Iterable[str] = (), limit: int = 100
) -> Unseen:
    """The next events after ``cursor`` (stream → last seq had), at most ``limit``, oldest
    first. Nothing is skipped: within a stream, seq is committed in order (its append lock is
    held to commit), so a row after the cursor cannot appear later below it. ``families``
    filters what is returned, not what the cursor passes."""
    streams = event_log_streams()
    if not streams:
        return Unseen([], dict(cursor))
    after = [int(cursor.get(s, 0)) for s in streams]
    entries = list(
        EventLogEntry.objects.raw(
            """
            SELECT e.* FROM unnest(%s::text[], %s::bigint[]) AS c(stream, after)
            CROSS JOIN LATERAL (
                SELECT * FROM event_log l
                 WHERE l.stream = c.stream AND l.seq > c.after
                 ORDER BY l.seq LIMIT %s
            ) e
            ORDER BY e.at, e.id
            LIMIT %s
            """,
            [streams, after, limit, limit],
        )
    )
    moved = dict(cursor)
    # Only what is returned moves the cursor, stream by stream, in seq order.
    for entry in sorted(entries, key=lambda e: (e.stream, e.seq)):
        moved[entry.stream] = entry.seq
    wanted = set(families)
    if wanted:
        entries = [e for e in entries if e.family in wanted]
    return Unseen(entries, moved)  # oldest first, as the statement ordered them


def event_log_feed(
    *,
    family: str = "",
    agent_id: str = "",
    name: str = "",
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 100,
) -> list[EventLogEntry]:
    """The newest events for the board's feed, filtered by family, agent, event name and time
    (``since`` inclusive, ``until`` exclusive)."""
    rows = EventLogEntry.objects.all()
    if family:
        rows = rows.filter(family=family)
    if agent_id:
        rows = rows.filter(agent_id=agent_id)
    if name:
        rows = rows.filter(name=name)
    if since is not None:
        rows = rows.filter(at__gte=since)
    if until is not None:
        rows = rows.filter(at__lt=until)
    return list(rows.order_by("-at", "-id")[:limit])


def event_summary(name: str, payload: dict[str, Any]) -> str:
    """One line saying what an event was, for the feed and the admin."""
    p = payload
    family = name.partition(":")[0]
    if family == "executor" or name in ("governance:call_blocked", "governance:rule_violated"):
        text = f"{p.get('tool_id')} — {p.get('code') or p.get('outcome')}"
        return f"{text}: {p['detail']}" if p.get("detail") else text
    if family == "approval":
        return f"{p.get('tool_id')} {p.get('kind', '')} → {p.get('status')}" + (
            f" by {p['decided_by']}" if p.get("decided_by") else ""
        )
    if family in ("guardian", "security"):
        patterns = ", ".join(p.get("patterns") or ()) or "no pattern"
        return f"risk {p.get('risk')} {p.get('action')} ({patterns})"
    if name == "governance:policy_changed":
        by = p.get("by") or (f"council {p['proposal_id']}" if p.get("proposal_id") else "system")
        return f"{p.get('kind')} {p.get('policy_id')} {p.get('action')} by {by}"
    if name == "governance:level_changed":
        return f"{p.get('subject')}: level {p.get('from_level')} → {p.get('to_level')}"
    if family == "planner":
        step = f" step {p['step']}" if p.get("step") is not None else ""
        return f"{p.get('goal') or p.get('plan_id')}{step} {p.get('status', '')}".strip()
    if family == "task":
        return f"task {p.get('task_id')} → {p.get('status')}"
    shown = ", ".join(f"{k}={v}" for k, v in list(p.items())[:4] if v not in (None, "", ()))
    return shown[:200]
