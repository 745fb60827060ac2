"""``make run``: the whole stack in one terminal until Ctrl-C.

Takes a lease on the embedded services (unless DATABASE_URL / REDIS_URL are set), migrates,
loads the demo data, makes sure an admin exists and prints its login, then runs daphne, a Celery
worker and Celery beat. Ctrl-C (or any of them dying) stops everything this started.

``make run-multi`` (``RABS_WEB_PROCESSES=2 RABS_WORKER_PROCESSES=2``) runs several daphne
processes behind one port (the launcher binds a socket per process on that port with
``SO_REUSEPORT``, so the kernel spreads connections between them) and several Celery workers,
with one beat: the local picture of a multi-process deployment.

Beat keeps its schedule (when each periodic job last ran) in ``RABS_BEAT_SCHEDULE``, by default
``var/celerybeat-schedule``. A stack started by :func:`launched` (tests, benchmarks) gets, unless
its environment names one, a fresh file of its own next to its log: it never shares beat's state
with a ``make run`` of the same checkout, and its periodic jobs first fall due one interval after
it starts, as on a new deployment, not at whatever moment an earlier stack left them.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from rabs.stack import matrix
from rabs.stack.embedded import ensure_services, var_dir
from rabs.stack.procs import die_with_parent
from rabs.stack.replica import replica_env

BASE_DIR = Path(__file__).resolve().parents[2]
BIN_DIR = Path(sys.executable).parent  # daphne and celery of this environment


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")
    env.setdefault("DJANGO_DEBUG", "true")
    if not env.get("DATABASE_URL") or not env.get("REDIS_URL"):
        urls = ensure_services()  # held until this process exits; children reuse the servers
        env.setdefault("DATABASE_URL", urls.database_url)
        env.setdefault("REDIS_URL", urls.redis_url)
    return env


def _manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=BASE_DIR, env=env, check=True)


def free_port() -> int:
    """A local TCP port nothing listens on now (for servers started by tests and benchmarks)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_daphne(
    env: dict[str, str], port: int, *, log: Path | None = None
) -> subprocess.Popen[bytes]:
    """daphne serving the app on 127.0.0.1:``port`` with ``env``, in a session of its own (so
    it can be killed whole) that ends when the caller dies; its output to ``log`` or nowhere."""

    def run(out: Any) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [str(BIN_DIR / "daphne"), "-b", "127.0.0.1", "-p", str(port),
             "rabs.asgi:application"],
            cwd=BASE_DIR, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=die_with_parent,
        )  # fmt: skip

    if log is None:
        return run(subprocess.DEVNULL)
    with open(log, "wb") as out:  # the child keeps its own descriptor
        return run(out)


def wait_until_up(
    url: str,
    process: subprocess.Popen[bytes],
    *,
    path: str = "/healthz",
    timeout: float = 30.0,
    request_timeout: float = 2.0,
) -> None:
    """Return once ``url + path`` answers at all; RuntimeError if ``process`` exits first or
    ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            httpx.get(f"{url}{path}", timeout=request_timeout)
            return
        except httpx.HTTPError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not come up") from None
            time.sleep(0.2)


@contextmanager
def launched(env: dict[str, str], *, log: Path, timeout: float = 120.0) -> Iterator[str]:
    """Run ``python -m rabs.stack.devstack`` in the background with ``env`` (which names the port in
    ``RABS_PORT``), its output in ``log``; yields the base URL once ``/healthz`` answers,
    and stops everything it started on exit. For tests and benchmarks of the whole stack."""
    # No homeserver unless the caller asks for one: it is the chat tests' own (and the
    # data directory under var/ is one homeserver's at a time).
    env = {"RABS_MATRIX_EMBEDDED": "false", **env}
    if not env.get("RABS_BEAT_SCHEDULE"):  # a fresh one next to the log
        schedule = log.with_name(f"{log.stem}-beat-schedule")
        for suffix in ("", ".db", ".dat", ".dir", ".bak"):  # shelve's files, by its backend
            schedule.with_name(schedule.name + suffix).unlink(missing_ok=True)
        env = {**env, "RABS_BEAT_SCHEDULE": str(schedule)}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "rabs.stack.devstack"],
            cwd=BASE_DIR,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
    url = f"http://{env.get('RABS_HOST', '127.0.0.1')}:{env['RABS_PORT']}"
    try:
        try:
            wait_until_up(url, process, timeout=timeout)
        except RuntimeError:
            raise RuntimeError(f"the stack did not start:\n{log.read_text()[-3000:]}") from None
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def beat_command(env: dict[str, str]) -> list[str]:
    schedule = env.get("RABS_BEAT_SCHEDULE") or str(var_dir() / "celerybeat-schedule")
    return [str(BIN_DIR / "celery"), "-A", "rabs", "beat", "-l", "info", "-s", schedule]


def web_listener(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` for one of several web processes, each with its own
    (``SO_REUSEPORT``): the kernel spreads new connections over them by their addresses. On one
    socket shared by all, the process that woke first accepted a whole burst of connections
    (Twisted accepts up to a hundred at a time), and under kept-alive load one process could
    serve every client while the other sat idle."""
    listener = socket.create_server((host, port), backlog=1024, reuse_port=True)
    listener.set_inheritable(True)
    return listener


