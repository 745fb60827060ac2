"""The supervisor: runs the loop worker as a child process and serves the control API.

Control API (127.0.0.1 only; every request needs ``Authorization: Bearer <token>``):

- ``GET /healthz`` → ``{"status": "ok", "worker": {...}, "restarts": n, "last_exit": {...}}``
- ``POST /control/restart`` ``{"reason": "...", "force": false}``: the worker is asked to stop
  (SIGTERM: it finishes the call in hand, persists, and exits); ``force`` kills it at once
  (SIGKILL). Either way the new worker resumes from ``agent_memory.db``.
- ``POST /control/shutdown`` ``{"reason": "..."}``: stop the worker the same way, then exit.

A worker that dies on its own is restarted with exponential backoff (1 s doubling to 30 s, back
to 1 s once a worker has run for a minute); every start, exit (code or signal) and restart is
recorded with its reason in ``supervisor_events`` and in ``supervisor.log``.
"""

from __future__ import annotations

import contextlib
import ctypes
import hmac
import json
import logging
import queue
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agents_vm.memory import AgentMemory
from agents_vm.service.config import Config

logger = logging.getLogger("agents_vm.service.supervisor")

DRAIN_SECONDS = 60.0
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child: if the supervisor dies (even by SIGKILL), the worker gets SIGTERM."""
    # Not Linux (OSError): the supervisor's shutdown still stops the worker.
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


MAX_BACKOFF = 30.0
STABLE_SECONDS = 60.0


class Supervisor:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.memory = AgentMemory(config.memory_path, journal_key=config.journal_key)
        self.lock = threading.RLock()
        self.worker: subprocess.Popen[bytes] | None = None
        self.worker_started = 0.0
        self.worker_handlers = ""
        self.restarts = 0
        self.last_exit: dict[str, Any] | None = None
        self.backoff = 1.0
        self.stopping = threading.Event()
        self.expected_exit = False
        self.httpd: ThreadingHTTPServer | None = None
        self.commands: queue.Queue[tuple[str, bool, Future[dict[str, Any]]]] = queue.Queue()

    # --- the worker --------------------------------------------------------------------------

    def _record(self, event: str, **detail: Any) -> None:
        logger.info("%s %s", event, json.dumps(detail))
        with self.lock:
            self.memory.event(event, detail)

    def start_worker(self, why: str) -> None:
        with self.lock:
            log = open(self.config.data_dir / "worker.log", "ab")  # noqa: SIM115
            self.worker = subprocess.Popen(
                [sys.executable, "-m", "agents_vm", "worker", "--config", str(self.config.source)],
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
            log.close()
            self.worker_started = time.monotonic()
            self.expected_exit = False
            self.worker_handlers = self.memory.handlers_digest()
            self._record(
                "worker_started", pid=self.worker.pid, why=why, handlers=self.worker_handlers
            )

    def stop_worker(self, *, force: bool, why: str) -> dict[str, Any]:
        with self.lock:
            worker = self.worker
            self.expected_exit = True
        if worker is None or worker.poll() is not None:
            return {"stopped": "not running"}
        started = time.monotonic()
        if force:
            worker.kill()
        else:
            worker.terminate()  # drain: the worker stops at the next safe point
        try:
            code = worker.wait(timeout=DRAIN_SECONDS)
            drained = not force and code == 0
        except subprocess.TimeoutExpired:
            worker.kill()
            code = worker.wait()
            drained = False
        detail = {
            "pid": worker.pid,
            "exit": code,
            "force": force,
            "drained": drained,
            "seconds": round(time.monotonic() - started, 2),
            "why": why,
        }
        self._record("worker_stopped", **detail)
        return detail

    def restart(self, *, reason: str, force: bool) -> dict[str, Any]:
        """Ask the watcher thread to restart the worker; wait for the result.

        Workers are only ever started by long-lived threads (the main thread, the watcher): the
        kernel's parent-death signal follows the *thread* that forked the child.
        """
        done: Future[dict[str, Any]] = Future()
        self.commands.put((reason, force, done))
        return done.result()

    def _restart_now(self, *, reason: str, force: bool) -> dict[str, Any]:
        stopped = self.stop_worker(force=force, why=f"restart: {reason}")
        with self.lock:
            self.restarts += 1
        self.start_worker(f"restart requested: {reason}")
        return {
            "restarted": True,
            "previous": stopped,
            "pid": self.worker.pid if self.worker else None,
        }

    def watch(self) -> None:
        """Restart a worker that died on its own, with backoff."""
        while not self.stopping.is_set():
            try:
                reason, force, done = self.commands.get(timeout=0.2)
            except queue.Empty:
                pass
            else:
                try:
                    done.set_result(self._restart_now(reason=reason, force=force))
                except Exception as exc:
                    done.set_exception(exc)
                continue
            with self.lock:
                worker, expected = self.worker, self.expected_exit
            if worker is None or expected or worker.poll() is None:
                continue
            code = worker.returncode
            ran = time.monotonic() - self.worker_started
            if ran >= STABLE_SECONDS:
                self.backoff = 1.0
            exit_info = {
                "pid": worker.pid,
                "exit": code,
                "signal": signal.Signals(-code).name if code < 0 else None,
                "ran_seconds": round(ran, 1),
                "backoff_seconds": self.backoff,
            }
            with self.lock:
                self.last_exit = exit_info
                self.expected_exit = True  # handled
            self._record("worker_died", **exit_info)
            if self.stopping.wait(self.backoff):
                return
            self.backoff = min(MAX_BACKOFF, self.backoff * 2)
            with self.lock:
                self.restarts += 1
            self.start_worker(f"recovered after exit {exit_info['signal'] or code}")

    def health(self) -> dict[str, Any]:
        with self.lock:
            worker = self.worker
            return {
                "status": "ok",
                "agent_id": self.config.agent_id,
                "worker": {
                    "pid": worker.pid if worker else None,
                    "running": bool(worker and worker.poll() is None),
                    # The handler configurations it started with, and as they stand now: when
                    # they differ, a restart is due.
                    "handlers": self.worker_handlers,
                },
                "handlers": self.memory.handlers_digest(),
                "restarts": self.restarts,
                "last_exit": self.last_exit,
                "memory_schema": self.memory.version,
            }

    # --- the control API ---------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        supervisor = self
        token = self.config.control_token.encode()

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorised(self) -> bool:
                given = self.headers.get("Authorization", "")
                if not given.startswith("Bearer ") or not hmac.compare_digest(
                    given[7:].encode(), token
                ):
                    self._answer(401, {"code": "unauthorized", "detail": "bearer token required"})
                    return False
                return True

            def _body(self) -> dict[str, Any] | None:
                length = int(self.headers.get("Content-Length") or 0)
                if length > 64 * 1024:
                    self._answer(413, {"code": "too_large", "detail": "body over 64 KB"})
                    return None
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._answer(400, {"code": "invalid_json", "detail": "body is not JSON"})
                    return None
                if not isinstance(body, dict):
                    self._answer(400, {"code": "invalid_request", "detail": "expected an object"})
                    return None
                if "force" in body and not isinstance(body["force"], bool):
                    self._answer(
                        400,
                        {
                            "code": "invalid_request",
                            "detail": "must be true or false",
                            "field": "force",
                        },
                    )
                    return None
                return body

            def do_GET(self) -> None:
                if not self._authorised():
                    return
                if self.path == "/healthz":
                    self._answer(200, supervisor.health())
                else:
                    self._answer(404, {"code": "not_found", "detail": self.path})

            def do_POST(self) -> None:
                if not self._authorised():
                    return
                body = self._body()
                if body is None:
                    return
                reason = str(body.get("reason") or "unspecified")[:200]
                if self.path == "/control/restart":
                    result = supervisor.restart(reason=reason, force=bool(body.get("force")))
                    self._answer(200, result)
                elif self.path == "/control/shutdown":
                    self._answer(202, {"shutting_down": True})
                    threading.Thread(target=supervisor.shutdown, args=(reason,)).start()
                else:
                    self._answer(404, {"code": "not_found", "detail": self.path})

            def log_message(self, fmt: str, *args: Any) -> None:
                logger.debug("control %s", fmt % args)

        return Handler

    def shutdown(self, reason: str) -> None:
        if self.stopping.is_set():
            return
        self.stopping.set()
        self.stop_worker(force=False, why=f"shutdown: {reason}")
        self._record("supervisor_stopped", why=reason)
        if self.httpd is not None:
            self.httpd.shutdown()

    def dashboard_status(self) -> dict[str, Any]:
        """What the agent's dashboard shows (``agents_vm.service.dashboard``)."""
        with self.lock:
            return {
                "agent_id": self.config.agent_id,
                "at": time.time(),
                "supervisor": self.health(),
                # No goal or words of the task: the page is LAN-facing in the compose deployment.
                "current_task": {
                    k: v
                    for k, v in (self.memory.current_task() or {}).items()
                    if k in ("task_id", "status", "turn_id", "done_steps", "updated_at")
                }
                or None,
                "recent_calls": self.memory.recent_calls(20),
            }

    def serve(self) -> int:
        self.config.data_dir.mkdir(parents=True, exist_ok=True)
        self.httpd = ThreadingHTTPServer(
            (self.config.control_host, self.config.control_port), self._handler()
        )
        port = self.httpd.server_address[1]
        # Written whole, then renamed: a reader never sees the file empty or half-written.
        partial = self.config.data_dir / "control.port.tmp"
        partial.write_text(str(port))
        partial.replace(self.config.data_dir / "control.port")
        self._record("supervisor_started", control=f"{self.config.control_host}:{port}")
        dashboard = None
        if self.config.dashboard_port is not None:
            # only a service with a [dashboard] needs it
            from agents_vm.service.dashboard import Dashboard

            dashboard = Dashboard(
                self.config.dashboard_host, self.config.dashboard_port, self.dashboard_status
            )
            dashboard.start()
            (self.config.data_dir / "dashboard.port").write_text(str(dashboard.port))
            self._record("dashboard_started", at=f"{self.config.dashboard_host}:{dashboard.port}")
        signal.signal(
            signal.SIGTERM,
            lambda *_: threading.Thread(target=self.shutdown, args=("SIGTERM",)).start(),
        )
        signal.signal(
            signal.SIGINT,
            lambda *_: threading.Thread(target=self.shutdown, args=("SIGINT",)).start(),
        )
        self.start_worker("supervisor start")
        watcher = threading.Thread(target=self.watch, daemon=True)
        watcher.start()
        self.httpd.serve_forever()
        self.httpd.server_close()
        if dashboard is not None:
            dashboard.stop()
        self.memory.close()
        return 0
