"""The OS sandbox every ``script`` handler runs in: bubblewrap, setpriv and prlimit.

What a script sees (nothing else exists in its mount namespace):

- ``/usr`` (and the ``/bin``, ``/lib``, ``/lib64``, ``/sbin`` links to it), read-only;
- the Python interpreter "python" names, with its standard library, read-only at its own path;
- ``/tool``: the tool's directory under ``RABS_SCRIPT_ROOT``, read-only; the working directory;
- ``/workspace``: a private tmpfs of ``workspace_mb``, writable, gone when the call ends (``HOME``,
  ``TMPDIR`` and ``/tmp`` point there); with ``keep_outputs`` its files become a deliverable;
- a fresh ``/proc`` of its own PID namespace and a minimal ``/dev``.

Not the project tree, not ``var/`` or ``.env``, not ``/etc``, not any home directory. New PID, IPC,
UTS, network (loopback only: no route anywhere) and cgroup namespaces; ``--clearenv`` and a
minimal environment; ``--die-with-parent --new-session``; every capability dropped; the script runs
as an unprivileged user (``RABS_SANDBOX_UID``, default 65534 ``nobody``) with ``no_new_privs``.
Limits by ``prlimit``: address space, CPU seconds, open files, file size, processes; plus the
wall-clock timeout, after which the whole PID namespace is killed. Nothing outlives the call.

A seccomp filter (``seccomp.py``, compiled at install) refuses the kernel calls an escape starts
from (ptrace, mount, unshare and namespaced clone, setns, keyctl, bpf, perf_event_open,
userfaultfd, process_vm_*, kernel modules…) with EPERM; bwrap loads it (``--seccomp FD``) before
anything of the script runs. Configured but not built, every script is refused.

Run as root, bwrap sets the namespaces up itself and ``setpriv`` drops to the sandbox user (the
process limit does not bind uid 0); run as another user, bwrap uses an unprivileged user namespace.
Either way the sandbox is checked once per process (``sandbox_status``) and a script is refused,
never run bare, when it cannot be built (fail closed).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

from .egress import PROXY_URL, RELAY, SOCKET_DIR, egress_proxy

#: Defaults for a tool's ``handler_config["limits"]`` (each overridable per tool, up to the maxima
#: of ``brainframe.schemas``).
LIMIT_DEFAULTS: dict[str, int] = {
    "memory_mb": 1024,  # address space (RLIMIT_AS)
    "cpu_s": 30,  # CPU seconds (RLIMIT_CPU: SIGXCPU, then SIGKILL)
    "nofile": 64,  # open files
    "fsize_mb": 16,  # largest file written, stdout and stderr included
    "nproc": 32,  # processes and threads
    "workspace_mb": 64,  # the private tmpfs
}

_MERGED_USR = ("bin", "lib", "lib64", "sbin")
_OPT_PYTHON = Path("/opt/python")
_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
_LANDLOCK = "/opt/rabs/rabs-landlock"  # the helper, bound into the sandbox when in use
#: What Landlock leaves reachable (everything else of the sandbox's own tree is refused too).
_LANDLOCK_RULES = [
    *("--ro", "/usr", "--ro", "/opt", "--ro", "/tool", "--ro", "/proc"),
    *("--ro", "/etc/ssl", "--ro", SOCKET_DIR, "--rw", "/dev", "--rw", "/workspace"),
]


class SandboxUnavailable(Exception):
    """The sandbox cannot be built here: the script is refused (nothing runs unsandboxed)."""


@dataclass(frozen=True)
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    egress_refused: list[str] = field(default_factory=list)


def limits_for(config: dict[str, Any]) -> dict[str, int]:
    given = config.get("limits") or {}
    return {key: int(given.get(key, default)) for key, default in LIMIT_DEFAULTS.items()}


def interpreter() -> Path:
    """The interpreter "python" names: the base interpreter of this one (not the project's
    virtualenv, which lives in the project tree), or ``RABS_SANDBOX_PYTHON``."""
    configured = getattr(settings, "RABS_SANDBOX_PYTHON", "")
    if configured:
        return Path(configured)
    base = getattr(sys, "_base_executable", sys.executable)
    return Path(os.path.realpath(base))


def _prefix(python: Path) -> Path:
    # bin/python3.11 → the installation's prefix (its lib/python3.11 and libpython with it).
    return python.parent.parent


def _privileged() -> bool:
    return os.geteuid() == 0


def bwrap_argv(
    *,
    command: list[str],
    tool_dir: Path | None,
    limits: dict[str, int],
    env: dict[str, str],
    binds: list[str] | None = None,
    landlock: bool = False,
    seccomp_fd: int | None = None,
) -> list[str]:
    """The full command line: bwrap, then (as root) setpriv, then prlimit, then ``command``.
    ``seccomp_fd``: a descriptor bwrap reads the compiled seccomp filter from."""
    sandbox = settings.RABS_SANDBOX
    python = interpreter()
    argv = [sandbox["bwrap"]]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    argv += [
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--cap-drop",
        "ALL",
        "--hostname",
        "sandbox",
    ]
    if _privileged():
        # Only to drop to the sandbox user; setpriv clears them (and the bounding set) at once.
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv += ["--unshare-user", "--uid", str(sandbox["uid"]), "--gid", str(sandbox["gid"])]
    argv += ["--ro-bind", "/usr", "/usr"]
    for name in _MERGED_USR:
        host = Path("/") / name
        if host.is_symlink():
            argv += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            argv += ["--ro-bind", str(host), str(host)]
    prefix = _prefix(python)
    if prefix != Path("/usr") and Path("/usr") not in prefix.parents:
        # An interpreter outside /usr (pyenv's, in a home directory) appears at /opt/python: the
        # sandbox shows no home directory, not even the path to one.
        argv += ["--perms", "0755", "--dir", "/opt", "--ro-bind", str(prefix), str(_OPT_PYTHON)]
        env = {**env, "LD_LIBRARY_PATH": str(_OPT_PYTHON / "lib")}
        python = _OPT_PYTHON / python.relative_to(prefix)
    argv += ["--proc", "/proc", "--dev", "/dev"]
    workspace_bytes = limits["workspace_mb"] * 1024 * 1024
    argv += ["--size", str(workspace_bytes), "--perms", "1777", "--tmpfs", "/workspace"]
    argv += ["--symlink", "/workspace", "/tmp"]
    if landlock:
        argv += ["--perms", "0755", "--dir", "/opt", "--perms", "0755", "--dir", "/opt/rabs"]
        argv += ["--ro-bind", str(sandbox["landlock"]), _LANDLOCK]
    argv += binds or []
    if tool_dir is not None:
        argv += ["--perms", "0755", "--dir", "/tool", "--ro-bind", str(tool_dir), "/tool"]
        argv += ["--chdir", "/tool"]
    else:
        argv += ["--chdir", "/workspace"]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    argv.append("--")
    if _privileged():
        argv += [
            sandbox["setpriv"],
            f"--reuid={sandbox['uid']}",
            f"--regid={sandbox['gid']}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
        ]
    mb = 1024 * 1024
    argv += [
        sandbox["prlimit"],
        f"--as={limits['memory_mb'] * mb}",
        f"--cpu={limits['cpu_s']}:{limits['cpu_s'] + 1}",  # SIGXCPU, then SIGKILL
        f"--nofile={limits['nofile']}",
        f"--fsize={limits['fsize_mb'] * mb}",
        f"--nproc={limits['nproc']}",
        "--core=0",
        "--",
    ]
    return argv + [str(python) if part == "python" else part for part in command]


def _missing_tools() -> list[str]:
    sandbox = settings.RABS_SANDBOX
    wanted = ["bwrap", "prlimit"] + (["setpriv"] if _privileged() else [])
    return [sandbox[name] for name in wanted if not shutil.which(sandbox[name])]


def seccomp_program() -> bytes | None:
    """The compiled seccomp filter scripts run under (None: the layer is turned off). Raises
    SandboxUnavailable when it is configured but not built."""
    return _seccomp_program(settings.RABS_SANDBOX_SECCOMP)


@functools.lru_cache(maxsize=2)
def _seccomp_program(path: str) -> bytes | None:
    if not path:
        return None
    try:
        program = Path(path).read_bytes()
    except OSError as exc:
        raise SandboxUnavailable(
            f"the seccomp filter {path} is not built (make install): {exc.strerror}"
        ) from None
    if not program or len(program) % 8:  # struct sock_filter: 8 bytes an instruction
        raise SandboxUnavailable(f"{path} is not a compiled seccomp filter")
    return program


def seccomp_status() -> str:
    """ "" when scripts run under the seccomp filter, else why not (for the start-up check)."""
    if not settings.RABS_SANDBOX_SECCOMP:
        return "turned off (RABS_SANDBOX_SECCOMP is empty)"
    try:
        seccomp_program()
    except SandboxUnavailable as exc:
        return str(exc)
    return ""


@functools.lru_cache(maxsize=1)
def sandbox_status() -> str:
    """ "" when a trivial sandbox (with the seccomp filter, when configured) runs here, else why
    not (checked once per process)."""
    missing = _missing_tools()
    if missing:
        return (
            f"{', '.join(missing)} not found: install bubblewrap and util-linux "
            "(Debian: apt-get install bubblewrap)"
        )
    try:
        seccomp_program()
    except SandboxUnavailable as exc:
        return str(exc)
    try:
        outcome = run_sandboxed(
            command=["python", "-I", "-S", "-c", "pass"],
            stdin=b"",
            tool_dir=None,
            limits=LIMIT_DEFAULTS,
            env={"PATH": "/usr/bin:/bin"},
            timeout=10.0,
            checked=False,
            landlock=False,
        )
    except (OSError, SandboxUnavailable) as exc:
        return f"bubblewrap could not start: {exc}"
    if outcome.returncode != 0 or outcome.timed_out:
        return f"bubblewrap could not build the sandbox: {outcome.stderr.strip()[-300:]}"
    return ""


@functools.lru_cache(maxsize=1)
def landlock_status() -> str:
    """ "" when the Landlock layer is applied to scripts here, else why not (checked once per
    process; optional: the sandbox holds without it)."""
    helper = settings.RABS_SANDBOX.get("landlock", "")
    if not helper:
        return "turned off (RABS_SANDBOX_LANDLOCK is empty)"
    if not os.access(helper, os.X_OK):
        return f"{helper} is not built (make install compiles it where a C compiler exists)"
    if sandbox_status():
        return "the sandbox itself cannot run"
    try:
        outcome = run_sandboxed(
            command=[_LANDLOCK, *_LANDLOCK_RULES, "--", "python", "-I", "-S", "-c", "pass"],
            stdin=b"",
            tool_dir=None,
            limits=LIMIT_DEFAULTS,
            env={"PATH": "/usr/bin:/bin"},
            timeout=10.0,
            checked=False,
            landlock=False,
            bind_landlock=True,
        )
    except OSError as exc:
        return f"the helper could not start: {exc}"
    if outcome.returncode != 0:
        return outcome.stderr.strip()[-300:] or f"the helper exited {outcome.returncode}"
    return ""


def _killed_by(returncode: int) -> str:
    """bwrap reports a child killed by signal N as 128 + N."""
    number = returncode - 128 if returncode > 128 else -returncode if returncode < 0 else 0
    try:
        return signal.Signals(number).name if number else ""
    except ValueError:
        return ""


def explain(returncode: int, stderr: str, limits: dict[str, int]) -> str:
    """The error recorded for a script that did not exit 0."""
    signame = _killed_by(returncode)
    tail = stderr.strip()[-500:]
    if signame == "SIGXCPU" or (signame == "SIGKILL" and "cpu" in tail.lower()):
        why = f"killed: CPU time limit ({limits['cpu_s']} s)"
    elif signame == "SIGXFSZ":
        why = f"killed: file size limit ({limits['fsize_mb']} MB)"
    elif signame:
        why = f"killed by {signame}"
    else:
        why = f"exited {returncode}"
    return f"script {why}: {tail}" if tail else f"script {why}"


def _read_capped(path: Path, limit: int) -> bytes:
    with path.open("rb") as stream:
        return stream.read(limit)


def run_sandboxed(
    *,
    command: list[str],
    stdin: bytes,
    tool_dir: Path | None,
    limits: dict[str, int],
    env: dict[str, str],
    timeout: float,
    checked: bool = True,
    egress: dict[str, Any] | None = None,
    landlock: bool = True,
    bind_landlock: bool = False,
    seccomp: bool = True,
) -> Outcome:
    """Run ``command`` in the sandbox; stdout and stderr go to files the file size limit binds.
    With ``egress`` (a tool's allowlist), the call gets its own filtering proxy (``egress.py``).
    ``seccomp`` False leaves the filter out (only to show what it stops)."""
    if checked:
        problem = sandbox_status()
        if problem:
            raise SandboxUnavailable(problem)
    cap = limits["fsize_mb"] * 1024 * 1024
    with (
        tempfile.TemporaryDirectory(prefix="rabs-sandbox-") as scratch,
        contextlib.ExitStack() as stack,
    ):
        here = Path(scratch)
        binds: list[str] = []
        refused: list[str] = []
        landlock = landlock and landlock_status() == ""
        if landlock:
            # Inside the relay (which must listen on the sandbox's loopback): the script alone.
            ports = ["--connect", PROXY_URL.rsplit(":", 1)[1]] if egress else []
            command = [_LANDLOCK, *_LANDLOCK_RULES, *ports, "--", *command]
        if egress:
            (here / "egress").mkdir()
            refused = stack.enter_context(egress_proxy(egress, here / "egress")).refused
            binds += ["--perms", "0755", "--dir", "/run"]
            binds += ["--ro-bind", str(here / "egress"), SOCKET_DIR]
            # CA certificates for TLS (the parent made traversable for the sandbox's user).
            binds += ["--perms", "0755", "--dir", "/etc", "--ro-bind-try", "/etc/ssl", "/etc/ssl"]
            env = {**env, **{name: PROXY_URL for name in _PROXY_VARIABLES}}
            command = ["python", "-I", "-S", "-c", RELAY, *command]
        program = seccomp_program() if seccomp else None
        filter_fd = _filter_pipe(program) if program else None
        argv = bwrap_argv(
            command=command,
            tool_dir=tool_dir,
            limits=limits,
            env=env,
            binds=binds,
            landlock=landlock or bind_landlock,
            seccomp_fd=filter_fd,
        )
        (here / "in").write_bytes(stdin)
        with (
            (here / "in").open("rb") as given,
            (here / "out").open("wb") as out,
            (here / "err").open("wb") as err,
        ):
            try:
                process = subprocess.Popen(
                    argv,
                    stdin=given,
                    stdout=out,
                    stderr=err,
                    close_fds=True,
                    pass_fds=(filter_fd,) if filter_fd is not None else (),
                )
            finally:
                if filter_fd is not None:
                    os.close(filter_fd)  # bwrap holds its own copy
            # A blocking wait, the timer killing bwrap at the deadline (Popen.wait(timeout) polls
            # with a growing sleep, which added up to 30 ms to every call). bwrap's children die
            # with it (--die-with-parent), and with its PID namespace every process the script
            # started.
            expired = threading.Event()

            def deadline() -> None:
                expired.set()
                process.kill()

            timer = threading.Timer(timeout, deadline)
            timer.start()
            try:
                returncode = process.wait()
            finally:
                timer.cancel()
            timed_out = expired.is_set()
        return Outcome(
            returncode=returncode,
            stdout=_read_capped(here / "out", cap).decode("utf-8", "replace"),
            stderr=_read_capped(here / "err", 64 * 1024).decode("utf-8", "replace"),
            timed_out=timed_out,
            egress_refused=list(refused),
        )


def _filter_pipe(program: bytes) -> int:
    """A pipe holding the compiled filter, for bwrap to read once; its read end is returned
    (the write end is closed: bwrap reads to its end)."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, program)  # a few hundred bytes: far below a pipe's buffer
    finally:
        os.close(write_end)
    return read_end
