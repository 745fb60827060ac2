"""Benchmark: hash-chained audit appends under concurrency, and ``verify_audit`` over N rows.

    .venv/bin/python bench/audit.py [--writers 8] [--seconds 10] [--verify-rows 1000000]

Runs in a database of its own (``rabs_bench_audit`` on the same server, migrated at start and
dropped at the end: audit rows can never be deleted, so they are not written into yours).

- **appends**: ``writers`` processes, each with its own connection, record decisions through the
  real write path (``broker.audit.record.record_decision``: origin, reason, edges and the chained
  tool-call row, the agent's chain locked for the next ``seq``), (a) all on one
  agent's chain, (b) one chain per writer. The call is prepared once and embedding-after-commit
  is off: what is timed is the audit write. Prints chained rows/s, and the CPU per row of the
  writers and of PostgreSQL (embedded server only; ``bench/common/cpu.py``) with the rate that many
  fully busy cores would allow at that cost. ``--bare-tables`` drops the audit tables' secondary
  indexes and foreign keys first (in the throwaway database), to show the floor of the write.
- **verify**: writes ``verify-rows`` correctly chained rows for one agent with binary COPY
  (hashes computed as the broker computes them), then times ``verify_chain`` over them.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import multiprocessing
import os
import resource
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")
BENCH_DB = "rabs_bench_audit"


def _appends(writers: int, seconds: float, *, one_chain: bool) -> tuple[float, dict[str, float]]:
    """Chained rows/s, and the CPU milliseconds per row of the writers and of PostgreSQL."""
    from django.db import connection, connections

    from bench.common.cpu import CpuMeter, per_request_ms
    from brainframe.models import Agent
    from broker.audit.record import record_decision
    from broker.pipeline.context import CallRequest, Outcome, Verdict
    from broker.services.calls import prepare

    agents = [
        Agent.objects.get_or_create(
            agent_id=f"bench-{'one' if one_chain else i}",
            defaults={"name": "bench", "type": Agent.Type.SANDBOXED},
        )[0]
        for i in range(1 if one_chain else writers)
    ]
    request = CallRequest(
        tool_id="roster.shift.read",
        arguments={"date_from": "2026-03-02", "date_to": "2026-03-02"},
        reason="benchmark",
    )
    verdict = Verdict(Outcome.DENY, "bench", "benchmark denial")
    # The call is prepared once per agent (policy lookups are not the audit's cost).
    templates = {a.agent_id: prepare(agent=a, request=request) for a in agents}
    # Writers are processes, as web and worker processes are: one Python process would
    # measure its own interpreter lock rather than the audit.
    connections.close_all()
    connection.close_pool()  # type: ignore[attr-defined]  # the PostgreSQL backend has it
    ready, go = multiprocessing.Barrier(writers + 1), multiprocessing.Event()
    results: multiprocessing.Queue[tuple[int, str]] = multiprocessing.Queue()

    def write(n: int) -> None:
        agent = agents[0 if one_chain else n]
        count, error = 0, ""
        try:
            ready.wait()
            go.wait()
            stop = time.monotonic() + seconds
            while time.monotonic() < stop:
                ctx = copy.copy(templates[agent.agent_id])
                ctx.call_id, ctx.findings = uuid.uuid4(), []
                ctx.tags = ctx.tags and ctx.tags.with_new_origin()
                record_decision(ctx, verdict)
                count += 1
        except BaseException as exc:
            error = repr(exc)
        finally:
            connections.close_all()
            results.put((count, error))

    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=write, args=(n,)) for n in range(writers)]
    for process in processes:
        process.start()
    ready.wait()
    meter = CpuMeter()
    before, writers_before = meter.sample(), _children_cpu()
    started = time.monotonic()
    go.set()
    outcomes = [results.get() for _ in processes]
    elapsed = time.monotonic() - started
    for process in processes:
        process.join()
    after, writers_after = meter.sample(), _children_cpu()
    errors = [error for _, error in outcomes if error]
    if errors:
        raise SystemExit(f"a writer failed: {errors[0]}")
    rows = sum(count for count, _ in outcomes)
    cpu = {"writers": (writers_after - writers_before) * 1000 / max(1, rows)}
    if "postgres" in before:
        cpu["postgres"] = per_request_ms(before, after, rows)["postgres"]
    return rows / elapsed, cpu


def _children_cpu() -> float:
    """CPU seconds of this process's exited (joined) children: the writers."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _verify(rows: int, workers: int) -> tuple[float, float]:
    from django.db import connection
    from psycopg.types.json import Jsonb

    from brainframe.models import Agent, OriginRegistry, ReasonLog, ToolCall
    from broker.audit.hashing import GENESIS_HASH, HASH_SCHEME, compute_row_hash
    from broker.audit.verify import verify_chain

    agent = Agent.objects.create(agent_id="bench-verify", name="bench", type="type_2_sandboxed")
    origin = OriginRegistry.objects.create(origin_type="manual", source_ref="bench")
    reason = ReasonLog.objects.create(
        o_tag=origin, chain_id=uuid.uuid4(), agent=agent, thought="benchmark"
    )
    fields = [f for f in ToolCall._meta.concrete_fields if f.attname != "alignment_rating"]
    columns = [f.column for f in fields]
    base = datetime(2026, 1, 1, tzinfo=UTC)
    template: dict[str, Any] = {
        "agent_id": agent.agent_id,
        "requested_tool_id": "roster.shift.read",
        "tool_id": "roster.shift.read",
        "task_id": None,
        "r_tag_id": reason.id,
        "o_tag_id": origin.id,
        "vpol_id": None,
        "input": {"date_from": "2026-03-02", "date_to": "2026-03-02"},
        "decision": "denied",
        "decision_code": "bench",
        "decision_detail": "benchmark denial",
        "decision_errors": [],
        "threat_assessment": {},
        "idempotency_key": "",
        "request_hash": "",
        "executed_arguments": None,
        "outbound_findings": [],
        "output": None,
        "outcome": "not_run",
        "error": "",
        "duration_ms": None,
        "executed_at": None,
        "alignment_reasons": [],
        "outcome_hash": "",
        "hash_scheme": HASH_SCHEME,
        "face": "rest",
    }
    json_columns = {
        "input", "decision_errors", "threat_assessment", "executed_arguments",
        "outbound_findings", "output", "alignment_reasons",
    }  # fmt: skip
    started = time.perf_counter()
    prev = GENESIS_HASH
    raw = connection.connection
    with (
        raw.cursor() as cursor,
        cursor.copy(f"COPY tool_calls ({', '.join(columns)}) FROM STDIN") as copy,
    ):
        for seq in range(1, rows + 1):
            values = dict(template)
            values.update(
                id=uuid.UUID(bytes=hashlib.md5(str(seq).encode()).digest()),
                seq=seq,
                prev_hash=prev,
                timestamp=base + timedelta(microseconds=seq),
            )
            values["row_hash"] = prev = compute_row_hash(values)
            copy.write_row(
                [
                    Jsonb(values[f.attname])
                    if f.attname in json_columns and values[f.attname] is not None
                    else values[f.attname]
                    for f in fields
                ]
            )
    written = time.perf_counter() - started
    started = time.perf_counter()
    problem = verify_chain(agent.agent_id, workers=workers)
    elapsed = time.perf_counter() - started
    if problem is not None:
        raise SystemExit(f"verify found a break in generated data: {problem}")
    return written, elapsed


