"""The pipeline's mode stage: a tool kept for some of Reggie's modes (``Tool.modes``; the read
replica is for Super mode) is called only from a task in one of them. The mode is worked out here
from the task's own query and channel, by the same selection the agent's runtime makes
(``agents_vm.loop.modes``, a pure function); nothing the agent says counts."""

from __future__ import annotations

from typing import Any

from agents_vm.loop.modes import select_mode

from .context import CallContext, Outcome, Verdict


def task_mode(task: Any) -> tuple[str, str]:
    """Reggie's mode for ``task`` (seed 000 §8), worked out as its agent's runtime does
    (``agents_vm.loop.modes``): from the task's own query and channel, which the agent cannot
    change; a task with no query runs the full loop (super)."""
    payload = task.payload if isinstance(task.payload, dict) else {}
    query = payload.get("query")
    if not isinstance(query, str):
        return "super", "no query: the full loop"
    choice = select_mode(query, channel=str(payload.get("channel") or "text"))
    return choice.mode, choice.reason


def check_mode(ctx: CallContext) -> Verdict | None:
    """A tool kept for some of Reggie's modes (``Tool.modes``, e.g. the read replica for Super):
    the mode is the call's task's, derived here; a call on no task is refused."""
    tool = ctx.tool
    assert tool is not None
    if not tool.modes:
        return None
    modes = ", ".join(tool.modes)
    if ctx.task is None:
        return Verdict(
            Outcome.DENY,
            "mode_not_allowed",
            f"{tool.tool_id} is for {modes} mode only, which is worked out from a task: "
            "call it on one",
        )
    mode, why = task_mode(ctx.task)
    if mode not in tool.modes:
        return Verdict(
            Outcome.DENY,
            "mode_not_allowed",
            f"{tool.tool_id} is for {modes} mode only; this task is {mode} ({why})",
        )
    return None
