"""The loop's hot-swappable handlers (seed 004 "Self-Managed Handlers", ``reload_handlers``).

A handler is a named step of the loop the agent may rewrite for itself: its configuration, and
for some its code. They are kept in the agent's private store (``handlers`` in
``agent_memory.db``) and written there only after the control plane approved the change: the
loop's ``update_handler`` tool sends the governed broker tool ``agent.update_handler`` (decided,
reviewed, audited like any call), and stores the handler once that call executed. A worker reads
the handlers once, when it starts (``handlers_load``), so a change takes effect after a restart
— asked for with the governed ``agent.restart_self`` — and never halfway through a task.

Handlers:

- ``loop`` (configuration only): ``{"poll_seconds": 5}``.
- ``answer``: ``def handle(text, context)`` → the text the person is answered with (``context``:
  ``channel``, ``persona``, ``agent_id``). Default: the text unchanged.
- ``result``: ``def handle(tool_id, outcome, words)`` → what the Dreamer is told about a call
  (``words`` is the default wording). Default: ``words``.

Code runs in the agent's own sandbox (its VM), in a namespace with a small set of builtins; a
handler that does not compile, or raises, is replaced by the default for that call and logged.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger("agents_vm.loop.handlers")

NAMES = ("loop", "answer", "result")
MAX_CODE = 20_000
_SAFE_NAMES = (
    "abs",
    "all",
    "any",
    "bool",
    "dict",
    "enumerate",
    "filter",
    "float",
    "format",
    "int",
    "isinstance",
    "len",
    "list",
    "map",
    "max",
    "min",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "sorted",
    "str",
    "sum",
    "tuple",
    "zip",
    "ValueError",
    "TypeError",
)
_SAFE_BUILTINS = {name: getattr(builtins, name) for name in _SAFE_NAMES}


class HandlerError(ValueError):
    """A handler update that cannot be stored (unknown name, code that does not compile)."""


def handler_check(name: str, config: Any, code: Any) -> dict[str, Any]:
    """The record to store for ``name`` (what ``agent.update_handler`` carries), or HandlerError."""
    if name not in NAMES:
        raise HandlerError(f"name: one of {', '.join(NAMES)}")
    if config is not None and not isinstance(config, dict):
        raise HandlerError("config must be a JSON object")
    record: dict[str, Any] = dict(config or {})
    if code is not None:
        if name == "loop":
            raise HandlerError("the loop handler takes configuration only")
        if not isinstance(code, str) or len(code) > MAX_CODE:
            raise HandlerError(f"code: Python text of at most {MAX_CODE} characters")
        _compile(name, code)
        record["code"] = code
    return record


def _compile(name: str, code: str) -> Callable[..., Any]:
    namespace: dict[str, Any] = {"__builtins__": _SAFE_BUILTINS}
    try:
        exec(compile(code, f"<handler {name}>", "exec"), namespace)
    except Exception as exc:
        raise HandlerError(f"code does not load: {type(exc).__name__}: {exc}") from exc
    handle = namespace.get("handle")
    if not callable(handle):
        raise HandlerError("code must define handle(...)")
    return handle


@dataclass
class Handlers:
    """The handlers a worker started with."""

    stored: dict[str, dict[str, Any]] = field(default_factory=dict)
    _code: dict[str, Callable[..., Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, stored: dict[str, dict[str, Any]]) -> Handlers:
        handlers = cls(stored=dict(stored))
        for name, record in stored.items():
            code = record.get("code") if isinstance(record, dict) else None
            if isinstance(code, str) and name in NAMES:
                try:
                    handlers._code[name] = _compile(name, code)
                except HandlerError as exc:
                    logger.warning("handler %s not loaded (the default runs): %s", name, exc)
        return handlers

    def config(self, name: str) -> dict[str, Any]:
        record = self.stored.get(name)
        return {k: v for k, v in (record or {}).items() if k != "code"}

    def _run(self, name: str, default: Any, *args: Any) -> Any:
        handle = self._code.get(name)
        if handle is None:
            return default
        try:
            value = handle(*args)
        except Exception as exc:
            logger.warning("handler %s failed (the default is used): %s", name, exc)
            return default
        if not isinstance(value, str):
            logger.warning("handler %s returned %s, not text", name, type(value).__name__)
            return default
        return value

    def answer(self, text: str, context: dict[str, Any]) -> str:
        return str(self._run("answer", text, text, dict(context)))

    def result(self, tool_id: str, outcome: dict[str, Any], words: str) -> str:
        return str(self._run("result", words, tool_id, dict(outcome), words))


def handlers_load(stored: dict[str, dict[str, Any]]) -> Handlers:
    return Handlers.load(stored)
