"""Benchmark: MCP ``tools/call`` through our gateway beside IBM ContextForge, in the same run.

    .venv/bin/python bench/mcp_load.py [--concurrency 32] [--seconds 15] [--rate 100]
                                       [--open-seconds 20] [--rounds 2]
                                       [--upstream node|time] [--only ours,rest,…]
                                       [--pairs 0] [--pair-seconds 5]

**Ours**: the whole stack (``python -m rabs.stack.devstack``, two daphne processes behind one port,
a Celery worker, beat, PostgreSQL, Redis) on a throwaway database; 8 agents with MCP bearer tokens
call ``time.get_current_time``, imported from an upstream reached over Streamable HTTP: the whole
pipeline (schema, Guardian on the arguments, directives, V-Pol, gate), the hash-chained audit,
the forward to the upstream, the Guardian on its answer, the outcome.

**ContextForge**: ``mcp-contextforge-gateway`` 1.1.0 (installed into ``var/bench/contextforge-venv``
from Python 3.12 on first use, never into the project's environment) with SQLite, its UI off,
rate limiting off, stateful sessions on, forwarding to its own copy of the same upstream; its
tool ``time-get-current-time`` called through a virtual server at ``/servers/<id>/mcp`` with a
JWT.

**The upstream** (``--upstream``), one process per gateway and one measured alone: ``node``
(default), ``bench/upstream_time.mjs``, the official TypeScript SDK's server (``make clients``)
with the same tool; ``time``, ``mcp-server-time`` over stdio exposed as Streamable HTTP by
ContextForge's ``mcpgateway.translate`` bridge (whose own CPU per call is more than a forwarded
call's on this machine, so the ratios then mostly measure the bridge).

**Beside them, on the same stack**: the REST face deciding ``roster.shift.read`` for signed
agents (``bench/broker_load.py``'s call), and the MCP face calling that same local read (what the
face costs without the forward); the ratios MCP/REST are printed per round, and the CPU each
part of our stack spent per call (``bench/common/cpu.py``).

The load is raw JSON-RPC over kept-alive HTTP/1.1 connections (``bench/common/http.py``), requests
built beforehand; an answer counts only if it is a successful tool result. (a) closed loop:
``--concurrency`` clients for ``--seconds``, calls/s and errors; (b) open loop: calls offered at
``--rate``/s for ``--open-seconds``, latency from the scheduled send, p50/p99. ``--rounds``
interleaves the gateways (ours, ContextForge, ours, ContextForge…) and prints each run and the
ratios; ``--pairs`` then alternates ours and REST in short closed loops, ABBA, for a
forwarded ÷ REST ratio less moved by the machine's drifting speed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")
DB = "rabs_mcp_load"
AGENTS = [f"mcp-{n}" for n in range(8)]
ARGUMENTS = {"timezone": "UTC"}
ROSTER = {"date_from": "2026-03-02", "date_to": "2026-03-02"}
ROSTER_TOOL = "roster_shift_read"


def _rpc(url: str, headers: dict[str, str], body: dict[str, Any]) -> bytes:
    from bench.common.http import _request

    base = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    return _request(urlsplit(url).netloc, urlsplit(url).path, json.dumps(body).encode(),
                    {**base, **headers})  # fmt: skip


def _call_body(n: int, tool: str, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool, "arguments": ARGUMENTS}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}


def ours_requests(
    url: str, tokens: list[str], count: int, tool: str = "time.get_current_time"
) -> list[bytes]:
    arguments = ROSTER if tool == "roster_shift_read" else ARGUMENTS
    return [
        _rpc(
            url,
            {"Authorization": f"Bearer {tokens[n % len(tokens)]}"},
            {
                **_call_body(n, tool, {"rabs/reason": "load test"}),
                "params": {
                    "name": tool,
                    "arguments": arguments,
                    "_meta": {"rabs/reason": "load test"},
                },
            },
        )
        for n in range(count)
    ]


def cf_sessions(url: str, jwt: str, count: int) -> list[str]:
    """``count`` initialised MCP sessions of ContextForge (its transport is stateful), or of
    the upstream bridge itself (no JWT)."""
    sessions = []
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    if jwt:
        headers["Authorization"] = f"Bearer {jwt}"
    with httpx.Client(timeout=30) as client:
        for _ in range(count):
            init = client.post(
                url,
                json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"}}},
                headers=headers,
            )  # fmt: skip
            init.raise_for_status()
            session = init.headers.get("mcp-session-id", "")  # the bridge keeps none
            client.post(
                url,
                json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers={**headers, **_session(session)},
            )
            sessions.append(session)
    return sessions


def _session(session: str) -> dict[str, str]:
    return {"mcp-session-id": session} if session else {}


def cf_requests(url: str, jwt: str, sessions: list[str], tool: str, count: int) -> list[bytes]:
    auth = {"Authorization": f"Bearer {jwt}"} if jwt else {}
    return [
        _rpc(url, {**auth, **_session(sessions[n % len(sessions)])}, _call_body(n, tool))
        for n in range(count)
    ]


def _e_g(result: dict[str, Any]) -> str:
    return f", e.g. {result['sample']}" if result.get("sample") else ""


def _succeeded(status: int, body: bytes) -> bool:
    if status not in (200, 201):
        return False
    text = body.decode(errors="replace")
    if text.startswith("event:") or text.startswith("data:"):
        text = [line[5:] for line in text.splitlines() if line.startswith("data:")][-1]
    try:
        answer = json.loads(text)
    except ValueError:
        return False
    if answer.get("status"):  # a signed REST call's answer
        return bool(answer["status"] == "executed" and answer.get("outcome") == "succeeded")
    result = answer.get("result") or {}
    return "error" not in answer and not result.get("isError") and bool(result.get("content"))


async def closed(url: str, requests: list[bytes], *, clients: int, seconds: float) -> dict:
    from bench.common.http import Connection

    pending = iter(requests)
    ok = failed = 0
    sample = ""
    stop = time.monotonic() + seconds

    async def client() -> None:
        nonlocal ok, failed, sample
        connection = await Connection.open(url)
        try:
            while time.monotonic() < stop and (raw := next(pending, None)) is not None:
                try:
                    status, body = await connection.send(raw)
                except (OSError, asyncio.IncompleteReadError, ValueError):
                    failed += 1
                    connection.close()
                    connection = await Connection.open(url)
                    continue
                if _succeeded(status, body):
                    ok += 1
                else:
                    failed += 1
                    sample = sample or f"{status} {body[:300]!r}"
        finally:
            connection.close()

    started = time.monotonic()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.monotonic() - started
    if next(pending, None) is None:
        raise RuntimeError("the prepared requests ran out before the time was up")
    return {"per_second": ok / elapsed, "ok": ok, "errors": failed, "sample": sample}


async def opened(url: str, requests: list[bytes], *, rate: float) -> dict:
    from bench.common.http import Connection
    from bench.common.stack import percentile

    idle: list[Connection] = []
    latencies: list[float] = []
    failed = 0

    async def one(raw: bytes, at: float) -> None:
        nonlocal failed
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        connection = idle.pop() if idle else await Connection.open(url)
        try:
            status, body = await connection.send(raw)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            connection.close()
            failed += 1
            return
        idle.append(connection)
        if _succeeded(status, body):
            latencies.append((time.monotonic() - at) * 1000)
        else:
            failed += 1

    start = time.monotonic() + 0.5
    await asyncio.gather(*(one(raw, start + n / rate) for n, raw in enumerate(requests)))
    for connection in idle:
        connection.close()
    return {
        "p50_ms": statistics.median(latencies) if latencies else float("nan"),
        "p99_ms": percentile(latencies, 99) if latencies else float("nan"),
        "errors": failed,
        "offered": len(requests),
    }


def _ours_setup(upstream_url: str) -> list[str]:
    from brainframe.models import Agent, MCPUpstream, Tool
    from brainframe.services.access.credentials import agent_token_issue
    from brainframe.services.registry.tools import tool_set_enabled
    from broker.services.upstreams import upstream_import

    # Trusted: its readOnlyHint lets get_current_time run without review (as it must, here).
    upstream = MCPUpstream.objects.create(
        name="time", transport="http", url=upstream_url, trust="trusted"
    )
    upstream_import(upstream=upstream)
    tool_set_enabled(tools=Tool.objects.filter(pk="time.get_current_time"), enabled=True)
    Tool.objects.filter(pk="time.get_current_time").update(agent_access=AGENTS)
    return [agent_token_issue(agent=Agent.objects.get(pk=a)) for a in AGENTS]


def _pairs(gateways: dict[str, Any], args: argparse.Namespace) -> None:
    """MCP forwarded and REST closed loops back to back, ours first then REST first (ABBA):
    each pair's ratio and the ratio of their sums."""
    sums = {"ours": 0.0, "rest": 0.0}
    for pair in range(args.pairs):
        got = {}
        for name in ("ours", "rest") if pair % 2 == 0 else ("rest", "ours"):
            url, build = gateways[name]
            requests = build(int(args.pair_seconds * 2000))
            c = asyncio.run(
                closed(url, requests, clients=args.concurrency, seconds=args.pair_seconds)
            )
            got[name] = c["per_second"] if not c["errors"] else 0.0  # errors: no figure
            sums[name] += got[name]
        print(
            f"pair {pair + 1}: ours {got['ours']:.0f} calls/s, REST {got['rest']:.0f} calls/s, "
            f"MCP forwarded/REST {got['ours'] / max(got['rest'], 1e-9):.2f}"
        )
    print(
        f"pairs: MCP forwarded/REST calls/s {sums['ours'] / max(sums['rest'], 1e-9):.2f} "
        f"({args.pairs} pairs of {args.pair_seconds:g} s closed loops, ABBA order)"
    )


