"""The supervisor's control API and restarts, with a worker whose broker is unreachable (the
worker keeps running and retrying, so only the supervisor's behaviour is under test)."""

from __future__ import annotations

import base64
import os
import signal
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.agents_vm.runtime_kit import wait_for as _wait

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
TOKEN = "supervisor-test-token"
JOURNAL_KEY = base64.b64encode(os.urandom(32)).decode()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[dict[str, Any]]:
    config = tmp_path / "agent.toml"
    config.write_text(
        f"""
agent_id = "henry"
broker_url = "http://127.0.0.1:{_closed_port()}"
secret_env = "RABS_AGENT_SECRET"
data_dir = "data"
[control]
port = 0
token_env = "RABS_CONTROL_TOKEN"
[llm]
base_url = "http://127.0.0.1:9/v1"
model = "none"
[memory]
journal_key_env = "RABS_JOURNAL_KEY"
[loop]
poll_seconds = 0.2
"""
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "RABS_AGENT_SECRET": "x",
        "RABS_CONTROL_TOKEN": TOKEN,
        "RABS_JOURNAL_KEY": JOURNAL_KEY,
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "agents_vm", "serve", "--config", str(config)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    port_file = tmp_path / "data" / "control.port"
    try:
        _wait(port_file.exists, 30, "the control API")
        yield {"url": f"http://127.0.0.1:{port_file.read_text()}", "proc": proc, "dir": tmp_path}
    finally:
        if proc.poll() is None:
            proc.kill()  # the worker is told to stop when its supervisor dies
            proc.wait()


def _get(s: dict[str, Any], path: str, token: str = TOKEN) -> httpx.Response:
    return httpx.get(s["url"] + path, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def _post(s: dict[str, Any], path: str, body: Any, token: str = TOKEN) -> httpx.Response:
    return httpx.post(
        s["url"] + path,
        content=body if isinstance(body, bytes) else None,
        json=None if isinstance(body, bytes) else body,
        headers={"Authorization": f"Bearer {token}"},
        timeout=90,
    )


def test_control_api_is_loopback_and_token_only(supervisor: dict[str, Any]) -> None:
    assert supervisor["url"].startswith("http://127.0.0.1:")
    assert httpx.get(supervisor["url"] + "/healthz").status_code == 401
    assert _get(supervisor, "/healthz", token="guess").status_code == 401
    assert _post(supervisor, "/control/restart", {}, token="guess").status_code == 401
    health = _get(supervisor, "/healthz").json()
    assert health["status"] == "ok" and health["agent_id"] == "henry"
    assert health["memory_schema"] == 6
    bad = _post(supervisor, "/control/restart", b"{not json")
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_json"
    wrong = _post(supervisor, "/control/restart", {"force": "yes"})
    assert wrong.status_code == 400 and wrong.json()["field"] == "force"
    assert _get(supervisor, "/nowhere").status_code == 404


def test_restart_drains_or_forces_and_death_is_recovered(supervisor: dict[str, Any]) -> None:
    first = _get(supervisor, "/healthz").json()["worker"]["pid"]
    _wait(lambda: (supervisor["dir"] / "data" / "worker.log").stat().st_size > 0, 30, "worker")
    drained = _post(supervisor, "/control/restart", {"reason": "upgrade"}).json()
    assert drained["previous"]["drained"] is True and drained["previous"]["exit"] == 0
    second = drained["pid"]
    forced = _post(supervisor, "/control/restart", {"reason": "stuck", "force": True}).json()
    assert forced["previous"]["drained"] is False
    assert forced["previous"]["exit"] == -signal.SIGKILL
    third = forced["pid"]
    assert len({first, second, third}) == 3

    os.kill(third, signal.SIGKILL)  # dies on its own: recovered with backoff, reason recorded
    health = _wait(
        lambda: (h := _get(supervisor, "/healthz").json())["worker"]["running"]
        and h["worker"]["pid"] != third
        and h,
        30,
        "recovery",
    )
    assert health["last_exit"]["signal"] == "SIGKILL" and health["restarts"] == 3

    assert _post(supervisor, "/control/shutdown", {"reason": "done"}).status_code == 202
    assert supervisor["proc"].wait(timeout=60) == 0
    events = [
        row[0]
        for row in sqlite3.connect(supervisor["dir"] / "data" / "agent_memory.db").execute(
            "SELECT event FROM supervisor_events ORDER BY id"
        )
    ]
    assert events[0] == "supervisor_started" and events[-1] == "supervisor_stopped"
    assert events.count("worker_started") == 4 and "worker_died" in events


def test_worker_stops_when_the_supervisor_is_killed(supervisor: dict[str, Any]) -> None:
    pid = _get(supervisor, "/healthz").json()["worker"]["pid"]
    supervisor["proc"].kill()
    supervisor["proc"].wait()

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
        return state == "Z"  # exited, waiting to be reaped by init

    _wait(gone, 30, "the orphaned worker to stop")
