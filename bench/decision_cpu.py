"""Benchmark: where a decision's CPU goes, in one process (no HTTP server, no load generator).

    .venv/bin/python bench/decision_cpu.py [--calls 2000] [--profile N]

On a throwaway database (``rabs_decision_cpu``), one agent sends signed ``roster.shift.read``
calls (auto: the whole pipeline, the audit, the handler) through Django's test client, one at a
time. The steps of the request are timed with the calling thread's CPU clock
(``time.thread_time``: waiting for PostgreSQL or Redis does not count) and printed per call,
inclusive (a step's figure contains the steps inside it), then the CPU PostgreSQL and Redis spent
per call (the embedded servers, read from ``/proc``). ``bench/broker_load.py`` gives the
same request's CPU in the served stack, daphne's share included.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")
os.environ.update(
    RABS_AGENT_RATE="10000000/min",
    RABS_LOOP_LATCH_CALLS="100000000",  # counted as in production, never reached
    RABS_INDEX_ON_COMMIT="false",
    DJANGO_DEBUG="false",
    DJANGO_ALLOWED_HOSTS="testserver",
)
DB = "rabs_decision_cpu"

# (label, module, attribute path): the steps timed, outermost first.
STEPS = [
    ("request, tool-call fast path", "broker.api.fast", "_answer"),
    ("  signature, replay guard, rate count", "broker.api.fast", "authenticate_signed"),
    ("    agent, key, registry token", "broker.api.authentication", "agent_secret_get"),
    ("    replay guard and rate count", "broker.api.authentication", "replay_guard_and_count"),
    ("  body validation", "broker.api.fast", "_valid"),
    ("  call", "broker.api.fast", "tool_call_submit_admitted"),
    ("    prepare (registry, task)", "broker.services.calls", "prepare"),
    ("    decide (pipeline)", "broker.services.calls", "decide"),
    ("    run (a read, before it is recorded)", "broker.services.calls", "call_run"),
    ("      handler", "broker.services.execution", "run_handler"),
    ("    audit write (with the outcome)", "broker.services.calls", "record_decision"),
    ("    board event", "broker.services.execution", "publish_tool_call"),
]


def _instrument(spent: defaultdict[str, float]) -> None:
    for label, module_name, path in STEPS:
        owner: Any = importlib.import_module(module_name)
        *parents, name = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        setattr(owner, name, _timed(getattr(owner, name), label, spent))


def _timed(
    function: Callable[..., Any], label: str, spent: defaultdict[str, float]
) -> Callable[..., Any]:
    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[label] += time.thread_time() - started

    return timed


def main() -> int:
    import django

    django.setup()
    from django.test import Client

    from bench.common.cpu import CpuMeter, per_request_ms
    from bench.common.db import throwaway_database
    from bench.common.stack import PAYLOAD, signed

    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="instead: profile the calls (cProfile) and print the N costliest functions",
    )
    args = parser.parse_args()

    spent: defaultdict[str, float] = defaultdict(float)
    _instrument(spent)
    with throwaway_database(DB):
        from brainframe.models import Agent, Tool
        from brainframe.services.access.credentials import agent_credential_issue

        Tool.objects.filter(tool_id="roster.shift.read").update(
            execution_mode="auto", agent_access=["cpu-0"]
        )
        agent = Agent.objects.create(agent_id="cpu-0", name="cpu-0", type="type_2_sandboxed")
        secret = agent_credential_issue(agent=agent)
        client = Client()

        def call() -> None:
            headers = signed("cpu-0", secret)
            answer = client.post(
                "/api/v1/tool-calls/",
                PAYLOAD,
                content_type="application/json",
                HTTP_AUTHORIZATION=headers["Authorization"],
            )
            if answer.status_code != 200:
                raise SystemExit(f"call answered {answer.status_code}: {answer.content[:300]!r}")

        for _ in range(300):  # warm the registry, the pools and the compiled validators
            call()
        if args.profile:
            return _profiled(call, args.calls, args.profile)
        spent.clear()
        collected = _watch_collections()
        meter = CpuMeter()
        before = meter.sample()
        started = time.thread_time()
        for _ in range(args.calls):
            call()
        total = time.thread_time() - started
        servers = per_request_ms(before, meter.sample(), args.calls)
    print(f"{args.calls} calls, thread CPU per call (ms, inclusive):")
    print(f"  {'whole call, test client and signing included':46s} {total * 1000 / args.calls:.3f}")
    for label, _, _ in STEPS:
        print(f"  {label:46s} {spent[label] * 1000 / args.calls:.3f}")
    print(
        f"  {'garbage collection (in the above)':46s} {collected['cpu'] * 1000 / args.calls:.3f}"
        f"  ({collected[0]:.0f}/{collected[1]:.0f}/{collected[2]:.0f} collections of"
        " generation 0/1/2)"
    )
    for part in ("postgres", "redis"):
        if part in servers:
            print(f"  {part + ' (its own processes)':46s} {servers[part]:.3f}")
    return 0


def _watch_collections() -> dict[Any, float]:
    """The thread CPU the cyclic garbage collector takes from here on, and its collections."""
    import gc

    seen: dict[Any, float] = {"cpu": 0.0, 0: 0, 1: 0, 2: 0}
    started = [0.0]

    def watch(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.thread_time()
        else:
            seen["cpu"] += time.thread_time() - started[0]
            seen[info["generation"]] += 1

    gc.callbacks.append(watch)
    return seen


def _profiled(call: Callable[[], None], calls: int, top: int) -> int:
    import cProfile
    import pstats

    profile = cProfile.Profile(time.thread_time)
    profile.enable()
    for _ in range(calls):
        call()
    profile.disable()
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    callees = os.environ.get("RABS_PROFILE_CALLEES")  # e.g. "record_decision|decide"
    if callees:
        stats.print_callees(callees)
    callers = os.environ.get("RABS_PROFILE_CALLERS")  # e.g. "dispatcher.py.*connect"
    if callers:
        stats.print_callers(callers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
