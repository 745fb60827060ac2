"""Registry changes staff make to tools (admin actions call these), and how a tool is put to a
reviewer."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

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


_RISK_WORDS = {
    "read": "reads data and changes nothing",
    "write": "changes something in the business",
    "critical": "makes a change that is hard to undo",
}


def reviewer_summary(tool: Tool) -> str:
    """What running ``tool`` does, in a reviewer's words: the registry's reviewer summary, or a
    neutral sentence from its risk level. Never the description, which is written for agents
    (how to call it) and is not a reviewer's business."""
    written = (tool.reviewer_summary or "").strip()
    if written:
        return written
    what = _RISK_WORDS.get(tool.risk_level, "runs as registered")
    return f"{tool.get_category_display()} tool: it {what}; see its arguments below."


def call_summary(*, agent_name: str, tool: Tool, arguments: dict[str, Any]) -> str:
    """One line for a call a reviewer is asked about (approval cards, e-mails, digests)."""
    shown = []
    for key, value in list(arguments.items())[:8]:
        text = json.dumps(value, ensure_ascii=False)
        shown.append(f"{key}={text if len(text) <= 60 else text[:57] + '…'}")
    given = ", ".join(shown) or "no arguments"
    return f"{agent_name} asks to run {tool.tool_id} with {given}. {reviewer_summary(tool)}"
