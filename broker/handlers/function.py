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

#: A tool's callable: ``fn(arguments, *, call_id)`` → JSON-serialisable result; one registered
#: with ``configured=True`` also gets the calling tool's ``handler_config`` (``config=``).
ToolFunction = Callable[..., Any]
FUNCTIONS: dict[str, ToolFunction] = {}
CONFIGURED: set[str] = set()
_pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="tool-fn")


def functions_register(callables: dict[str, ToolFunction], *, configured: bool = False) -> None:
    """Make ``callables`` available by name to tools' ``handler_config["callable"]``
    (``configured``: each is also given the calling tool's ``handler_config``)."""
    FUNCTIONS.update(callables)
    if configured:
        CONFIGURED.update(callables)


def run(*, tool: Tool, arguments: dict[str, Any], call_id: uuid.UUID, timeout: float) -> Any:
    name = tool.handler_config.get("callable", "")
    fn = FUNCTIONS.get(name)
    if fn is None:
        raise HandlerFailure(f"no function registered as {name!r}")
    config = dict(tool.handler_config) if name in CONFIGURED else None
    future = _pool.submit(_call_closing_db, fn, arguments, call_id, config)
    try:
        return future.result(timeout=timeout)
    except FutureTimeout:
        raise HandlerTimeout(f"{name} did not return within {timeout:g}s") from None


def _call_closing_db(
    fn: ToolFunction, arguments: dict[str, Any], call_id: uuid.UUID, config: Any
) -> Any:
    try:
        if config is not None:
            return fn(dict(arguments), call_id=call_id, config=config)
        return fn(dict(arguments), call_id=call_id)
    finally:
        close_old_connections()  # the worker thread's connection goes back to the pool
