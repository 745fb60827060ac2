"""The embedded read replica's start-up module (``rabs.stack.replica``): the standby stops with the
embedded servers, and a pid file that is not its own is never acted on. (The standby itself —
streaming, read-only, shared by the session — is exercised in
tests/broker/handlers/test_replica.py.)"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from rabs.stack.embedded import stop_all
from rabs.stack.procs import die_with_parent
from rabs.stack.replica import Replica

_SLEEPER = (
    "import signal, time; signal.signal(signal.SIGINT, signal.SIG_DFL); print('up', flush=True); "
    "time.sleep(60)"
)


def _standing_in(pgdata: Path) -> subprocess.Popen[bytes]:
    """A process whose command line names ``pgdata``, as the standby's postmaster's does."""
    pgdata.mkdir(parents=True)
    process = subprocess.Popen(
        # Like a postmaster, it ends on SIGINT (a shell may start it with SIGINT ignored), once up.
        [sys.executable, "-c", _SLEEPER, str(pgdata)],
        start_new_session=True,
        preexec_fn=die_with_parent,
        stdout=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stdout.readline() == b"up\n"  # handler set
    (pgdata / "postmaster.pid").write_text(f"{process.pid}\n{pgdata}\n")
    return process


def test_the_standby_stops_with_the_embedded_servers(tmp_path: Path) -> None:
    process = _standing_in(tmp_path / "pgreplica")
    stop_all(tmp_path)  # what the last lease holder, the lease watcher and `make stop` run
    assert process.wait(timeout=10) != 0


def test_a_pid_file_that_is_not_the_standbys_is_left_alone(tmp_path: Path) -> None:
    other = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        start_new_session=True,
        preexec_fn=die_with_parent,
    )
    try:
        pgdata = tmp_path / "pgreplica"
        pgdata.mkdir()
        (pgdata / "postmaster.pid").write_text(f"{other.pid}\n")  # a stale file, a reused pid
        stop_all(tmp_path)
        time.sleep(0.2)
        assert other.poll() is None
    finally:
        other.kill()
        other.wait(timeout=10)


def test_the_url_names_the_role_the_database_and_the_socket() -> None:
    replica = Replica(pgdata=Path("/v/r"), socket_dir=Path("/v/r"), port=5433, process=None)
    assert replica.url(database="test_rabs", role="rabs_replica_reader") == (
        "postgresql://rabs_replica_reader@/test_rabs?host=/v/r&port=5433"
    )
