"""Embedded PostgreSQL + pgvector and Redis: started on demand, shared, stopped by the last user.

Each test runs real processes against a fresh ``RABS_VAR_DIR`` so it never touches the servers
the suite itself is using.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from rabs.stack.embedded import WATCH_GRACE_SECONDS, _pid_alive, database_url
from rabs.stack.redis_urls import redis_urls

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

# The holder ends on SIGINT with KeyboardInterrupt, as at a terminal, even when the suite was
# started by a shell that ignores SIGINT in background jobs (its children inherit that).
HOLDER = """
import json, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
import psycopg, redis
from rabs.stack.embedded import ensure_services, status, var_dir
urls = ensure_services()
with psycopg.connect(urls.database_url, autocommit=True) as conn:
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    vector = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    hnsw = conn.execute("SELECT count(*) FROM pg_am WHERE amname = 'hnsw'").fetchone()
pong = redis.Redis.from_url(urls.redis_url).ping()
print(json.dumps({**status(var_dir()), "vector": vector[0], "hnsw": hnsw[0], "pong": pong}),
      flush=True)
time.sleep(float(sys.argv[1]))
"""


def _env(var: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["RABS_VAR_DIR"] = str(var)
    return env


def _hold(var: Path, seconds: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(seconds)],
        cwd=ROOT,
        env=_env(var),
        stdout=subprocess.PIPE,
        text=True,
    )


def _first_report(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"holder exited early with {proc.wait()}"
    return json.loads(line)


def _status(var: Path) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json; from rabs.stack.embedded import status, var_dir; "
            "print(json.dumps(status(var_dir())))",
        ],
        cwd=ROOT,
        env=_env(var),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def _alive(pid: int) -> bool:
    return _pid_alive(pid)


def _gone(pid: int, timeout: float = 10) -> bool:
    """A stopped server's process may take a moment to be reaped."""
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_starts_with_pgvector_and_stops_when_the_last_user_exits(tmp_path: Path) -> None:
    holder = _hold(tmp_path, 0)
    report = _first_report(holder)
    assert holder.wait(timeout=60) == 0
    assert report["postgres_pid"] and report["redis_pid"]
    assert report["vector"].startswith("0.") and report["hnsw"] == 1 and report["pong"] is True
    assert (tmp_path / "pgdata" / "PG_VERSION").exists()
    after = _status(tmp_path)
    assert after["postgres_pid"] is None and after["redis_pid"] is None
    assert _gone(report["postgres_pid"]) and _gone(report["redis_pid"])


# pgserver waits ten seconds for `pg_ctl start`; on a loaded machine that wait can run out while
# the server is still coming up. This start does what such a run does: the postmaster is launched
# (without waiting for it) and pgserver's wait ends in a timeout.
SLOW_START = """
import subprocess, pgserver.postgres_server as ps
real = ps.pg_ctl
def slow(args, **kw):
    if "start" not in args:
        return real(args, **kw)
    real(["-W" if a == "-w" else a for a in args], **kw)
    raise subprocess.TimeoutExpired("pg_ctl", kw.get("timeout", 10))
ps.pg_ctl = slow
"""


def test_a_start_slower_than_pgservers_wait_is_waited_for(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", SLOW_START + HOLDER, "0"],
        cwd=ROOT,
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        text=True,
    )
    report = _first_report(holder)
    assert holder.wait(timeout=60) == 0
    assert report["postgres_pid"] and report["vector"].startswith("0.")
    assert _gone(report["postgres_pid"])


def test_concurrent_processes_share_the_same_servers(tmp_path: Path) -> None:
    first = _hold(tmp_path, 60)
    try:
        a = _first_report(first)
        second = _hold(tmp_path, 0)
        b = _first_report(second)
        assert second.wait(timeout=60) == 0
        assert (b["postgres_pid"], b["redis_pid"]) == (a["postgres_pid"], a["redis_pid"])
        # The second process left; the first still holds its lease, so the servers stay up.
        still = _status(tmp_path)
        assert still["postgres_pid"] == a["postgres_pid"] and still["leases"] == [first.pid]
    finally:
        first.send_signal(signal.SIGINT)  # a normal exit: atexit releases the lease
        first.wait(timeout=60)
    assert _status(tmp_path)["postgres_pid"] is None
    assert _gone(a["postgres_pid"])


def test_a_killed_holder_does_not_keep_the_servers_forever(tmp_path: Path) -> None:
    victim = _hold(tmp_path, 60)
    report = _first_report(victim)
    watcher = report["watcher_pid"]
    assert watcher and _alive(watcher)
    victim.kill()  # kill -9: no chance to release its lease
    victim.wait(timeout=10)
    # Nobody else comes: the lease watcher sees no live holder and stops the servers itself.
    grace = WATCH_GRACE_SECONDS + 10
    assert _gone(report["postgres_pid"], grace) and _gone(report["redis_pid"], grace)
    assert _gone(watcher)
    after = _status(tmp_path)
    assert (after["postgres_pid"], after["redis_pid"], after["leases"]) == (None, None, [])


def test_servers_stay_while_a_holder_lives_though_another_was_killed(tmp_path: Path) -> None:
    first = _hold(tmp_path, 60)
    report = _first_report(first)
    second = _hold(tmp_path, 60)
    try:
        _first_report(second)
        first.kill()
        first.wait(timeout=10)
        time.sleep(WATCH_GRACE_SECONDS + 1)  # the watcher has looked more than once since
        still = _status(tmp_path)
        assert still["postgres_pid"] == report["postgres_pid"]
        assert still["leases"] == [second.pid]
    finally:
        second.send_signal(signal.SIGINT)
        second.wait(timeout=60)
    assert _gone(report["postgres_pid"])


def test_configured_servers_are_used_and_nothing_embedded_starts(tmp_path: Path) -> None:
    db = settings.DATABASES["default"]
    env = _env(tmp_path) | {"DATABASE_URL": database_url(db), "REDIS_URL": settings.REDIS.cache}
    code = (
        "import django, json; django.setup(); from django.db import connection; "
        "connection.ensure_connection(); print(json.dumps(connection.settings_dict['HOST']))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=env | {"DJANGO_SETTINGS_MODULE": "rabs.settings.base"},
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == db["HOST"]
    assert not (tmp_path / "pgdata").exists()
    assert not (tmp_path / "redis").exists()


@pytest.mark.parametrize(
    ("url", "celery", "cache"),
    [
        ("unix:///srv/r.sock", "redis+socket:///srv/r.sock", "unix:///srv/r.sock"),
        (
            "redis+socket:///srv/r.sock?db=2",
            "redis+socket:///srv/r.sock?db=2",
            "unix:///srv/r.sock?db=2",
        ),
        ("redis://cache:6379/1", "redis://cache:6379/1", "redis://cache:6379/1"),
    ],
)
def test_one_redis_url_spelled_for_each_client(url: str, celery: str, cache: str) -> None:
    urls = redis_urls(url)
    assert (urls.celery, urls.cache, urls.channels) == (celery, cache, cache)


def test_unknown_redis_scheme_is_refused() -> None:
    with pytest.raises(ValueError, match="REDIS_URL must be"):
        redis_urls("memcached://x")
