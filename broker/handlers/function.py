"""``function`` handlers: Python callables registered by name.

A callable takes the validated arguments and returns a JSON-serialisable result. It runs in a
worker thread so the broker can stop waiting at the timeout (the thread cannot be killed; the
call is recorded as timed out and its late result is discarded).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from django.db import close_old_connections

from brainframe.models import Tool

from .base import HandlerFailure, HandlerTimeout

#: A tool's callable: ``fn(arguments, *, call_id)`` → JSON-serialisable result.
ToolFunction = Callable[..., Any]
FUNCTIONS: dict[str, ToolFunction] = {}
_pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="tool-fn")


def functions_register(callables: dict[str, ToolFunction]) -> None:
    """Make ``callables`` available by name to tools' ``handler_config["callable"]``."""
    FUNCTIONS.update(callables)


def run(*, tool: Tool, arguments: dict[str, Any], call_id: uuid.UUID, timeout: float) -> Any:
    name = tool.handler_config.get("callable", "")
    fn = FUNCTIONS.get(name)
    if fn is None:
        raise HandlerFailure(f"no function registered as {name!r}")
    future = _pool.submit(_call_closing_db, fn, arguments, call_id)
    try:
        return future.result(timeout=timeout)
    except FutureTimeout:
        raise HandlerTimeout(f"{name} did not return within {timeout:g}s") from None


def _call_closing_db(fn: ToolFunction, arguments: dict[str, Any], call_id: uuid.UUID) -> Any:
    try:
        return fn(dict(arguments), call_id=call_id)
    finally:
        close_old_connections()  # the worker thread's connection goes back to the pool
