"""Benchmark: signed agents over HTTP against the running stack (two daphne processes).

    .venv/bin/python bench/broker_load.py [--web 2] [--concurrency 32] [--seconds 15]
                                          [--rate 100] [--open-seconds 20]

Starts ``python -m rabs.devstack`` on a throwaway database (``rabs_load``) with ``--web`` daphne
processes behind one port, the rate limit lifted and DEBUG off; 8 agents (credentials issued
here) call ``roster.shift.read`` (auto: the whole pipeline, the hash-chained audit write and the
handler) with RABS-HMAC signatures.

(a) Closed loop at saturation: ``--concurrency`` clients for ``--seconds``; decisions/s and
    errors; then the bare endpoint of the same stack (``/bench/insert/``: one ORM INSERT) the
    same way, and the ratio.
(b) Open loop: requests offered at ``--rate``/s for ``--open-seconds`` (each sent at its
    scheduled time whatever the others do); latency p50/p99.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")
DB = "rabs_load"
AGENTS = [f"load-{n}" for n in range(8)]


async def _closed(url: str, secrets_by_agent: dict[str, str], *, bare: bool, clients: int,
                  seconds: float) -> dict[str, Any]:  # fmt: skip
    import httpx

    from bench._stack import PAYLOAD, signed

    codes: dict[int, int] = {}
    errors = 0
    stop = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as client:

        async def one_client(n: int) -> None:
            nonlocal errors
            agent = AGENTS[n % len(AGENTS)]
            while time.monotonic() < stop:
                try:
                    if bare:
                        response = await client.post("/bench/insert/")
                    else:
                        response = await client.post(
                            "/api/v1/tool-calls/",
                            content=PAYLOAD,
                            headers=signed(agent, secrets_by_agent[agent]),
                        )
                    codes[response.status_code] = codes.get(response.status_code, 0) + 1
                except httpx.HTTPError:
                    errors += 1

        started = time.monotonic()
        await asyncio.gather(*(one_client(n) for n in range(clients)))
        elapsed = time.monotonic() - started
    ok = codes.get(200, 0)
    total = sum(codes.values()) + errors
    return {
        "per_second": ok / elapsed,
        "codes": codes,
        "transport_errors": errors,
        "5xx_share": sum(v for k, v in codes.items() if k >= 500) / max(1, total),
    }


async def _open(
    url: str, secrets_by_agent: dict[str, str], *, rate: float, seconds: float
) -> dict[str, Any]:
    from bench._stack import offer_calls, percentile

    offered = await offer_calls(url, secrets_by_agent, rate=rate, seconds=seconds)
    answered = [o for o in offered if o.response is not None]
    latencies = [o.latency_ms for o in answered]
    codes: dict[int, int] = {}
    for o in answered:
        codes[o.response.status_code] = codes.get(o.response.status_code, 0) + 1
    return {
        "offered": len(offered),
        "p50_ms": statistics.median(latencies),
        "p99_ms": percentile(latencies, 99),
        "codes": codes,
        "errors": len(offered) - len(answered),
    }


def main() -> int:
    import django

    django.setup()

    from bench._db import throwaway_database
    from bench._stack import running_stack

    parser = argparse.ArgumentParser()
    parser.add_argument("--web", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--rate", type=float, default=100)
    parser.add_argument("--open-seconds", type=float, default=20)
    args = parser.parse_args()
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)

    with throwaway_database(DB), running_stack(AGENTS, web=args.web, name="broker_load") as stack:
        url, secrets_by_agent = stack.url, stack.secrets
        print(f"stack up: {args.web} daphne process(es) on one port")
        # Warm every process's connections and caches.
        asyncio.run(_closed(url, secrets_by_agent, bare=False, clients=8, seconds=3))
        decisions = asyncio.run(
            _closed(
                url, secrets_by_agent, bare=False, clients=args.concurrency, seconds=args.seconds
            )
        )
        bare = asyncio.run(
            _closed(
                url, secrets_by_agent, bare=True, clients=args.concurrency, seconds=args.seconds
            )
        )
        opened = asyncio.run(
            _open(url, secrets_by_agent, rate=args.rate, seconds=args.open_seconds)
        )
    print(
        f"(a) closed loop, {args.concurrency} clients, {args.seconds:g} s: "
        f"{decisions['per_second']:.0f} decisions/s (codes {decisions['codes']}, "
        f"transport errors {decisions['transport_errors']}, "
        f"5xx {decisions['5xx_share']:.2%}); bare INSERT endpoint {bare['per_second']:.0f} req/s; "
        f"ratio {decisions['per_second'] / bare['per_second']:.2f}"
    )
    print(
        f"(b) open loop at {args.rate:g}/s offered for {args.open_seconds:g} s "
        f"({opened['offered']} requests, codes {opened['codes']}, errors {opened['errors']}): "
        f"p50 {opened['p50_ms']:.1f} ms, p99 {opened['p99_ms']:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
