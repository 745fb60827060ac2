"""CPU time spent by each part of the stack during a benchmark phase, read from ``/proc``.

Throughput on a shared two-core machine drifts by up to 2× between runs; the CPU a request costs
each part (web processes, PostgreSQL, Redis, the worker, the load generator) moves far less, and
says where the time goes. A part's figure is the user + system time of its processes and of
their children that have exited (``cutime``/``cstime``: PostgreSQL backends, for instance).

PostgreSQL and Redis are measured when they are the embedded servers under ``var/``; servers
named by ``DATABASE_URL`` / ``REDIS_URL`` may be elsewhere and are left out.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and its reaped children)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return int(fields[1]), (utime + stime + cutime + cstime) / _TICKS


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _processes() -> dict[int, tuple[int, float]]:
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            found[int(entry)] = stat
    return found


def _tree(root: int, processes: dict[int, tuple[int, float]]) -> list[int]:
    """``root`` and every process descending from it."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in processes.items():
        children.setdefault(ppid, []).append(pid)
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in processes:
            tree.append(pid)
        todo.extend(children.get(pid, ()))
    return tree


def _embedded_roots() -> dict[str, int]:
    """The embedded servers' pids, if this process uses them."""
    roots = {}
    if not os.environ.get("DATABASE_URL") or not os.environ.get("REDIS_URL"):
        from rabs.stack import embedded

        state = embedded.status(embedded.var_dir())
        if not os.environ.get("DATABASE_URL") and isinstance(state["postgres_pid"], int):
            roots["postgres"] = state["postgres_pid"]
        if not os.environ.get("REDIS_URL") and isinstance(state["redis_pid"], int):
            roots["redis"] = state["redis_pid"]
    return roots


class CpuMeter:
    """``sample()`` → CPU seconds so far of: ``web`` (daphne processes this process started,
    directly or not), ``worker`` (Celery worker and beat), ``postgres``, ``redis`` (embedded
    only) and ``client`` (this process, the load generator)."""

    PARTS = ("web", "worker", "postgres", "redis", "client")

    def __init__(self) -> None:
        self.servers = _embedded_roots()

    def sample(self) -> dict[str, float]:
        processes = _processes()
        totals = dict.fromkeys(("web", "worker"), 0.0)
        for pid in _tree(os.getpid(), processes):
            command = _cmdline(pid)
            part = "web" if "daphne" in command else "worker" if "celery" in command else None
            if part is not None:
                totals[part] += processes[pid][1]
        for part, root in self.servers.items():
            totals[part] = sum(processes[pid][1] for pid in _tree(root, processes))
        own = resource.getrusage(resource.RUSAGE_SELF)
        totals["client"] = own.ru_utime + own.ru_stime
        return totals


def per_request_ms(
    before: dict[str, float], after: dict[str, float], requests: int
) -> dict[str, float]:
    """Milliseconds of CPU per request of each part between two samples."""
    return {
        part: (after[part] - before[part]) * 1000 / max(1, requests)
        for part in CpuMeter.PARTS
        if part in before and part in after
    }


def describe(cost: dict[str, float]) -> str:
    shown = ", ".join(f"{part} {ms:.2f}" for part, ms in cost.items())
    return f"{shown} (total {sum(cost.values()):.2f}) ms"
