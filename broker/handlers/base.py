"""What every handler shares: its result, the two ways it reports failure, and its timeout."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

from brainframe.models import Tool


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
