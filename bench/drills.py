"""Fault drills: processes killed in the middle of a call; afterwards nothing lost, nothing twice.

    .venv/bin/python bench/drills.py [--runs 20] [--drill worker|web|redis|postgres|all]

Runs in a throwaway database (``rabs_drills``). The tool under test posts to a real local HTTP
receiver that counts deliveries per call (``X-RABS-Call-Id``) and takes 1.5 s to answer, so the
kill always lands while the call is executing.

- **worker**: a call is approved; a real Celery worker (``-P solo``) claims and runs it; when the
  receiver has the request, the worker is killed with SIGKILL and a new one started. Then the
  minute job's recovery runs (as it will once the handler's time is up).
- **web**: a daphne process executes an auto call inline; when the receiver has the request,
  daphne is killed with SIGKILL and restarted. The agent retries with the same Idempotency-Key
  (as the SDK does) and must get the recorded answer, not a second execution.

- **redis**: the drill runs its own Redis server (cache, nonces, channel layer and Celery broker
  all on it). Each run kills it with SIGKILL, then a reviewer approves a call and an agent asks
  for one while it is down, then Redis comes back (empty: it keeps nothing on disk) and the
  minute job's recovery runs.

- **postgres**: two agents call over HTTP (the SDK, retrying 503s with the same key) while an
  approved call executes in a worker; when the receiver has that call, the embedded PostgreSQL
  is crashed and restarted (``pg_ctl restart -m immediate``). Every load call is then looked up
  by its Idempotency-Key: answered but not recorded = lost, recorded twice = duplicated.

Each run counts: deliveries to the receiver for the call (more than one = duplicated), whether
the call ends with a recorded outcome (none = lost), and approvals decided more than once.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common.drill_parts import (
    DB,
    QUEUE,
    WORKER_LOG,
    PrivateRedis,
    Receiver,
    _kill,
    _pending_call,
    _recover,
    _reviewer,
    _settle_and_count,
    _tool,
    _web,
    _worker,
)


def drill_worker(runs: int, receiver: Receiver) -> dict[str, int]:
    from broker.services.approvals import approval_decide

    _tool(receiver, "review")
    reviewer = _reviewer()
    worker = _worker()
    totals: Counter[str] = Counter()
    try:
        for n in range(runs):
            call_id, approval_id = _pending_call(n)
            approval_decide(approval_id=approval_id, reviewer=reviewer, action="approve")
            receiver.wait_for(call_id)
            _kill(worker)  # mid-execution
            worker = _worker()
            _recover()
            _settle_and_count(totals, receiver, call_id, approval_id, wait=30)
    finally:
        _kill(worker)
    return dict(totals)


def drill_web(runs: int, receiver: Receiver) -> dict[str, int]:
    import httpx

    from agents_vm.client.sdk import BrokerClient
    from brainframe.models import Agent, ToolCall
    from brainframe.services.access.credentials import agent_credential_issue

    _tool(receiver, "auto")
    secret = agent_credential_issue(agent=Agent.objects.get(agent_id="henry"))
    url, daphne = _web()
    server = daphne()
    totals: Counter[str] = Counter()
    try:
        for n in range(runs):
            key = str(uuid.uuid4())
            answers: list[Any] = []

            def send(n: int, key: str, retries: int = 0) -> Any:
                with BrokerClient(url, agent_id="henry", secret=secret, retries=retries) as sdk:
                    return sdk.call_tool(
                        "drill.deliver.auto", {"n": n}, reason="drill", idempotency_key=key
                    )

            def first(n: int, key: str, answers: list[Any]) -> None:
                try:
                    answers.append(send(n, key))
                except httpx.HTTPError as exc:
                    answers.append(exc)

            thread = threading.Thread(target=first, args=(n, key, answers))
            thread.start()
            call_id = None
            deadline = time.monotonic() + 30
            while call_id is None and time.monotonic() < deadline:
                row = ToolCall.objects.filter(idempotency_key=key).values_list("pk", flat=True)
                call_id = str(row[0]) if row else None
                time.sleep(0.02)
            assert call_id is not None, "the call was never recorded"
            receiver.wait_for(call_id)
            _kill(server)  # mid-request, the handler running inline
            thread.join()
            server = daphne()
            _recover()
            retry = send(n, key, retries=4)  # the SDK's retry: same key
            time.sleep(0.3)
            call = ToolCall.objects.get(pk=call_id)
            totals["runs"] += 1
            totals["first answer lost with the process"] += isinstance(answers[0], Exception)
            totals["retry got the sealed outcome"] += getattr(retry, "outcome", "") == call.outcome
            totals["delivered once"] += receiver.arrived[call_id] == 1
            totals["duplicated"] += receiver.arrived[call_id] > 1
            totals["lost"] += call.outcome in ("not_run", "pending")
            totals[f"outcome {call.outcome}"] += 1
            totals["extra calls recorded"] += (
                ToolCall.objects.filter(idempotency_key=key).count() - 1
            )
    finally:
        _kill(server)
    return dict(totals)


def drill_redis(runs: int, receiver: Receiver, redis: PrivateRedis) -> dict[str, int]:
    from django.conf import settings
    from django.test import Client

    from agents_vm.client.signing import sign
    from brainframe.models import Agent
    from brainframe.services.access.credentials import agent_credential_issue
    from broker.services.approvals import approval_decide

    _tool(receiver, "review")
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    reviewer = _reviewer()
    secret = agent_credential_issue(agent=Agent.objects.get(agent_id="henry")).encode()
    client = Client()

    def agent_call(body: dict[str, Any]) -> Any:
        raw = json.dumps(body).encode()
        ts, nonce = str(int(time.time())), uuid.uuid4().hex
        sig = sign(secret, "POST", "/api/v1/tool-calls/", ts, nonce, raw)
        auth = f"RABS-HMAC agent=henry,ts={ts},nonce={nonce},sig={sig}"
        return client.generic(
            "POST",
            "/api/v1/tool-calls/",
            raw,
            content_type="application/json",
            HTTP_AUTHORIZATION=auth,
        )

    worker = _worker()
    totals: Counter[str] = Counter()
    try:
        for n in range(runs):
            call_id, approval_id = _pending_call(n)
            redis.kill()
            # While Redis is down: the reviewer's decision is kept; an agent's call is refused.
            approval_decide(approval_id=approval_id, reviewer=reviewer, action="approve")
            asked = agent_call(
                {"tool_id": "roster.shift.read", "reason": "x",
                 "arguments": {"date_from": "2026-03-02", "date_to": "2026-03-02"}}
            )  # fmt: skip
            totals[f"agent call while down: {asked.status_code}"] += 1
            redis.start()
            _recover()
            _settle_and_count(totals, receiver, call_id, approval_id, wait=60)
    finally:
        _kill(worker)
    return dict(totals)


def drill_postgres(runs: int, receiver: Receiver) -> dict[str, int]:
    """PostgreSQL crashes and restarts (immediate mode: WAL recovery, every connection cut)
    while an approved call executes in a worker and two agents keep calling over HTTP."""
    from django.db import connections

    from agents_vm.client.sdk import BrokerClient
    from brainframe.models import Agent, ToolCall
    from brainframe.services.access.credentials import agent_credential_issue
    from broker.services.approvals import approval_decide
    from rabs.stack.embedded import restart_postgres

    if os.environ.get("DATABASE_URL"):
        raise SystemExit("the postgres drill restarts the embedded server: unset DATABASE_URL")
    _tool(receiver, "review")
    reviewer = _reviewer()
    secret = agent_credential_issue(agent=Agent.objects.get(agent_id="henry"))
    url, daphne = _web()
    server, worker = daphne(), _worker()
    read = {"date_from": "2026-03-02", "date_to": "2026-03-02"}
    totals: Counter[str] = Counter()

    def load(stop: threading.Event, sent: list[tuple[str, Any]]) -> None:
        with BrokerClient(url, agent_id="henry", secret=secret, retries=6) as sdk:
            while not stop.is_set():
                key = str(uuid.uuid4())
                try:
                    answer: Any = sdk.call_tool(
                        "roster.shift.read", read, reason="drill load", idempotency_key=key
                    )
                except Exception as exc:  # counted below, by kind
                    answer = exc
                sent.append((key, answer))

    try:
        for n in range(runs):
            stop, sent = threading.Event(), []  # type: ignore[var-annotated]
            agents = [threading.Thread(target=load, args=(stop, sent)) for _ in range(2)]
            for thread in agents:
                thread.start()
            call_id, approval_id = _pending_call(n)
            approval_decide(approval_id=approval_id, reviewer=reviewer, action="approve")
            receiver.wait_for(call_id)
            restart_postgres()  # mid-execution, under load
            connections.close_all()
            time.sleep(2.0)
            stop.set()
            for thread in agents:
                thread.join()
            _recover()
            _settle_and_count(totals, receiver, call_id, approval_id, wait=60)
            for key, answer in sent:
                rows = list(ToolCall.objects.filter(idempotency_key=key).values_list("outcome"))
                totals["load calls"] += 1
                totals["load: duplicated"] += len(rows) > 1
                answered = not isinstance(answer, Exception)
                totals["load: answered"] += answered
                totals["load: lost (answered, no record)"] += answered and not rows
                totals["load: refused, nothing recorded"] += (not answered) and not rows
                totals["load: unfinished"] += any(o in ("pending", "not_run") for (o,) in rows)
                if not answered:
                    code = getattr(answer, "code", "")
                    totals[f"load: error {type(answer).__name__} {code}".rstrip()] += 1
    finally:
        _kill(server)
        _kill(worker)
    return dict(totals)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--drill", choices=["worker", "web", "redis", "postgres", "all"], default="all"
    )
    args = parser.parse_args()
    redis = PrivateRedis()
    if args.drill in ("redis", "all"):
        # Everything Redis serves points at the drill's own server (read by the settings).
        redis.start()
        os.environ["REDIS_URL"] = redis.url
    try:
        return _main(args, redis)
    finally:
        redis.kill()


def _main(args: argparse.Namespace, redis: PrivateRedis) -> int:
    import django

    django.setup()
    import logging

    from django.conf import settings

    from bench.common.db import throwaway_database

    logging.getLogger("httpx").setLevel(logging.WARNING)
    WORKER_LOG.unlink(missing_ok=True)  # this invocation's workers only
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_TASK_DEFAULT_QUEUE = QUEUE
    from rabs.celery import app

    app.conf.task_default_queue = QUEUE
    receiver = Receiver()
    with throwaway_database(DB):
        drills: dict[str, Any] = {
            "worker": lambda: drill_worker(args.runs, receiver),
            "web": lambda: drill_web(args.runs, receiver),
            "redis": lambda: drill_redis(args.runs, receiver, redis),
            "postgres": lambda: drill_postgres(args.runs, receiver),
        }
        for name, drill in drills.items():
            if args.drill in (name, "all"):
                started = time.monotonic()
                result = drill()
                print(f"drill {name} ({time.monotonic() - started:.0f} s): {json.dumps(result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
