"""Benchmark: the event log in the decision path, and the hook runner behind it.

    .venv/bin/python bench/events.py [--calls 3000] [--events 20000]

In a database of its own (``rabs_bench_events``, migrated at start and dropped at the end: the
log and the audit can never be deleted).

- **decision path**: ``record_decision`` (the one statement that writes a decision's audit rows)
  for a recorded-then-executed call (no event is kept at its decision: its event comes with the
  outcome) and for a refused call (its ``governance:call_blocked`` is appended by the same
  statement), interleaved, one agent, one at a time. The difference of the two is what keeping
  the event costs a decision; ``append_events`` of one event is also timed on its own, in a
  transaction that holds the agent's audit lock, as the decision does.
- **replay**: ``replay-events`` task events (default 1,000,000) in the log, then
  ``replay_events --view kanban`` from all of them.
- **hooks**: ``events`` events appended (one agent, task events), one active deterministic
  hook listening to them whose condition holds for one in a hundred; ``hooks_run`` reads the
  log until it is through. Prints events per second read and evaluated.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")
os.environ.setdefault("RABS_INDEX_ON_COMMIT", "false")
BENCH_DB = "rabs_bench_events"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def decision_path(calls: int) -> None:
    from django.db import connection, transaction

    from brainframe.events import TaskChanged, append_events
    from brainframe.models import Agent
    from broker.audit.record import record_decision
    from broker.pipeline.context import CallRequest, Outcome, Verdict
    from broker.services.calls import prepare

    agent, _ = Agent.objects.get_or_create(
        agent_id="bench-events", defaults={"name": "bench", "type": Agent.Type.SANDBOXED}
    )
    request = CallRequest(
        tool_id="roster.shift.read",
        arguments={"date_from": "2026-03-02", "date_to": "2026-03-02"},
        reason="benchmark",
    )
    template = prepare(agent=agent, request=request)
    verdicts = {
        "no event (executed later)": Verdict(Outcome.EXECUTE, "auto", "benchmark"),
        "one event (refused)": Verdict(Outcome.DENY, "bench", "benchmark denial"),
    }
    times: dict[str, list[float]] = {label: [] for label in verdicts}
    for i in range(calls * 2 + 200):
        label = list(verdicts)[i % 2]
        ctx = copy.copy(template)
        ctx.call_id, ctx.findings = uuid.uuid4(), []
        ctx.tags = ctx.tags and ctx.tags.with_new_origin()
        started = time.perf_counter()
        record_decision(ctx, verdicts[label])
        if i >= 200:  # warm-up
            times[label].append((time.perf_counter() - started) * 1000)
    print(f"record_decision, {calls} each, interleaved (ms):")
    for label, values in times.items():
        print(f"  {label:28} p50 {statistics.median(values):6.3f}  p99 {_pct(values, 0.99):6.3f}")
    a, b = times.values()
    print(
        f"  {'event kept: difference':28} p50 {statistics.median(b) - statistics.median(a):6.3f}"
        f"  p99 {_pct(b, 0.99) - _pct(a, 0.99):6.3f}"
    )
    alone: list[float] = []
    for _ in range(calls):
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(7426, hashtext(%s))", [agent.agent_id])
            started = time.perf_counter()
            append_events(
                [TaskChanged(agent_id=agent.agent_id, task_id=str(uuid.uuid4()), status="todo")]
            )
            alone.append((time.perf_counter() - started) * 1000)
    print(
        f"  {'append_events, one, alone':28} p50 {statistics.median(alone):6.3f}"
        f"  p99 {_pct(alone, 0.99):6.3f}"
    )


def hooks(events: int) -> None:
    from brainframe.events import TaskChanged, append_events
    from brainframe.models import Agent, Hook, HookCursor
    from brainframe.services.eventlog.reading import event_log_streams
    from brainframe.services.hooks.lifecycle import hook_propose
    from brainframe.services.hooks.runner import hooks_run

    Hook.objects.all().delete()
    HookCursor.objects.all().delete()
    hooks_run(limit=100000)  # past what the set-up logged
    henry = Agent.objects.get(agent_id="henry")
    hook_propose(
        agent=henry,
        definition={
            "name": "bench",
            "kind": "deterministic",
            "events": ["task:changed"],
            "condition": {"field": "event.payload.status", "op": "eq", "value": "blocked"},
            "effects": [{"type": "message", "text": "a task is blocked"}],
            "max_fires_per_hour": 600,
        },
        proposed_by="bench",
    )
    batch = []
    for i in range(events):
        status = "blocked" if i % 100 == 0 else "todo"
        batch.append(TaskChanged(agent_id="henry", task_id=str(uuid.uuid4()), status=status))
        if len(batch) == 1000:
            append_events(batch)
            batch = []
    append_events(batch)
    started = time.perf_counter()
    totals = {"events": 0, "fired": 0}
    while True:
        counts = hooks_run(limit=2000)
        if not counts["events"]:
            break
        totals["events"] += counts["events"]
        totals["fired"] += counts["fired"]
    elapsed = time.perf_counter() - started
    print(
        f"hooks_run: {totals['events']} events read and evaluated, {totals['fired']} firings, "
        f"{elapsed:.2f} s ({totals['events'] / elapsed:,.0f} events/s); "
        f"{len(event_log_streams())} streams"
    )


def replay(events: int) -> None:
    """``events`` task events (100 per task) written straight into the log by one statement
    (chain hashes left as placeholders: replay does not read them), then the Kanban view
    rebuilt from all of them."""
    from django.db import connection

    from brainframe.models import KanbanCard
    from brainframe.services.eventlog.views import view_replay

    tasks = max(1, events // 100)
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO event_log
                (stream, seq, name, family, agent_id, subject, payload, at, prev_hash, row_hash)
            SELECT 'bench-' || (g %% 10), g, 'task:changed', 'task', 'bench-' || (g %% 10),
                   md5('task' || (g %% %(tasks)s))::uuid::text,
                   jsonb_build_object(
                       'agent_id', 'bench-' || (g %% 10),
                       'task_id', md5('task' || (g %% %(tasks)s))::uuid::text,
                       'status', (ARRAY['todo','in_progress','blocked','done'])[1 + g %% 4],
                       'owner', 'bench-' || (g %% 10), 'title', 'task ' || (g %% %(tasks)s),
                       'priority', g %% 100),
                   now() - make_interval(secs => (%(n)s - g) / 1000.0),
                   repeat('0', 64), repeat('0', 64)
              FROM generate_series(1, %(n)s) AS g
            """,
            {"n": events, "tasks": tasks},
        )
    print(
        f"replay: {events:,} task events for {tasks:,} tasks written in "
        f"{time.perf_counter() - started:.1f} s"
    )
    started = time.perf_counter()
    written = view_replay("kanban")
    elapsed = time.perf_counter() - started
    print(
        f"replay_events --view kanban: {events:,} events → {written:,} cards in {elapsed:.1f} s "
        f"({events / elapsed:,.0f} events/s); cards now {KanbanCard.objects.count():,}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--replay-events", type=int, default=1_000_000)
    args = parser.parse_args()
    import django

    django.setup()
    from bench.common.db import throwaway_database

    with throwaway_database(BENCH_DB):
        decision_path(args.calls)
        hooks(args.events)
        replay(args.replay_events)


if __name__ == "__main__":
    main()
