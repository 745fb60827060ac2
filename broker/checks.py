"""System checks run at start-up (``manage.py check``, ``runserver``, ``migrate``)."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Info, Warning, register

from .handlers.sandbox import landlock_status, sandbox_status


@register()
def sandbox_check(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """Script tools need the OS sandbox; without it they are refused (never run bare). Landlock is
    its optional second layer."""
    problem = sandbox_status()
    if problem:
        return [
            Warning(
                f"the script handlers' sandbox cannot run: {problem}",
                hint="Every call to a script tool will fail until it can; see docs/sandbox.md.",
                id="broker.W001",
            )
        ]
    landlock = landlock_status()
    if landlock:
        return [Info(f"script sandbox without its Landlock layer: {landlock}", id="broker.I001")]
    return []
