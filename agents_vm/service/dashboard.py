"""The agent's own dashboard (seed 000 §3): a small read-only page on its dashboard port.

Served by the supervisor (``[dashboard] host/port``; loopback in ``make run``, a LAN address in
the compose deployment, where the seed puts each agent's dashboard): the agent's status, the
task and turn in hand, its latest broker calls from its own memory, and its supervisor's health.
``GET /`` is the page (it reloads itself every few seconds; no script, nothing from elsewhere),
``GET /status.json`` the same as JSON. Nothing can be changed here, and nothing secret is shown:
no arguments or answers, no tokens — ids, statuses and times.
"""

from __future__ import annotations

import html
import json
import logging
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

logger = logging.getLogger("agents_vm.service.dashboard")

REFRESH_SECONDS = 5
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}
_STYLE = (
    "body{font:14px system-ui,sans-serif;margin:2rem;color:#1b1f24}h1{font-size:1.4rem}"
    "table{border-collapse:collapse}td,th{padding:.25rem .6rem;border-bottom:1px solid #ddd;"
    "text-align:left}.muted{color:#667}.ok{color:#176d2c}.bad{color:#a01c1c}"
)


def _when(at: float | None) -> str:
    if not at:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def dashboard_page(status: dict[str, Any]) -> str:
    """The page for ``status`` (what ``/status.json`` answers), every value escaped."""
    e = html.escape
    health = status["supervisor"]
    worker = health.get("worker") or {}
    running = bool(worker.get("running"))
    task = status.get("current_task")
    rows = "".join(
        f"<tr><td>{e(_when(c.get('at')))}</td><td>{e(str(c.get('tool_id')))}</td>"
        f"<td>{e(str(c.get('status')))}</td><td class='muted'>{e(str(c.get('call_id') or '—'))}"
        f"</td><td class='muted'>{e(str(c.get('task_id')))}</td></tr>"
        for c in status["recent_calls"]
    )
    last_exit = health.get("last_exit") or {}
    task_html = (
        "<p class='muted'>No task in hand.</p>"
        if not task
        else f"<dl><dt>Task</dt><dd id='task'>{e(str(task['task_id']))}</dd>"
        f"<dt>Steps done</dt><dd>{e(', '.join(task.get('done_steps') or []) or '—')}</dd>"
        f"<dt>Turn</dt><dd id='turn'>{e(str(task.get('turn_id') or '—'))}</dd></dl>"
    )
    agent = e(str(status["agent_id"]))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="{REFRESH_SECONDS}">
<title>{agent} · agent dashboard</title><style>{_STYLE}</style></head>
<body>
<h1>{agent} <span id="state" class="{"ok" if running else "bad"}">{
        "running" if running else "not running"
    }</span></h1>
<p class="muted">Read-only. As of {e(_when(status["at"]))}.</p>
<h2>Supervisor</h2>
<dl><dt>Worker</dt><dd id="worker">{e(f"pid {worker.get('pid')}" if running else "stopped")}</dd>
<dt>Restarts</dt><dd id="restarts">{e(str(health.get("restarts", 0)))}</dd>
<dt>Last exit</dt><dd>{e(str(last_exit.get("signal") or last_exit.get("exit") or "—"))}</dd>
<dt>Handlers</dt><dd>{e(str(health.get("handlers", "")))}{
        " (a restart is due)" if worker.get("handlers") != health.get("handlers") else ""
    }</dd></dl>
<h2>In hand</h2>
{task_html}
<h2>Recent calls</h2>
<table id="calls"><thead><tr><th>When</th><th>Tool</th><th>Outcome</th><th>Call</th>
<th>Task</th></tr></thead><tbody>{rows or "<tr><td colspan='5'>None yet.</td></tr>"}</tbody>
</table>
</body></html>
"""


class Dashboard:
    """The dashboard's HTTP server, in a thread of the supervisor's process."""

    def __init__(self, host: str, port: int, status: Callable[[], dict[str, Any]]) -> None:
        self.status = status
        self.httpd = ThreadingHTTPServer((host, port), self._handler())
        self.thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        dashboard = self

        class Handler(BaseHTTPRequestHandler):
            def _send(self, code: int, kind: str, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                for name, value in _HEADERS.items():
                    self.send_header(name, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path not in ("/", "/status.json"):
                    self._send(404, "text/plain; charset=utf-8", b"not found")
                    return
                try:
                    status = dashboard.status()
                except Exception as exc:  # the page says so rather than hanging up
                    logger.warning("dashboard status failed: %s", exc)
                    self._send(503, "text/plain; charset=utf-8", b"status unavailable")
                    return
                if path == "/status.json":
                    body = json.dumps(status, default=str).encode()
                    self._send(200, "application/json", body)
                else:
                    self._send(200, "text/html; charset=utf-8", dashboard_page(status).encode())

            do_HEAD = do_GET

            def _read_only(self) -> None:
                self._send(405, "text/plain; charset=utf-8", b"read-only")

            do_POST = do_PUT = do_DELETE = do_PATCH = _read_only

            def log_message(self, fmt: str, *args: Any) -> None:
                logger.debug("dashboard %s", fmt % args)

        return Handler

    def start(self) -> None:
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