AUDIT_TABLES = ("tool_calls", "reason_log", "reason_edges", "origin_registry")


def _strip_audit_tables() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT format('DROP INDEX %%s', indexrelid::regclass) FROM pg_index"
            " WHERE indrelid::regclass::text = ANY(%s) AND NOT indisprimary AND NOT indisunique"
            " UNION ALL"
            " SELECT format('ALTER TABLE %%s DROP CONSTRAINT %%I', conrelid::regclass, conname)"
            " FROM pg_constraint WHERE contype = 'f' AND conrelid::regclass::text = ANY(%s)",
            [list(AUDIT_TABLES), list(AUDIT_TABLES)],
        )
        statements = [row[0] for row in cursor.fetchall()]
        for statement in statements:
            cursor.execute(statement)
    return len(statements)


def main() -> int:
    import django

    django.setup()
    from django.conf import settings

    from bench.common.cpu import describe
    from bench.common.db import throwaway_database

    parser = argparse.ArgumentParser()
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--verify-rows", type=int, default=1_000_000)
    parser.add_argument(
        "--verify-workers", type=int, default=os.cpu_count() or 1, help="as verify_audit --workers"
    )
    parser.add_argument(
        "--bare-tables",
        action="store_true",
        help="first drop the audit tables' secondary indexes and foreign keys (this throwaway "
        "database only): the cost of the write itself, without what keeps the audit queryable",
    )
    args = parser.parse_args()

    # Measure the audit write, not the embedding queue behind it.
    settings.RABS_INDEX_ON_COMMIT = False
    started = time.perf_counter()
    with throwaway_database(BENCH_DB):
        print(f"bench database migrated and seeded in {time.perf_counter() - started:.1f} s")
        if args.bare_tables:
            print(f"dropped {_strip_audit_tables()} secondary indexes and foreign keys")
        for one_chain in (True, False):
            rate, cpu = _appends(args.writers, args.seconds, one_chain=one_chain)
            where = "one chain" if one_chain else f"{args.writers} chains"
            print(f"appends, {args.writers} writers, {where}: {rate:,.0f} chained rows/s")
            line = f"    CPU per row: {describe(cpu)}"
            if "postgres" in cpu:
                cores = os.cpu_count() or 1
                allowed = cores * 1000 / sum(cpu.values())
                line += f"; {cores} fully busy cores would allow {allowed:,.0f} rows/s"
            print(line)
        if args.verify_rows:
            written, elapsed = _verify(args.verify_rows, args.verify_workers)
            print(f"generated {args.verify_rows:,} chained rows in {written:.1f} s")
            print(
                f"verify_chain over {args.verify_rows:,} rows, {args.verify_workers} worker(s): "
                f"{elapsed:.1f} s "
                f"({args.verify_rows / elapsed:,.0f} rows/s)"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
