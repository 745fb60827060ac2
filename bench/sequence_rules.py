"""Benchmark: sequence rules (docs/access.md) over a long history.

    .venv/bin/python bench/sequence_rules.py [--calls 1000000] [--iterations 2000]

In a database of its own (``rabs_bench_sequences``, migrated at start and dropped at the end).
``--calls`` recorded calls (default 1,000,000) by 20 agents over 30 days, in chains of 10 calls
(100,000 O-Tags), tools of every kind (one in ten clinical, one in ten an external channel, one
in ten a delete, one in twenty a bank-detail change). Then, for a call arriving now, the three
example rules' history counts (``brainframe.selectors.history_count``: indexed, stopping at
``at_least``), each timed ``--iterations`` times on random chains and agents:

- ``external-after-health``: did this chain read a clinical record (scope chain);
- ``mass-delete``: 20 deletes by this agent in the last 10 minutes (scope agent, a window);
- ``payment-after-bank-change``: a bank-detail change earlier in this chain (scope chain);

and the whole V-Pol stage with the three rules (``evaluate_vpol`` on a fresh context, the counts
included). Prints p50/p99 in ms; the target is p99 ≤ 2 ms.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")
os.environ.setdefault("RABS_INDEX_ON_COMMIT", "false")
BENCH_DB = "rabs_bench_sequences"
AGENTS = 20
CHAIN = 10

TOOLS: dict[str, dict[str, Any]] = {
    "bench.health.read": {"data_class": "clinical"},
    "bench.sms.send": {"external_channel": True},
    "bench.record.delete": {},
    "bench.bank_details.update": {},
    "bench.payment.make": {},
    "bench.roster.read": {},
}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _history(calls: int) -> None:
    """``calls`` recorded calls in one INSERT … SELECT (every column of tool_calls given)."""
    from django.db import connection

    from brainframe.models import Agent, ToolCall
    from tests import factories as f

    for n in range(AGENTS):
        Agent.objects.get_or_create(
            agent_id=f"bench-{n}", defaults={"name": f"Bench {n}", "type": "type_3_external"}
        )
    for tool_id, extra in TOOLS.items():
        f.ToolFactory(tool_id=tool_id, agent_access=["*"], **extra)
    chains = calls // CHAIN
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO origin_registry (id, origin_type, source_ref, timestamp, metadata, "
            "bucket) SELECT md5('chain' || g)::uuid, 'email', 'bench:' || g, now(), '{}', '' "
            "FROM generate_series(1, %s) g",
            [chains],
        )
        columns, fragments, params = [], [], []
        computed = {
            "id": "md5('call' || g)::uuid",
            "agent_id": f"'bench-' || (g %% {AGENTS})",
            "requested_tool_id": "(ARRAY['bench.health.read','bench.sms.send',"
            "'bench.record.delete','bench.bank_details.update','bench.payment.make',"
            "'bench.roster.read','bench.roster.read','bench.roster.read','bench.roster.read',"
            "'bench.roster.read'])[1 + g %% 10]",
            "o_tag": f"md5('chain' || (1 + (g - 1) / {CHAIN}))::uuid",
            "decision": "'executed'",
            "outcome": "'succeeded'",
            "seq": "g",
            "prev_hash": "repeat('0', 64)",
            "row_hash": "md5(g::text) || md5(g::text)",
            "timestamp": f"now() - (({calls} - g) * interval '2.592 seconds')",
        }
        computed["tool_id"] = computed["requested_tool_id"]
        for field in ToolCall._meta.concrete_fields:
            columns.append(field.column)
            if field.column in computed:
                fragments.append(computed[field.column])
            elif field.null:
                fragments.append("NULL")
            elif field.get_internal_type() == "JSONField":
                fragments.append("%s::jsonb")
                params.append(json.dumps(field.get_default()))
            else:
                fragments.append("%s")
                params.append(field.get_default())
        cursor.execute(
            f"INSERT INTO tool_calls ({', '.join(columns)}) SELECT {', '.join(fragments)} "
            "FROM generate_series(1, %s) g",
            [*params, calls],
        )
        cursor.execute("ANALYZE tool_calls")
        cursor.execute("ANALYZE origin_registry")


SPECS: dict[str, dict[str, Any]] = {
    "external-after-health": {"scope": "chain", "data_class": "clinical"},
    "mass-delete": {"scope": "agent", "tool": "*.delete", "within_minutes": 10, "at_least": 20},
    "payment-after-bank-change": {"scope": "chain", "tool": "bench.bank_details.update"},
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--iterations", type=int, default=2000)
    args = parser.parse_args()

    import django

    django.setup()
    from django.utils import timezone

    from bench.common.db import throwaway_database
    from brainframe.models import Agent, ValidationPolicy
    from brainframe.selectors import history_count
    from broker.pipeline.context import CallContext, CallRequest, ChainTags
    from broker.pipeline.stages import evaluate_vpol
    from broker.registry import registry_snapshot

    with throwaway_database(BENCH_DB):
        started = time.perf_counter()
        _history(args.calls)
        print(f"{args.calls:,} recorded calls in {time.perf_counter() - started:.0f} s")
        chains = args.calls // CHAIN
        rng = random.Random(7)
        now = timezone.now()
        for name, spec in SPECS.items():
            times = []
            for _ in range(args.iterations):
                o_tag = uuid.UUID(hex=_md5(f"chain{rng.randint(1, chains)}"))
                agent = f"bench-{rng.randrange(AGENTS)}"
                t = time.perf_counter_ns()
                history_count(spec, o_tag=o_tag, agent_id=agent, before=now)
                times.append((time.perf_counter_ns() - t) / 1e6)
            print(
                f"{name:<27} p50 {statistics.median(times):.3f} ms, p99 {_pct(times, 0.99):.3f} ms"
            )

        rules = [
            {"id": name, "when": {"all": [{"history": spec}]}, "action": "review"}
            for name, spec in SPECS.items()
        ]
        policy = ValidationPolicy.objects.create(name="bench_sequences", rules=rules)
        tool = registry_snapshot().tool("bench.sms.send")
        agents = {a.agent_id: a for a in Agent.objects.filter(agent_id__startswith="bench-")}
        request = CallRequest(tool_id="bench.sms.send", arguments={"q": "x"}, reason="bench")
        times = []
        for _ in range(args.iterations):
            o_tag = uuid.UUID(hex=_md5(f"chain{rng.randint(1, chains)}"))
            ctx = CallContext(
                call_id=uuid.uuid4(),
                agent=agents[f"bench-{rng.randrange(AGENTS)}"],
                request=request,
                tool=tool,
                vpol=policy,
                tags=ChainTags(o_tag_id=o_tag),
            )
            t = time.perf_counter_ns()
            evaluate_vpol(ctx)
            times.append((time.perf_counter_ns() - t) / 1e6)
        print(
            f"{'V-Pol stage, 3 rules':<27} p50 {statistics.median(times):.3f} ms, "
            f"p99 {_pct(times, 0.99):.3f} ms"
        )
    return 0


def _md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


if __name__ == "__main__":
    raise SystemExit(main())
