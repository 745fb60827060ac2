"""``db.replica.query``: Super Reggie's read-only questions to the read replica (seed 000 §8).

The callable behind the tool (``handler_config["callable"] = "rabs.replica_query"``, with the
tool's ``handler_config``) runs one
read-only statement on the streaming standby named by ``RABS_REPLICA_URL``, as the replica's
read-only role (which sees only the exposed views of the ``replica`` schema, the first on the
search path):

- ``{"sql": "SELECT …"}``, or a **named query** staff keep in the tool's
  ``handler_config["queries"]`` (``{"query": "tasks_by_status", "params": {…}}``; values travel
  only as bound parameters);
- the connection must be a standby (``pg_is_in_recovery()``), else nothing runs (fail closed):
  a write is refused by PostgreSQL itself, the role starts read-only, and the transaction is;
- a statement timeout (``handler_config["timeout_ms"]``, else ``RABS_REPLICA_TIMEOUT_MS``) and
  a row cap (``row_cap``, else ``RABS_REPLICA_ROW_CAP``; ``truncated`` says when it cut);
- every text in the answer passes the PII filter (``<PHONE_NUMBER>``…; ``redactions`` counts),
  but for the registry's own agent and tool ids;
- the output — the audit's, hash-chained — holds the statement, its parameters and its plan
  (``EXPLAIN (FORMAT JSON)``) beside the rows.

``replica_status`` is what the board shows: whether the standby answers, and how far behind the
primary it is (bytes of WAL not yet replayed; seconds since its last replayed transaction).
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import psycopg
from django.conf import settings
from django.db import connection

from brainframe.models import Agent, Tool
from brainframe.safety.pii.filter import pii_redact

from .base import HandlerFailure, HandlerTimeout
from .function import ToolFunction

PLAN_KEYS = (
    "Node Type",
    "Relation Name",
    "Schema",
    "Alias",
    "Join Type",
    "Strategy",
    "Filter",
    "Startup Cost",
    "Total Cost",
    "Plan Rows",
    "Plan Width",
)
MAX_PLAN_DEPTH = 6


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | memoryview):
        return "<binary>"
    return value


def _plan(node: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """A plan node with the keys a reader needs (the audit keeps it small)."""
    out = {k: node[k] for k in PLAN_KEYS if k in node}
    if depth < MAX_PLAN_DEPTH and node.get("Plans"):
        out["Plans"] = [_plan(child, depth + 1) for child in node["Plans"]]
    return out


def _statement(
    config: dict[str, Any], args: dict[str, Any]
) -> tuple[str, dict[str, Any] | None, str | None]:
    if "query" in args:
        queries = config.get("queries") or {}
        named = queries.get(args["query"])
        if not isinstance(named, dict) or not isinstance(named.get("sql"), str):
            known = ", ".join(sorted(queries)) or "none"
            raise HandlerFailure(f"unknown_query: no named query {args['query']!r} ({known})")
        given = args.get("params") or {}
        params = {name: given.get(name) for name in named.get("params", [])}
        missing = [name for name, value in params.items() if value is None]
        if missing:
            raise HandlerFailure(f"missing_params: {', '.join(missing)}")
        return named["sql"], params, args["query"]
    return str(args["sql"]), None, None


def _redacted(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """Every text through the PII filter (each distinct text once: answers repeat values),
    but for values that are exactly one of our own agents' or tools' ids (an agent named
    "henry" is not a person; the ids come from the registry, not from the query)."""
    seen: dict[str, tuple[str, int]] = {
        key: (key, 0)
        for key in [
            *Agent.objects.values_list("agent_id", flat=True),
            *Tool.objects.values_list("tool_id", flat=True),
        ]
    }
    count = 0
    out = []
    for row in rows:
        clean = {}
        for key, value in row.items():
            value = _plain(value)
            if isinstance(value, str):
                if value not in seen:
                    redacted, findings = pii_redact(value)
                    seen[value] = (redacted, len(findings))
                value, found = seen[value]
                count += found
            clean[key] = value
        out.append(clean)
    return out, count


def replica_query(
    args: dict[str, Any], *, call_id: uuid.UUID, config: dict[str, Any]
) -> dict[str, Any]:
    """The tool's callable (registered with its tool's ``handler_config``: named queries, row
    cap, timeout). A read runs before its audit row is written, so it reads nothing of it."""
    url = settings.RABS_REPLICA_URL
    if not url:
        raise HandlerFailure("no_replica: no read replica is configured (RABS_REPLICA_URL)")
    statement, params, named = _statement(config, args)
    cap = int(config.get("row_cap") or settings.RABS_REPLICA_ROW_CAP)
    if isinstance(args.get("max_rows"), int):
        cap = max(1, min(cap, args["max_rows"]))
    timeout_ms = int(config.get("timeout_ms") or settings.RABS_REPLICA_TIMEOUT_MS)
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.read_only = True
            with conn.cursor() as cursor:
                cursor.execute("SELECT pg_is_in_recovery()")
                standby = cursor.fetchone()
                if not standby or not standby[0]:
                    raise HandlerFailure(
                        "not_a_replica: RABS_REPLICA_URL is not a standby; nothing was run"
                    )
                cursor.execute(
                    "SELECT set_config('statement_timeout', %s, true), "
                    "set_config('search_path', 'replica', true)",
                    [str(timeout_ms)],
                )
                cursor.execute(statement, params)
                columns = [c.name for c in cursor.description or []]
                fetched = cursor.fetchmany(cap + 1) if cursor.description else []
                plan: Any = None
                try:
                    cursor.execute(f"EXPLAIN (FORMAT JSON) {statement}", params)
                    explained = cursor.fetchone()
                    if explained:
                        plan = _plan(explained[0][0]["Plan"])
                except psycopg.Error:
                    plan = None  # not a statement EXPLAIN takes (it ran: nothing to hide)
            conn.rollback()
    except psycopg.errors.QueryCanceled:
        raise HandlerTimeout(f"query exceeded {timeout_ms} ms") from None
    except psycopg.Error as exc:
        state = exc.sqlstate or "error"
        raise HandlerFailure(f"postgres {state}: {exc.diag.message_primary or exc}") from None
    rows, redactions = _redacted([dict(zip(columns, row, strict=True)) for row in fetched[:cap]])
    return {
        "query": statement,
        "named": named,
        "params": {k: _plain(v) for k, v in (params or {}).items()},
        "plan": plan,
        "columns": columns,
        "rows": rows,
        "row_count": len(rows),
        "truncated": len(fetched) > cap,
        "row_cap": cap,
        "redactions": redactions,
    }


def replica_status() -> dict[str, Any]:
    """Whether the replica answers and its lag: ``bytes_behind`` (WAL the primary has written
    that the standby has not replayed) and ``seconds_behind`` (0 when nothing is left to replay;
    else how old its last replayed transaction is)."""
    url = settings.RABS_REPLICA_URL
    if not url:
        return {"configured": False}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_current_wal_lsn()::text")
            primary_lsn = cursor.fetchone()[0]
        with psycopg.connect(url, connect_timeout=2, autocommit=True) as conn:
            row = conn.execute(
                "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text, "
                "pg_wal_lsn_diff(%s::pg_lsn, pg_last_wal_replay_lsn()), "
                "EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())",
                [primary_lsn],
            ).fetchone()
    except (psycopg.Error, OSError) as exc:
        return {"configured": True, "reachable": False, "error": str(exc).strip()[:200]}
    assert row is not None
    in_recovery, replay_lsn, behind, age = row
    behind_bytes = max(0, int(behind or 0))
    return {
        "configured": True,
        "reachable": True,
        "standby": bool(in_recovery),
        "replay_lsn": replay_lsn,
        "primary_lsn": primary_lsn,
        "bytes_behind": behind_bytes,
        "seconds_behind": round(float(age or 0.0), 1) if behind_bytes else 0.0,
    }


#: The callables by the name tools give in ``handler_config["callable"]``.
CALLABLES: dict[str, ToolFunction] = {"rabs.replica_query": replica_query}
