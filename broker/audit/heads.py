"""The heads of the hash chains as the tables hold them now, and the row at a given seq (chain
names and heads: ``chains``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection

from .chains import AUDIT, EVENTS, LEDGER, THREAD, Head, chain_split


@dataclass(frozen=True)
class Live:
    """What a table holds of a chain at a checkpointed seq: the hash there (None: no row), and
    the chain's last seq now (0: no rows at all)."""

    hash: str | None
    last: int


def _rows(sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        return list(cursor.fetchall())


def chain_heads() -> dict[str, Head]:
    """Every audit chain's, event-log stream's and the events ledger's head now: one probe of
    an index per chain (agents and streams are few), never a scan of a table."""
    heads: dict[str, Head] = {}
    for agent, seq, row_hash in _rows(
        """
        SELECT a.agent_id, t.seq, t.row_hash FROM agents a
        CROSS JOIN LATERAL (
            SELECT seq, row_hash FROM tool_calls
             WHERE agent_id = a.agent_id ORDER BY seq DESC LIMIT 1
        ) t
        """
    ):
        heads[AUDIT + agent] = Head(seq, row_hash)
    for stream, seq, row_hash in _rows(
        """
        WITH RECURSIVE s(stream) AS (
            SELECT min(stream) FROM event_log
            UNION ALL
            SELECT (SELECT min(e.stream) FROM event_log e WHERE e.stream > s.stream)
              FROM s WHERE s.stream IS NOT NULL
        )
        SELECT s.stream, e.seq, e.row_hash FROM s
        CROSS JOIN LATERAL (
            SELECT seq, row_hash FROM event_log
             WHERE stream = s.stream ORDER BY seq DESC LIMIT 1
        ) e
        WHERE s.stream IS NOT NULL
        """
    ):
        heads[EVENTS + stream] = Head(seq, row_hash)
    for seq, row_hash in _rows("SELECT seq, row_hash FROM events_ledger ORDER BY seq DESC LIMIT 1"):
        heads[LEDGER] = Head(seq, row_hash)
    return heads


def thread_heads_sealed_since(moment: datetime | None) -> dict[str, Head]:
    """The head (last sealed turn) of every thread with a turn sealed at or after ``moment``
    (every thread when None)."""
    where, params = ("", []) if moment is None else ("AND completed_at >= %s", [moment])
    rows = _rows(
        f"""
        SELECT DISTINCT ON (t.thread_id) t.thread_id, t.seq, t.row_hash FROM ledger_turns t
         WHERE t.row_hash <> '' AND t.thread_id IN (
             SELECT thread_id FROM ledger_turns WHERE row_hash <> '' {where}
         )
         ORDER BY t.thread_id, t.seq DESC
        """,
        params,
    )
    return {f"{THREAD}{thread}": Head(seq, row_hash) for thread, seq, row_hash in rows}


def live_at(wanted: dict[str, int]) -> dict[str, Live]:
    """For each chain named, the row the table holds at the given seq, and its last seq now:
    one statement per kind of chain."""
    found: dict[str, Live] = {}
    by_kind: dict[str, list[tuple[str, str, int]]] = {}
    for chain, seq in wanted.items():
        kind, key = chain_split(chain)
        by_kind.setdefault(kind, []).append((chain, key, seq))
    for kind, items in by_kind.items():
        keys, seqs = [key for _, key, _ in items], [seq for _, _, seq in items]
        if kind == LEDGER:
            rows = _rows(
                "SELECT %s::text, (SELECT row_hash FROM events_ledger WHERE seq = %s),"
                " (SELECT coalesce(max(seq), 0) FROM events_ledger)",
                [keys[0], seqs[0]],
            )
        else:
            table, column, cast = _TABLES[kind]
            rows = _rows(
                f"""
                SELECT c.key, t.row_hash,
                       (SELECT coalesce(max(seq), 0) FROM {table} WHERE {column} = c.key{cast})
                  FROM unnest(%s::text[], %s::bigint[]) AS c(key, seq)
                  LEFT JOIN {table} t ON t.{column} = c.key{cast} AND t.seq = c.seq
                """,
                [keys, seqs],
            )
        names = {key: chain for chain, key, _ in items}
        for key, row_hash, last in rows:
            found[names[str(key)]] = Live(row_hash or None, int(last))
    return found


#: Where each kind of chain lives: table, the column naming the chain, the key's cast.
_TABLES = {
    AUDIT: ("tool_calls", "agent_id", ""),
    EVENTS: ("event_log", "stream", ""),
    THREAD: ("ledger_turns", "thread_id", "::uuid"),
}