def main() -> int:
    env = _environment()
    # Super Reggie's read replica: a standby of the embedded server, a child of this process.
    replica = replica_env(env, root=var_dir())
    _manage(env, "migrate", "--no-input")
    _manage(env, "seed_brainframe")
    _manage(env, "ensure_admin")
    if env.get("RABS_REPLICA_URL"):
        _manage(env, "replica_setup")

    host = env.get("RABS_HOST", "127.0.0.1")
    port = env.get("RABS_PORT", "8000")
    homeserver = matrix.for_stack(env, f"http://{host}:{port}")  # chat (docs/channels.md)
    if homeserver is not None:
        env.update(homeserver.env())
    web_processes = int(env.get("RABS_WEB_PROCESSES", "1"))
    worker_processes = int(env.get("RABS_WORKER_PROCESSES", "1"))
    commands: dict[str, list[str]] = {}
    sockets: dict[str, socket.socket] = {}  # a web process's own listening socket, by name
    if web_processes == 1:
        commands["web"] = [str(BIN_DIR / "daphne"), "-b", host, "-p", port, "rabs.asgi:application"]
    else:
        for n in range(1, web_processes + 1):
            listener = sockets[f"web{n}"] = web_listener(host, int(port))
            commands[f"web{n}"] = [
                str(BIN_DIR / "daphne"),
                "--fd",
                str(listener.fileno()),
                "rabs.asgi:application",
            ]
    for n in range(1, worker_processes + 1):
        commands["worker" if worker_processes == 1 else f"worker{n}"] = [
            str(BIN_DIR / "celery"),
            "-A",
            "rabs",
            "worker",
            "-n",
            f"worker{n}@%h",
            "-l",
            "info",
            "--concurrency",
            env.get("RABS_WORKER_CONCURRENCY", "2"),
        ]
    commands["beat"] = beat_command(env)
    children: dict[str, subprocess.Popen[bytes]] = {}
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    for name, argv in commands.items():
        # Own process group: the terminal's Ctrl-C reaches only us, and we stop them in order;
        # if we are killed outright, the kernel stops them (die_with_parent).
        passed = (sockets[name].fileno(),) if name in sockets else ()
        children[name] = subprocess.Popen(
            argv,
            cwd=BASE_DIR,
            env=env,
            start_new_session=True,
            pass_fds=passed,
            preexec_fn=die_with_parent,
        )
    for listener in sockets.values():
        listener.close()  # each is its web process's now
    print(
        f"\nRABS Brainframe is up: http://{host}:{port}/board/ (the board), "
        f"http://{host}:{port}/admin/ (the admin), http://{host}:{port}/mcp (agents' MCP)  "
        f"({web_processes} web, "
        f"{worker_processes} worker process(es), beat"
        f"{', a read replica' if replica else ''}; Ctrl-C stops everything)\n",
        flush=True,
    )

    exit_code = 0
    while not stopping:
        for name, child in children.items():
            if child.poll() is not None:
                print(f"{name} exited with {child.returncode}; stopping the stack", flush=True)
                exit_code = 1
                stopping = True
        time.sleep(0.5)

    for child in children.values():
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 15
    for child in children.values():
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
    if homeserver is not None:
        homeserver.stop()
    print(f"Stopped {', '.join(children)}{', the homeserver' if homeserver else ''}.", flush=True)
    return exit_code  # the embedded servers stop as this process releases its lease


if __name__ == "__main__":
    raise SystemExit(main())
