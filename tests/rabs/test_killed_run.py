"""A killed `make test` leaves nothing behind: no daphne, no worker, no embedded server.

The outer test starts `make test` on one inner test (the probe below) with a fresh
``RABS_VAR_DIR`` and a mark in its environment that every process of that run inherits, waits
until the probe has its servers up (embedded PostgreSQL and Redis, a daphne, a Celery worker),
kills make — once with SIGTERM, once with SIGKILL — and then looks through ``/proc`` for any
process still carrying the mark.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from rabs.stack.devstack import free_port, start_daphne, wait_until_up
from rabs.stack.embedded import WATCH_GRACE_SECONDS, _pid_alive, ensure_services, stop_all
from rabs.stack.procs import die_with_parent
from tests.reaper import TERM_GRACE_SECONDS, embedded_pids

ROOT = Path(__file__).resolve().parents[2]
PROBE = "RABS_KILL_PROBE_READY"
MARK = "RABS_KILL_PROBE_MARK"

pytestmark = pytest.mark.slow


@pytest.mark.skipif(PROBE not in os.environ, reason="run only by the kill test, inside make test")
def test_probe_holds_servers_until_killed() -> None:
    """Not a test of its own: the run the kill test kills, with its servers up."""
    urls = ensure_services()
    env = {**os.environ, "DATABASE_URL": urls.database_url, "REDIS_URL": urls.redis_url}
    port = free_port()
    daphne = start_daphne(env, port)
    wait_until_up(f"http://127.0.0.1:{port}", daphne, timeout=60)
    worker = subprocess.Popen(
        [str(Path(sys.executable).parent / "celery"), "-A", "rabs", "worker", "-P", "solo"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=die_with_parent,
    )
    Path(os.environ[PROBE]).write_text(f"{daphne.pid} {worker.pid}")
    time.sleep(150)  # killed long before


def _left(mark: str) -> list[str]:
    """Live processes whose environment carries the mark: 'pid command' each."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except (OSError, IndexError):
            continue
        if needle in environ.split(b"\0") and state != "Z":
            found.append(f"{entry} {command.decode(errors='replace')[:120]}")
    return found


@pytest.mark.timeout(400)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_killed_make_test_leaves_no_process_behind(
    sig: signal.Signals, tmp_path_factory: pytest.TempPathFactory
) -> None:
    var = tmp_path_factory.getbasetemp() / "killed-run-var"  # shared: the second run reuses it
    ready = tmp_path_factory.mktemp("probe") / "ready"
    mark = uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env |= {"RABS_VAR_DIR": str(var), PROBE: str(ready), MARK: mark}
    target = "tests/rabs/test_killed_run.py::test_probe_holds_servers_until_killed"
    make = subprocess.Popen(
        ["make", "--no-print-directory", "test", f"PYTEST_ARGS={target} -p no:cacheprovider -q"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 240
        while not ready.exists():
            assert make.poll() is None, f"make test ended with {make.returncode} before the probe"
            assert time.monotonic() < deadline, "the probe's servers did not come up"
            time.sleep(0.2)
        running = _left(mark)
        commands = " ".join(running)
        for part in ("pytest", "daphne", "celery", "postgres", "rabs.stack.embedded"):
            assert part in commands, f"{part} is not running in the run: {running}"
        # Redis rewrites its process title over its environment: found by its pid file instead.
        servers = embedded_pids(var)
        assert len(servers) == 3 and all(_pid_alive(pid) for pid in servers)
        make.send_signal(sig)
        make.wait(timeout=30)
        deadline = time.monotonic() + TERM_GRACE_SECONDS + WATCH_GRACE_SECONDS + 20
        while time.monotonic() < deadline:
            left = _left(mark) + [f"{pid} (embedded)" for pid in servers if _pid_alive(pid)]
            if not left:
                break
            time.sleep(0.2)
        assert left == [], f"still running after make was killed ({sig.name}): {left}"
    finally:  # leave nothing even when the test fails: the servers stopped as make stop would
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
        if var.exists():
            stop_all(var)
        for line in _left(mark):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split()[0]), signal.SIGKILL)
