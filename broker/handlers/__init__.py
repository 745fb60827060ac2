"""Execution backends, one per ``handler_type``. Every handler has a timeout, and a handler's
failure is a recorded outcome (failed / timed out), never an exception out of the broker.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from brainframe.models import Tool, ToolCall


@dataclass(frozen=True)
class HandlerResult:
    outcome: str  # ToolCall.Outcome: succeeded / failed / timed_out
    output: Any = None
    error: str = ""
    duration_ms: int = 0


class HandlerFailure(Exception):
    """A handler could not do its job; the message is recorded as the call's error."""


class HandlerTimeout(Exception):
    pass


def handler_timeout(tool: Tool) -> float:
    return float(tool.handler_config.get("timeout_s") or settings.RABS_HANDLER_TIMEOUT_SECONDS)


def run_handler(*, tool: Tool, arguments: dict[str, Any], call_id: uuid.UUID) -> HandlerResult:
    from . import api, function, script, sql

    runners: dict[str, Any] = {
        Tool.HandlerType.FUNCTION: function.run,
        Tool.HandlerType.SQL: sql.run,
        Tool.HandlerType.API: api.run,
        Tool.HandlerType.SCRIPT: script.run,
    }
    started = time.monotonic()
    try:
        runner = runners[tool.handler_type]
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
    from ..pipeline.stages import schema_validators

    fast, validator = schema_validators(tool.output_schema)
    if fast.is_valid(output):
        return []
    return [
        f"/{'/'.join(str(p) for p in e.absolute_path)}: {e.message}"
        for e in validator.iter_errors(output)
    ][:10]


def _elapsed(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
