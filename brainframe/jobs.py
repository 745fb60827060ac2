"""The scheduled jobs, by name: what Celery beat runs and what ``manage.py run_job`` runs by hand.

Each app registers its jobs in its ``AppConfig.ready`` (``job_register``). Each job takes the
(Brisbane) date it runs for, is idempotent for that date, and is set-based.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

from django.utils import timezone

Job = Callable[[date], Any]
JOBS: dict[str, Job] = {}


def job_register(name: str, job: Job) -> None:
    JOBS[name] = job


def yesterday() -> date:
    return timezone.localdate() - timedelta(days=1)


def job_run(*, name: str, day: date | None = None) -> Any:
    """Run one job for ``day`` (default: yesterday, the night that just ended)."""
    if name not in JOBS:
        raise KeyError(f"unknown job {name!r}; known: {', '.join(sorted(JOBS))}")
    return JOBS[name](day or yesterday())
