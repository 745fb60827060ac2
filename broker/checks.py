"""System checks run at start-up (``manage.py check``, ``runserver``, ``migrate``)."""

from __future__ import annotations

from typing import Any

from django.core.checks import Warning, register

from .handlers.sandbox import sandbox_status


@register()
def sandbox_check(app_configs: Any, **kwargs: Any) -> list[Warning]:
    """Script tools need the OS sandbox; without it they are refused (never run bare)."""
    problem = sandbox_status()
    if not problem:
        return []
    return [
        Warning(
            f"the script handlers' sandbox cannot run: {problem}",
            hint="Every call to a script tool will fail until it can; see docs/sandbox.md.",
            id="broker.W001",
        )
    ]
