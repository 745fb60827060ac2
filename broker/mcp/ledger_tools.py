"""The agents ledger on the MCP face (docs/ledgers.md): the same work as the REST endpoints under
``/api/v1/turns/`` and ``/api/v1/threads/``, for agents that speak MCP."""

from __future__ import annotations

import uuid
from typing import Any

import mcp_types as types

from brainframe.models import Agent, Thread, Turn
from brainframe.services.ledger.conversations import compact, turn_append, turn_begin, turn_finish
from brainframe.services.ledger.ledgers import LedgerRefusal
from brainframe.services.ledger.transcripts import thread_context, turn_as_dict
from brainframe.services.ledger.turns import MessageSpec, message_add

from ..channels.replies import reply_submit
from ..errors import BrokerRefusal
from .results import json_text, refusal_result

_UUID = {"type": "string", "format": "uuid"}
_TEXT = {"type": "string", "minLength": 1, "maxLength": 100_000}


def _tool(name: str, title: str, description: str, props: dict[str, Any], required: list[str],
          *, read_only: bool = False) -> types.Tool:  # fmt: skip
    return types.Tool(
        name=name,
        title=title,
        description=description,
        input_schema={
            "type": "object",
            "required": required,
            "additionalProperties": False,
            "properties": props,
        },
        annotations=types.ToolAnnotations(read_only_hint=read_only, idempotent_hint=read_only),
    )


TOOLS = [
    _tool(
        "ledger.turn_start",
        "Start a turn",
        "Open a turn of your own with its query: in one of your threads, or a new one (title); "
        "task_id gives the turn your task's O-Tag.",
        {
            "text": _TEXT,
            "thread": _UUID,
            "title": {"type": "string", "maxLength": 200},
            "task_id": _UUID,
        },
        ["text"],
    ),
    _tool(
        "ledger.turn_record",
        "Record a whole turn",
        "Record a turn once it is over: its query (text), your notes, the ids of the tool calls "
        "it made, your answer; sealed as it is written.",
        {
            "text": _TEXT,
            "answer": {"type": "string", "maxLength": 100_000},
            "tool_calls": {"type": "array", "items": _UUID, "maxItems": 500},
            "notes": {"type": "array", "items": _TEXT, "maxItems": 50},
            "thread": _UUID,
            "title": {"type": "string", "maxLength": 200},
            "task_id": _UUID,
        },
        ["text", "answer"],
    ),
    _tool(
        "ledger.turn",
        "Read a turn",
        "A turn of yours with its messages; messages a person sent while you worked (role "
        "steer) appear here.",
        {"turn_id": _UUID},
        ["turn_id"],
        read_only=True,
    ),
    _tool(
        "ledger.turn_note",
        "Note in a turn",
        "Add something you say or note during an open turn.",
        {"turn_id": _UUID, "content": _TEXT},
        ["turn_id", "content"],
    ),
    _tool(
        "ledger.turn_complete",
        "Complete a turn",
        "Complete an open turn with your answer and the ids of the tool calls it made.",
        {
            "turn_id": _UUID,
            "answer": {"type": "string", "maxLength": 100_000},
            "tool_calls": {"type": "array", "items": _UUID, "maxItems": 500},
        },
        ["turn_id", "answer"],
    ),
    _tool(
        "ledger.compact",
        "Compact a thread",
        "Write your model's summary of a thread up to summarised_through as a compaction turn; "
        "first_kept: the first turn kept whole after it. Nothing is deleted.",
        {"thread": _UUID, "summary": _TEXT, "summarised_through": _UUID, "first_kept": _UUID},
        ["thread", "summary", "summarised_through"],
    ),
    _tool(
        "ledger.thread_context",
        "Read a thread's context",
        "What your model should see of a thread: the last compaction's summary and the turns "
        "kept after it.",
        {"thread": _UUID},
        ["thread"],
        read_only=True,
    ),
]
NAMES = frozenset(t.name for t in TOOLS)


class _Bad(Exception):
    def __init__(self, field: str) -> None:
        super().__init__(field)
        self.field = field


def _uuid(arguments: dict[str, Any], name: str, *, required: bool = True) -> uuid.UUID | None:
    value = arguments.get(name)
    if value is None and not required:
        return None
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise _Bad(name) from None


