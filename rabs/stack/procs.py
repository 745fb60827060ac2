"""Child processes that end with the process that started them.

A server started in a session of its own (``start_new_session=True``, so that it can be stopped
whole) is out of reach of the terminal's Ctrl-C and of a signal sent to its parent's process
group. ``preexec_fn=die_with_parent`` asks the kernel to send it SIGTERM when its parent dies,
however the parent dies (``kill -9`` included), so nothing a test or ``make run`` started keeps
running after it. Linux only (``PR_SET_PDEATHSIG``); elsewhere the child is started as before.

The signal follows the *thread* that started the child: start long-lived servers from the main
thread. The embedded PostgreSQL and Redis daemonise and are not children of anyone; their lease
watcher (``rabs.stack.embedded``) stops them instead.

This module imports nothing from Django.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from typing import Any

_PR_SET_PDEATHSIG = 1

_prctl: Any = None
with contextlib.suppress(OSError, AttributeError):  # not Linux: no prctl
    _prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved once: the child only calls it


def die_with_parent() -> None:
    """``preexec_fn`` for ``subprocess.Popen``: SIGTERM to the child when its parent dies. If the
    parent is already gone by the time the child gets here, the child exits at once."""
    if _prctl is None:  # pragma: no cover - not Linux
        return
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() == 1:  # orphaned before the request took effect
        os._exit(1)


def parent_death_signal(sig: int = signal.SIGTERM) -> None:
    """The same, for the calling process itself (a test run under ``make``)."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, sig)