def main() -> int:
    import django

    django.setup()
    from bench.common.cpu import CpuMeter, describe, per_request_ms
    from bench.common.db import throwaway_database
    from bench.common.http import signed_calls
    from bench.common.stack import running_stack

    parser = argparse.ArgumentParser()
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--rate", type=float, default=100)
    parser.add_argument("--open-seconds", type=float, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--pairs",
        type=int,
        default=0,
        help="then this many closed loops of ours and REST back to back, in ABBA order (the "
        "machine's speed drifts between the rounds' runs); their ratio over all pairs",
    )
    parser.add_argument("--pair-seconds", type=float, default=5)
    parser.add_argument(
        "--upstream",
        choices=["node", "time"],
        default="node",
        help="node: the TypeScript SDK's server (bench/upstream_time.mjs); time: mcp-server-time "
        "over stdio behind ContextForge's bridge (its own CPU is most of a forwarded call's)",
    )
    parser.add_argument(
        "--only", default="", help="only these runs (ours, contextforge, rest, local; a,b)"
    )
    args = parser.parse_args()
    # A SIGTERM stops the run as Ctrl-C does: the servers it started are stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)
    # bench/ is on the path only from here (ROOT above).
    from bench.common.contextforge import WORK, contextforge_and_upstreams, ensure_contextforge

    python = ensure_contextforge()
    WORK.mkdir(parents=True, exist_ok=True)
    budget = int(args.seconds * 2000)
    runs: list[tuple[str, dict, dict]] = []
    with (
        throwaway_database(DB),
        running_stack(AGENTS, web=2, name="mcp_load") as stack,
        contextforge_and_upstreams(python, args.upstream) as (
            cf_url,
            jwt,
            cf_tool,
            our_upstream,
            lone,
        ),
    ):
        tokens = _ours_setup(our_upstream)
        ours_url = f"{stack.url}/mcp"
        sessions = cf_sessions(cf_url, jwt, args.concurrency)
        direct = cf_sessions(lone, "", args.concurrency)
        gateways = {
            "ours": (ours_url, lambda n: ours_requests(ours_url, tokens, n)),
            "contextforge": (cf_url, lambda n: cf_requests(cf_url, jwt, sessions, cf_tool, n)),
            # The same stack's REST face deciding a local read (bench/broker_load.py's call),
            # and the MCP face calling that read: what the face costs beside the forward.
            "rest": (stack.url, lambda n: list(signed_calls(stack.url, stack.secrets, n))),
            "ours, local": (ours_url, lambda n: ours_requests(ours_url, tokens, n, ROSTER_TOOL)),
        }
        if args.only:  # by the names above, "local" for "ours, local"
            chosen = {"ours, local" if n == "local" else n for n in args.only.split(",")}
            gateways = {k: v for k, v in gateways.items() if k in chosen}
        # For scale: the upstream alone (no gateway), what neither gateway can exceed.
        alone = asyncio.run(
            closed(
                lone,
                cf_requests(lone, "", direct, "get_current_time", budget * 3),
                clients=args.concurrency,
                seconds=args.seconds,
            )
        )
        print(
            f"the upstream alone: {alone['per_second']:.0f} calls/s ({alone['errors']} errors"
            + (f", e.g. {alone['sample']}" if alone["sample"] else "")
            + ")"
        )
        for name, (url, build) in gateways.items():  # warm both
            asyncio.run(closed(url, build(4000), clients=8, seconds=3))
            print(f"{name}: warmed")
        for round_ in range(args.rounds):
            for name, (url, build) in gateways.items():
                meter, before = CpuMeter(), None
                before = meter.sample()
                c = asyncio.run(
                    closed(url, build(budget), clients=args.concurrency, seconds=args.seconds)
                )
                c["cpu"] = per_request_ms(before, meter.sample(), c["ok"] + c["errors"])
                o = asyncio.run(
                    opened(url, build(int(args.rate * args.open_seconds)), rate=args.rate)
                )
                runs.append((name, c, o))
                print(
                    f"round {round_ + 1} {name:>12}: closed loop {c['per_second']:.0f} "
                    f"calls/s ({c['ok']} ok, {c['errors']} errors{_e_g(c)}); open loop at "
                    f"{args.rate:g}/s: p50 {o['p50_ms']:.1f} ms, p99 {o['p99_ms']:.1f} ms "
                    f"({o['errors']} errors of {o['offered']})"
                    + ("" if name == "contextforge" else f"; CPU per call {describe(c['cpu'])}")
                )
        if args.pairs and {"ours", "rest"} <= gateways.keys():
            _pairs(gateways, args)
    per_round = len(runs) // args.rounds
    for round_ in range(args.rounds):
        got = {name: (c, o) for name, c, o in runs[per_round * round_ : per_round * (round_ + 1)]}
        figures = []
        if "ours" in got and "contextforge" in got:
            (ours, ours_o), (cf, cf_o) = got["ours"], got["contextforge"]
            figures.append(
                f"ours/ContextForge: calls/s {ours['per_second'] / cf['per_second']:.2f}, "
                f"p50 {ours_o['p50_ms'] / cf_o['p50_ms']:.2f}, "
                f"p99 {ours_o['p99_ms'] / cf_o['p99_ms']:.2f}"
            )
        if "rest" in got:
            rest = got["rest"][0]["per_second"]
            figures += [
                f"MCP/REST calls/s, {label} {got[name][0]['per_second'] / rest:.2f}"
                for name, label in (("ours", "forwarded"), ("ours, local", "local"))
                if name in got
            ]
        print(f"round {round_ + 1} ratios: " + "; ".join(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
