"""Which background parts are alive: Celery workers and beat publish a heartbeat, and the web
side (``/healthz``, the board's banner, an approved call's state) reads them.

Approvals need both: a worker runs an approved call (nothing else does), and beat expires
overdue approvals, sends the reviewers' digests and enqueues again an approved call whose job
was lost. Each process writes ``<part>:<host>:<pid>`` into one Redis sorted set, scored with the
time, every ``BEAT_SECONDS``; a part is alive while one of its members is younger than
``FRESH_SECONDS``. A worker that shuts down cleanly takes its member out at once; one that dies
drops out within ``FRESH_SECONDS``. One round trip to read, one to write, whatever the number of
workers.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Any

from django.core.cache import cache

log = logging.getLogger(__name__)

PARTS = ("worker", "beat")
BEAT_SECONDS = 5.0
FRESH_SECONDS = 15.0
#: Members older than this are swept out by the writers (a process that died long ago).
FORGET_SECONDS = 3600.0
_KEY = "liveness:parts"


def _redis() -> Any:
    return cache.redis()  # type: ignore[attr-defined]


def _key() -> str:
    return cache.make_key(_KEY)


def member_name(part: str) -> str:
    """This process's member of the set, e.g. ``worker:web-1:4242``."""
    return f"{part}:{socket.gethostname()}:{os.getpid()}"


def heartbeat(member: str, *, now: float | None = None) -> None:
    """Say ``member`` is alive now (and forget members gone for an hour)."""
    now = time.time() if now is None else now
    pipe = _redis().pipeline(transaction=False)
    pipe.zadd(_key(), {member: now})
    pipe.zremrangebyscore(_key(), "-inf", now - FORGET_SECONDS)
    pipe.execute()


def gone(member: str) -> None:
    """``member`` stopped cleanly: no longer alive, at once."""
    _redis().zrem(_key(), member)


def alive(*, now: float | None = None) -> dict[str, list[str]]:
    """The members of each part with a fresh heartbeat, e.g. ``{"worker": ["worker:h:42"],
    "beat": []}``. Raises if Redis cannot be reached (the caller decides what that means)."""
    now = time.time() if now is None else now
    members = _redis().zrangebyscore(_key(), now - FRESH_SECONDS, "+inf")
    found: dict[str, list[str]] = {part: [] for part in PARTS}
    for raw in members:
        name = raw.decode() if isinstance(raw, bytes) else str(raw)
        part = name.partition(":")[0]
        if part in found:
            found[part].append(name)
    return found


def missing_parts() -> list[str]:
    """The parts approvals need that have no live process; every part when Redis (where the
    heartbeats are) cannot be read: the answer fails closed."""
    try:
        found = alive()
    except Exception:  # Redis down: nothing is known to be alive
        log.warning("liveness: cannot read the heartbeats", exc_info=True)
        return list(PARTS)
    return [part for part in PARTS if not found[part]]


class Heart:
    """A daemon thread beating for one process (a worker or beat) until ``stop``."""

    def __init__(self, part: str, *, interval: float = BEAT_SECONDS) -> None:
        self.member = member_name(part)
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{part}", daemon=True)

    def start(self) -> Heart:
        self._thread.start()
        return self

    def _run(self) -> None:
        while True:
            try:
                heartbeat(self.member)
            except Exception:  # Redis away for a moment: the next beat tries again
                log.warning("heartbeat of %s failed", self.member, exc_info=True)
            if self._stop.wait(self.interval):
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval + 1)
        try:
            gone(self.member)
        except Exception:
            log.warning("could not retire heartbeat %s", self.member, exc_info=True)
