"""Benchmark: signed agents over HTTP against the running stack (two daphne processes).

    .venv/bin/python bench/broker_load.py [--web 2] [--concurrency 32] [--seconds 15]
                                          [--rate 100] [--high-rate 300] [--open-seconds 20]

Starts ``python -m rabs.stack.devstack`` on a throwaway database (``rabs_load``) with ``--web``
daphne processes behind one port, the rate limit lifted and DEBUG off; 8 agents (credentials issued
here) call ``roster.shift.read`` (auto: the whole pipeline, the hash-chained audit write and the
handler) with RABS-HMAC signatures. The load comes from ``bench/common/http.py``: requests built and
signed before each phase, written on kept-alive connections (a general-purpose client cost as
much CPU as half a decision, on the same two cores).

(a) Closed loop at saturation: ``--concurrency`` clients for ``--seconds``; decisions/s and
    errors; then the bare endpoint of the same stack (``/bench/insert/``: one ORM INSERT) the
    same way, and the ratio. For both, the CPU each part of the stack spent per request (web,
    worker, PostgreSQL, Redis, the load generator: ``bench/common/cpu.py``), which drifts far less
    between runs than the rates do.
(b) Open loop: requests offered at ``--rate``/s for ``--open-seconds`` (each sent at its
    scheduled time whatever the others do, on an idle connection or a new one); latency from the
    scheduled time to the answer, p50/p99; then the same at ``--high-rate``/s (the headroom
    the stack keeps when agents are busy); then the bare endpoint at ``--rate``/s: at a low
    rate the cores sit idle between requests, and each hop of a request (client, event loop,
    worker thread, Redis, PostgreSQL and back) waits for one to wake, which this machine's
    bare request shows as a floor under any decision's latency.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")
DB = "rabs_load"
AGENTS = [f"load-{n}" for n in range(8)]


def _closed(url: str, secrets_by_agent: dict[str, str], *, bare: bool, clients: int,
            seconds: float) -> dict[str, Any]:  # fmt: skip
    from bench.common.cpu import CpuMeter, per_request_ms
    from bench.common.http import bare_requests, closed_loop, signed_calls

    budget = int(seconds * (5000 if bare else 1500))  # more than this stack answers in time
    requests = list(
        bare_requests(url, budget) if bare else signed_calls(url, secrets_by_agent, budget)
    )
    meter = CpuMeter()
    commands = _redis_commands()
    before = meter.sample()
    result = asyncio.run(closed_loop(url, requests, clients=clients, seconds=seconds))
    answered = sum(result["codes"].values())
    result["cpu_ms"] = per_request_ms(before, meter.sample(), answered)
    # Commands Redis ran per request (replay guard, rate count, board events, Celery…): a count,
    # not a time, so it does not drift with the machine's speed.
    result["redis_commands"] = (_redis_commands() - commands) / max(1, answered)
    return result


def _redis_commands() -> int:
    import redis
    from django.conf import settings

    stats: dict[str, Any] = redis.Redis.from_url(settings.REDIS.cache).info("stats")  # type: ignore[assignment]
    return int(stats["total_commands_processed"])


def _open(
    url: str, secrets_by_agent: dict[str, str], *, rate: float, seconds: float, bare: bool = False
) -> dict[str, Any]:
    from bench.common.http import bare_requests, open_loop, signed_calls
    from bench.common.stack import percentile

    count = int(rate * seconds)
    requests = list(
        bare_requests(url, count) if bare else signed_calls(url, secrets_by_agent, count)
    )
    results = asyncio.run(open_loop(url, requests, rate=rate))
    latencies = [answer.ms for answer in results if answer.status]
    codes: dict[int, int] = {}
    for answer in results:
        if answer.status:
            codes[answer.status] = codes.get(answer.status, 0) + 1
    return {
        "offered": len(results),
        "p50_ms": statistics.median(latencies),
        "p99_ms": percentile(latencies, 99),
        "codes": codes,
        "errors": len(results) - len(latencies),
    }


def main() -> int:
    import django

    django.setup()

    from bench.common.cpu import describe
    from bench.common.db import throwaway_database
    from bench.common.stack import running_stack

    parser = argparse.ArgumentParser()
    parser.add_argument("--web", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--rate", type=float, default=100)
    parser.add_argument("--high-rate", type=float, default=300)
    parser.add_argument("--open-seconds", type=float, default=20)
    args = parser.parse_args()
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)

    with throwaway_database(DB), running_stack(AGENTS, web=args.web, name="broker_load") as stack:
        url, secrets_by_agent = stack.url, stack.secrets
        print(f"stack up: {args.web} daphne process(es) on one port")
        # Warm every process's connections and caches.
        _closed(url, secrets_by_agent, bare=False, clients=8, seconds=3)
        decisions = _closed(
            url, secrets_by_agent, bare=False, clients=args.concurrency, seconds=args.seconds
        )
        bare = _closed(
            url, secrets_by_agent, bare=True, clients=args.concurrency, seconds=args.seconds
        )
        opened = _open(url, secrets_by_agent, rate=args.rate, seconds=args.open_seconds)
        high = _open(url, secrets_by_agent, rate=args.high_rate, seconds=args.open_seconds)
        floor = _open(url, secrets_by_agent, rate=args.rate, seconds=args.open_seconds, bare=True)
    print(
        f"(a) closed loop, {args.concurrency} clients, {args.seconds:g} s: "
        f"{decisions['per_second']:.0f} decisions/s (codes {decisions['codes']}, "
        f"transport errors {decisions['transport_errors']}, "
        f"5xx {decisions['5xx_share']:.2%}); bare INSERT endpoint {bare['per_second']:.0f} req/s; "
        f"ratio {decisions['per_second'] / bare['per_second']:.2f}"
    )
    print(
        f"    CPU per decision: {describe(decisions['cpu_ms'])}; "
        f"per bare request: {describe(bare['cpu_ms'])}"
    )
    print(
        f"    Redis commands per decision: {decisions['redis_commands']:.2f} "
        f"(per bare request {bare['redis_commands']:.2f})"
    )
    for rate, result in ((args.rate, opened), (args.high_rate, high)):
        print(
            f"(b) open loop at {rate:g}/s offered for {args.open_seconds:g} s "
            f"({result['offered']} requests, codes {result['codes']}, errors {result['errors']}): "
            f"p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms"
        )
    print(
        f"    the bare endpoint at {args.rate:g}/s, the same way: p50 {floor['p50_ms']:.1f} ms, "
        f"p99 {floor['p99_ms']:.1f} ms (codes {floor['codes']}, errors {floor['errors']})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
