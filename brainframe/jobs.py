"""The scheduled jobs, by name: what Celery beat runs and what ``manage.py run_job`` runs by hand.

Each takes the (Brisbane) date it runs for, is idempotent for that date, and is set-based.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

from django.utils import timezone


def _expire_approvals(day: date) -> Any:
    from broker.services.approvals import (
        approvals_expire,
        approvals_recover,
        calls_interrupted_seal,
    )

    return {
        "expired": approvals_expire(),
        "re-enqueued": approvals_recover(),
        "interrupted": calls_interrupted_seal(),
    }


def _alignment(day: date) -> Any:
    from brainframe.services.alignment import alignment_nightly

    return alignment_nightly(day=day)


def _decay(day: date) -> Any:
    from brainframe.services.relevance import decay_run

    # The 02:00 run on the morning after ``day`` is that night's decay.
    return decay_run(night=day + timedelta(days=1))


def _index(day: date) -> Any:
    from brainframe.services.indexing import index_sweep

    return index_sweep()


JOBS: dict[str, Callable[[date], Any]] = {
    "index": _index,
    "decay": _decay,
    "expire_approvals": _expire_approvals,
    "alignment": _alignment,
}


def yesterday() -> date:
    return timezone.localdate() - timedelta(days=1)


def job_run(*, name: str, day: date | None = None) -> Any:
    """Run one job for ``day`` (default: yesterday, the night that just ended)."""
    if name not in JOBS:
        raise KeyError(f"unknown job {name!r}; known: {', '.join(sorted(JOBS))}")
    return JOBS[name](day or yesterday())
