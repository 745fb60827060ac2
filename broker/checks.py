"""System checks run at start-up (``manage.py check``, ``runserver``, ``migrate``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Info, Warning, register
from django.db import DatabaseError

from .handlers.sandbox import landlock_status, sandbox_status, seccomp_status


@register()
def sandbox_check(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """Script tools need the OS sandbox; without it they are refused (never run bare). Landlock
    and the seccomp filter are its optional further layers."""
    problem = sandbox_status()
    if problem:
        return [
            Warning(
                f"the script handlers' sandbox cannot run: {problem}",
                hint="Every call to a script tool will fail until it can; see docs/sandbox.md.",
                id="broker.W001",
            )
        ]
    found: list[CheckMessage] = []
    landlock = landlock_status()
    if landlock:
        found.append(
            Info(f"script sandbox without its Landlock layer: {landlock}", id="broker.I001")
        )
    seccomp = seccomp_status()
    if seccomp:
        found.append(
            Info(f"script sandbox without its seccomp filter: {seccomp}", id="broker.I002")
        )
    return found


@register()
def checkpoint_check(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """The signed checkpoints are being written: nothing in the event log has waited longer than
    ``RABS_CHECKPOINT_MAX_AGE_MINUTES`` for one (the beat's job is down, or has no key)."""
    # Imported here: the checks module loads with the app registry, before models may be.
    from .audit.checkpoints import checkpoints_overdue

    max_age = timedelta(minutes=settings.RABS_CHECKPOINT_MAX_AGE_MINUTES)
    try:
        oldest = checkpoints_overdue(max_age=max_age)
    except (DatabaseError, RuntimeError):
        # No database yet (before migrate), unreachable, or not to be touched where the checks
        # run (a Celery worker's start runs them too; a test that holds no database): this
        # check only warns, and is not the one to say so.
        return []
    if oldest is None:
        return []
    return [
        Warning(
            f"no signed checkpoint since {oldest:%Y-%m-%d %H:%M:%S} UTC (more than "
            f"{settings.RABS_CHECKPOINT_MAX_AGE_MINUTES} minutes): a cut tail or re-hashed "
            "history since then would not show",
            hint="Run Celery beat and a worker with the checkpoint key (RABS_CHECKPOINT_KEY or "
            "RABS_CHECKPOINT_KEY_FILE); `manage.py run_job checkpoint` writes one now.",
            id="broker.W002",
        )
    ]
