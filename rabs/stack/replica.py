"""Super Reggie's read replica, embedded: a PostgreSQL streaming standby of the embedded server.

``replica_start`` makes a base backup of the running primary (``pg_basebackup -R``: a standby
that streams the primary's WAL, with its own replication connection over the primary's socket)
the first time, then runs the standby's ``postgres`` as a child of the calling process (the
binaries ship with ``pgserver``): read-only by construction (hot standby), listening only on a
socket of its own. It ends when its parent ends — however it ends (the kernel's parent-death
signal) — and ``replica_stop`` (called by ``rabs.stack.embedded`` when the embedded servers stop)
stops one that is still running, so it never outlives the primary it follows.

``make run`` starts one under ``var/pgreplica`` and sets ``RABS_REPLICA_URL`` (the read-only
role, ``manage.py replica_setup``) for its processes; the tests start one of their own per
session. A deployment names its standby in ``RABS_REPLICA_URL`` instead.

Like ``rabs.stack.embedded``, this imports nothing from Django; pgserver, psycopg and pwd are
imported inside the functions that use them (a deployment with its own replica never loads
them).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from rabs.stack.procs import parent_death_signal

STANDBY_PORT = 5433
START_SECONDS = 60.0


class ReplicaError(RuntimeError):
    """The standby could not be made or started; the message says why and where the log is."""


@dataclass(frozen=True)
class Replica:
    pgdata: Path
    socket_dir: Path
    port: int
    process: subprocess.Popen[bytes] | None

    def url(self, *, database: str, role: str) -> str:
        return (
            f"postgresql://{quote(role)}@/{quote(database)}"
            f"?host={quote(str(self.socket_dir))}&port={self.port}"
        )


def _bin(name: str) -> str:
    import pgserver  # only the embedded path needs it

    return str(Path(pgserver.__file__).parent / "pginstall" / "bin" / name)


def _system_user() -> tuple[int, int] | None:
    """The unprivileged account PostgreSQL runs as when we are root (pgserver's)."""
    if os.geteuid() != 0:
        return None
    import pwd

    entry = pwd.getpwnam("pgserver")  # pgserver made it when it started the primary
    return entry.pw_uid, entry.pw_gid


def _as(account: tuple[int, int] | None, *, die_with_parent: bool) -> None:
    """In the child: drop to ``account``, then ask for SIGINT (PostgreSQL's fast shutdown) when
    the parent dies — after the change of user, which would clear it (``rabs.stack.procs``)."""
    if account is not None:
        os.setgid(account[1])
        os.setuid(account[0])
    if die_with_parent:
        parent_death_signal(signal.SIGINT)
        if os.getppid() == 1:  # orphaned before the request took effect
            os._exit(1)


def _primary(primary_pgdata: Path) -> tuple[Path, int]:
    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(primary_pgdata)
    if info is None or not info.is_running() or info.socket_dir is None or info.port is None:
        raise ReplicaError(f"the embedded PostgreSQL in {primary_pgdata} is not running")
    return info.socket_dir, info.port


def _own(path: Path, account: tuple[int, int] | None) -> None:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    if account is not None:
        os.chown(path, *account)


def _base_backup(primary_pgdata: Path, pgdata: Path, account: tuple[int, int] | None) -> None:
    host, port = _primary(primary_pgdata)
    _own(pgdata, account)
    done = subprocess.run(
        [_bin("pg_basebackup"), "-D", str(pgdata), "-h", str(host), "-p", str(port),
         "-U", "postgres", "-w", "-R", "-X", "stream", "-c", "fast"],
        capture_output=True, text=True, timeout=300,
        preexec_fn=lambda: _as(account, die_with_parent=False),
    )  # fmt: skip
    if done.returncode != 0:
        shutil.rmtree(pgdata, ignore_errors=True)
        raise ReplicaError(f"pg_basebackup failed: {done.stderr.strip()[-2000:]}")
    (pgdata / "postmaster.pid").unlink(missing_ok=True)  # never copied, but be sure


def _ready(replica: Replica) -> bool:
    import psycopg

    try:
        with psycopg.connect(
            host=str(replica.socket_dir), port=replica.port, user="postgres",
            dbname="postgres", connect_timeout=2,
        ) as conn:  # fmt: skip
            row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
            return bool(row and row[0])
    except psycopg.OperationalError:
        return False


def replica_start(*, primary_pgdata: Path, pgdata: Path, port: int = STANDBY_PORT) -> Replica:
    """A hot standby of the embedded primary in ``pgdata`` (base backup first when empty),
    running as a child of this process; returns once it accepts read-only connections."""
    account = _system_user()
    if not (pgdata / "PG_VERSION").exists():
        _base_backup(primary_pgdata, pgdata, account)
    replica_stop(pgdata)  # a standby left running by an earlier parent
    socket_dir = pgdata
    log = pgdata / "standby.log"
    with open(log, "ab") as out:
        if account is not None:
            os.chown(log, *account)
        process = subprocess.Popen(
            [_bin("postgres"), "-D", str(pgdata), "-p", str(port), "-k", str(socket_dir),
             "-h", "", "-c", "hot_standby=on", "-c", "hot_standby_feedback=on",
             "-c", "shared_buffers=16MB"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=lambda: _as(account, die_with_parent=True),
        )  # fmt: skip
    replica = Replica(pgdata=pgdata, socket_dir=socket_dir, port=port, process=process)
    deadline = time.monotonic() + START_SECONDS
    while not _ready(replica):
        if process.poll() is not None or time.monotonic() > deadline:
            replica_stop(pgdata, process=process)
            tail = log.read_text(errors="replace")[-2000:]
            raise ReplicaError(f"the standby in {pgdata} did not start (see {log}):\n{tail}")
        time.sleep(0.1)
    return replica


def _running(pid: int) -> bool:
    """Alive and not a zombie (a child stopped but not yet reaped by its parent)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def replica_stop(pgdata: Path, *, process: subprocess.Popen[bytes] | None = None) -> None:
    """Stop the standby in ``pgdata`` (fast shutdown; at once after a few seconds)."""
    pid = process.pid if process is not None else None
    if pid is None:
        try:
            pid = int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except (OSError, ValueError):
            return
        if str(pgdata).encode() not in command:  # a stale pid file: that pid is not ours
            return
    try:
        os.kill(pid, signal.SIGINT)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            return
        if not _running(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGQUIT)  # immediate shutdown: a standby recovers on its next start
    if process is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)


def replica_lsn_caught_up(primary_url: str, replica_url: str, *, timeout: float = 30.0) -> float:
    """Wait until the standby has replayed everything the primary had written when called;
    returns the seconds it took (TimeoutError after ``timeout``)."""
    import psycopg

    started = time.monotonic()
    with psycopg.connect(primary_url, autocommit=True) as primary:
        row = primary.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        assert row is not None
        target = row[0]
    with psycopg.connect(replica_url, autocommit=True) as replica:
        while True:
            got = replica.execute(
                "SELECT pg_wal_lsn_diff(pg_last_wal_replay_lsn(), %s::pg_lsn) >= 0", [target]
            ).fetchone()
            if got and got[0]:
                return time.monotonic() - started
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"the standby did not replay {target} in {timeout:g}s")
            time.sleep(0.02)


def replica_env(env: dict[str, str], *, root: Path) -> Replica | None:
    """For ``make run`` on the embedded servers: start the standby under ``root/pgreplica``
    and name it in ``env["RABS_REPLICA_URL"]`` (as the read-only role). Nothing when a
    replica is configured already or the database is not the embedded one."""
    if env.get("RABS_REPLICA_URL") or os.environ.get("DATABASE_URL"):
        return None
    from urllib.parse import urlsplit

    try:
        replica = replica_start(primary_pgdata=root / "pgdata", pgdata=root / "pgreplica")
    except ReplicaError as exc:  # the rest of the stack runs; db.replica.query says "no replica"
        print(f"No read replica: {exc}", file=sys.stderr, flush=True)
        return None
    database = urlsplit(env["DATABASE_URL"]).path.lstrip("/") or "rabs"
    role = env.get("RABS_REPLICA_ROLE", "rabs_replica_reader")
    env["RABS_REPLICA_URL"] = replica.url(database=database, role=role)
    return replica