def _text(arguments: dict[str, Any], name: str, *, blank: bool = False) -> str:
    value = arguments.get(name, "" if blank else None)
    if not isinstance(value, str) or (not blank and not value) or len(value) > 100_000:
        raise _Bad(name)
    return value


def _turn_answer(turn_id: Any, agent: Agent) -> types.CallToolResult:
    turn = Turn.objects.filter(pk=turn_id, agent=agent).prefetch_related("messages").first()
    if turn is None:
        raise LedgerRefusal(404, "unknown_turn", "no such turn of yours", field="turn_id")
    body = turn_as_dict(turn)
    return types.CallToolResult(
        content=[types.TextContent(text=json_text(body))], structured_content=body
    )


def call(agent: Agent, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    """One ledger tool, answered as its REST endpoint would (errors the model can read)."""
    try:
        if name == "ledger.turn_start":
            turn = turn_begin(
                agent=agent,
                text=_text(arguments, "text"),
                thread_id=_uuid(arguments, "thread", required=False),
                title=str(arguments.get("title", ""))[:200],
                task_id=_uuid(arguments, "task_id", required=False),
            )
            return _turn_answer(turn.pk, agent)
        if name == "ledger.turn_record":
            notes = arguments.get("notes") or []
            raw = arguments.get("tool_calls") or []
            if not isinstance(notes, list) or not all(isinstance(n, str) and n for n in notes):
                raise _Bad("notes")
            if not isinstance(raw, list):
                raise _Bad("tool_calls")
            calls = [_uuid({"c": c}, "c") for c in raw]
            turn = turn_append(
                agent=agent,
                text=_text(arguments, "text"),
                answer=_text(arguments, "answer", blank=True),
                tool_calls=[c for c in calls if c is not None],
                notes=notes[:50],
                thread_id=_uuid(arguments, "thread", required=False),
                title=str(arguments.get("title", ""))[:200],
                task_id=_uuid(arguments, "task_id", required=False),
            )
            return _turn_answer(turn.pk, agent)
        if name == "ledger.turn":
            return _turn_answer(_uuid(arguments, "turn_id"), agent)
        if name == "ledger.turn_note":
            turn_id = _uuid(arguments, "turn_id")
            assert turn_id is not None
            spec = MessageSpec(
                "agent", _text(arguments, "content"), author=f"agent:{agent.agent_id}"
            )
            message_add(turn_id=turn_id, agent=agent, spec=spec)
            return _turn_answer(turn_id, agent)
        if name == "ledger.turn_complete":
            turn_id = _uuid(arguments, "turn_id")
            assert turn_id is not None
            raw = arguments.get("tool_calls") or []
            if not isinstance(raw, list):
                raise _Bad("tool_calls")
            calls = [_uuid({"c": c}, "c") for c in raw]
            turn_finish(
                turn_id=turn_id,
                agent=agent,
                answer=_text(arguments, "answer", blank=True),
                tool_calls=[c for c in calls if c is not None],
            )
            reply_submit(turn_id)  # the answer back to the person, as a governed call
            return _turn_answer(turn_id, agent)
        if name == "ledger.compact":
            thread_id = _uuid(arguments, "thread")
            through = _uuid(arguments, "summarised_through")
            assert thread_id is not None and through is not None
            turn = compact(
                thread_id=thread_id,
                agent=agent,
                summary=_text(arguments, "summary"),
                summarised_through=through,
                first_kept=_uuid(arguments, "first_kept", required=False),
            )
            return _turn_answer(turn.pk, agent)
        thread_id = _uuid(arguments, "thread")
        assert thread_id is not None
        thread = Thread.objects.filter(pk=thread_id, agent=agent).first()
        if thread is None:
            raise LedgerRefusal(404, "unknown_thread", "no such thread of yours", field="thread")
        body = thread_context(thread)
        return types.CallToolResult(
            content=[types.TextContent(text=json_text(body))], structured_content=body
        )
    except _Bad as bad:
        return refusal_result(
            BrokerRefusal(400, "invalid_arguments", f"{bad.field} is missing or invalid",
                          field=bad.field)
        )  # fmt: skip
    except LedgerRefusal as exc:
        return refusal_result(BrokerRefusal(exc.status, exc.code, exc.detail, field=exc.field))
