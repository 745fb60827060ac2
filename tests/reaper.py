"""The test run's reaper: whatever the run started is stopped when the run ends, however it ends.

``tests/conftest.py`` marks the run's environment with ``RABS_TEST_RUN=<id>`` (every process the
run starts inherits it) and starts ``python -m tests.reaper <id> <var dir>`` in a session of its
own, its standard input a pipe that only the test process holds. When the test process ends —
normally, by SIGTERM, or by SIGKILL — the pipe closes and the reaper stops every process still
carrying the mark: SIGTERM, then SIGKILL for what is left after a few seconds.

The embedded PostgreSQL and Redis and their lease watcher are left alone: another process (a
``make run`` of the same checkout) may share them, and the watcher stops them once no live process
holds a lease (``rabs.stack.embedded``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

TERM_GRACE_SECONDS = 5.0


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split("\n", 1)[0].strip())
    except (OSError, ValueError):
        return None


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, or None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1])


def marked(mark: str, *, spare: set[int]) -> list[int]:
    """Live processes whose environment carries ``RABS_TEST_RUN=mark`` (not zombies, not
    ``spare`` nor their children)."""
    needle = f"RABS_TEST_RUN={mark}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid() or int(entry) in spare:
            continue
        pid = int(entry)
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        stat = _stat(pid)
        if needle in environ.split(b"\0") and stat and stat[0] != "Z" and stat[1] not in spare:
            found.append(pid)
    return found


def embedded_pids(var: Path) -> set[int]:
    pids = {
        _read_pid(var / "pgdata" / "postmaster.pid"),
        _read_pid(var / "redis" / "redis.pid"),
        _read_pid(var / "embedded-watcher.pid"),
    }
    return {pid for pid in pids if pid is not None}


def reap(mark: str, var: Path) -> list[int]:
    """Stop every process of the run; the pids that had to be stopped."""
    spare = embedded_pids(var)
    victims = marked(mark, spare=spare)
    for pid in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE_SECONDS
    while time.monotonic() < deadline and marked(mark, spare=spare):
        time.sleep(0.1)
    for pid in marked(mark, spare=spare):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return victims


def main(argv: list[str]) -> int:
    mark, var = argv[0], Path(argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C of the run is the run's to handle
    while sys.stdin.buffer.read(4096):  # until the test process is gone
        pass
    reap(mark, var)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
