"""Registry changes staff make to tools (admin actions call these)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from brainframe.choices import ExecutionMode, default_execution_mode
from brainframe.models import Tool


def tool_set_enabled(*, tools: Iterable[Tool], enabled: bool) -> int:
    """Disable tools, or re-enable them in their risk level's default mode. Returns the count.

    Saves row by row (not a bulk update) so each change lands in the tool's history.
    """
    changed = 0
    with transaction.atomic():
        for tool in tools:
            if enabled and tool.execution_mode == ExecutionMode.DISABLED:
                tool.execution_mode = default_execution_mode(tool.risk_level)
            elif not enabled and tool.execution_mode != ExecutionMode.DISABLED:
                tool.execution_mode = ExecutionMode.DISABLED
            else:
                continue
            tool.save(update_fields=["execution_mode", "updated_at"])
            changed += 1
    return changed


def tool_set_execution_mode(*, tools: Iterable[Tool], mode: str) -> int:
    """Set the execution mode of several tools at once. Returns how many changed."""
    if mode not in ExecutionMode.values:
        raise ValueError(f"unknown execution mode {mode!r}")
    changed = 0
    with transaction.atomic():
        for tool in tools:
            if tool.execution_mode != mode:
                tool.execution_mode = mode
                tool.save(update_fields=["execution_mode", "updated_at"])
                changed += 1
    return changed
