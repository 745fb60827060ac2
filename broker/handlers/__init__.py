"""Execution backends, one per ``handler_type``. Every handler has a timeout, and a handler's
failure is a recorded outcome (failed / timed out), never an exception out of the broker.

The backends are registered by ``BrokerConfig.ready`` (``runner_register``); nothing here
depends on which exist.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from brainframe.models import Tool, ToolCall

from ..pipeline.validation import schema_validators
from .base import HandlerFailure, HandlerResult, HandlerTimeout, handler_timeout

__all__ = [
    "HandlerFailure",
    "HandlerResult",
    "HandlerTimeout",
    "handler_timeout",
    "run_handler",
    "runner_register",
]

#: A backend: runs the tool with validated arguments, returns its JSON-able output or raises
#: HandlerFailure / HandlerTimeout.
Runner = Callable[..., Any]
RUNNERS: dict[str, Runner] = {}


def runner_register(handler_type: str, runner: Runner) -> None:
    RUNNERS[handler_type] = runner


def run_handler(*, tool: Tool, arguments: dict[str, Any], call_id: uuid.UUID) -> HandlerResult:
    started = time.monotonic()
    try:
        runner = RUNNERS.get(tool.handler_type)
        if runner is None:
            raise HandlerFailure(f"no handler backend for {tool.handler_type!r}")
        output = runner(
            tool=tool, arguments=arguments, call_id=call_id, timeout=handler_timeout(tool)
        )
    except HandlerTimeout as exc:
        return HandlerResult(
            ToolCall.Outcome.TIMED_OUT, None, str(exc) or "timed out", _elapsed(started)
        )
    except HandlerFailure as exc:
        return HandlerResult(ToolCall.Outcome.FAILED, None, str(exc), _elapsed(started))
    except Exception as exc:  # a bug in a handler is still an outcome, not a 500
        return HandlerResult(
            ToolCall.Outcome.FAILED, None, f"{type(exc).__name__}: {exc}", _elapsed(started)
        )
    try:
        # What is stored (JSONB) must be what is hashed: normalise to plain JSON now.
        output = json.loads(json.dumps(output, default=str, allow_nan=False))
    except ValueError as exc:
        return HandlerResult(
            ToolCall.Outcome.FAILED, None, f"output is not JSON: {exc}", _elapsed(started)
        )
    problems = output_schema_errors(tool, output)
    if problems:
        return HandlerResult(
            ToolCall.Outcome.FAILED,
            output,
            "output_schema: " + "; ".join(problems),
            _elapsed(started),
        )
    return HandlerResult(ToolCall.Outcome.SUCCEEDED, output, "", _elapsed(started))


def output_schema_errors(tool: Tool, output: Any) -> list[str]:
    if not tool.output_schema:
        return []
    fast, validator = schema_validators(tool.output_schema)
    if fast.is_valid(output):
        return []
    return [
        f"/{'/'.join(str(p) for p in e.absolute_path)}: {e.message}"
        for e in validator.iter_errors(output)
    ][:10]


def _elapsed(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
