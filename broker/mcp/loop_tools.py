"""The agent's own tools on the MCP face beside its registry tools: ``rabs.discover`` (tools and
proven plans for a goal), ``loop.enable_hook`` and ``loop.hook_state`` (seed 003's hook manager),
``loop.yield_turn`` (seed 004: answered by the server, which sleeps without a thread), and the
agents ledger's ``ledger.*`` (``broker/mcp/ledger_tools.py``).
Each answers as its REST endpoint does."""

from __future__ import annotations

import uuid
from typing import Any

import mcp_types as types
from django.db import close_old_connections

from brainframe.models import Agent, Hook
from brainframe.services.hooks.checks import HookError
from brainframe.services.hooks.lifecycle import hook_propose, hook_resource, hook_set_enabled
from brainframe.services.memory.discovery import discover

from ..errors import BrokerRefusal
from . import ledger_tools
from .results import json_text, refusal_result

DISCOVER = "rabs.discover"
ENABLE_HOOK = "loop.enable_hook"
HOOK_STATE = "loop.hook_state"
YIELD_TURN = "loop.yield_turn"

YIELD_TOOL = types.Tool(
    name=YIELD_TURN,
    title="Yield your turn",
    description="End your turn and sleep until something new arrives for you: a person's "
    "message, a task, a reviewer's decision on one of your calls, a hook's message. Answers what "
    "arrived (empty when timeout_s passed first). Yield whenever you have nothing left to do: "
    "calling tools on and on with no new input trips the loop latch (loop_latched).",
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "properties": {"timeout_s": {"type": "number", "minimum": 0, "maximum": 600}},
    },
    annotations=types.ToolAnnotations(read_only_hint=True),
)


DISCOVER_TOOL = types.Tool(
    name=DISCOVER,
    title="Discover tools and proven plans",
    description="For a goal in words: the tools you may call and your own saved plans that fit "
    "it (full text and meaning), each plan with its steps, their tools and dependencies, and "
    "how it ended. Nothing is executed.",
    input_schema={
        "type": "object",
        "required": ["query"],
        "additionalProperties": False,
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 1000},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
        },
    },
    annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True),
)


HOOK_TOOLS = [
    types.Tool(
        name=ENABLE_HOOK,
        title="Propose a hook",
        description="Propose automation for yourself (docs/hooks.md): kind deterministic, llm, "
        "hybrid or scheduled; events it listens to; a condition over event.* / origin.*; a "
        "prompt for your model; a cron schedule; effects wake (a task for you), message (for "
        "your next turn) or invoke (a tool call, governed like any). Live at once when policy "
        "allows; otherwise staff review it. Answers the hook (loop://hooks/{id}).",
        input_schema={
            "type": "object",
            "required": ["name", "kind", "effects"],
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 120},
                "description": {"type": "string", "maxLength": 2000},
                "kind": {"enum": ["deterministic", "llm", "scheduled", "hybrid"]},
                "events": {"type": "array", "items": {"type": "string"}},
                "condition": {"type": ["object", "null"]},
                "prompt": {"type": "string", "maxLength": 4000},
                "model": {"type": "string", "maxLength": 120},
                "schedule": {"type": "string", "maxLength": 120},
                "timezone": {"type": "string", "maxLength": 64},
                "effects": {"type": "array", "minItems": 1, "maxItems": 5},
                "max_fires_per_hour": {"type": "integer", "minimum": 1, "maximum": 600},
            },
        },
    ),
    types.Tool(
        name=HOOK_STATE,
        title="Enable or disable a hook",
        description="Turn one of your approved hooks on or off.",
        input_schema={
            "type": "object",
            "required": ["hook_id", "enabled"],
            "additionalProperties": False,
            "properties": {
                "hook_id": {"type": "string", "format": "uuid"},
                "enabled": {"type": "boolean"},
                "reason": {"type": "string", "maxLength": 500},
            },
        },
        annotations=types.ToolAnnotations(idempotent_hint=True),
    ),
]
HOOK_TOOL_NAMES = frozenset(t.name for t in HOOK_TOOLS)
TOOLS = [DISCOVER_TOOL, *HOOK_TOOLS, YIELD_TOOL, *ledger_tools.TOOLS]
NAMES = frozenset(t.name for t in TOOLS)


def _hook_refusal(error: HookError) -> types.CallToolResult:
    return refusal_result(BrokerRefusal(error.status, error.code, error.detail, field=error.field))


def hook_tool_result(agent: Agent, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    """``loop.enable_hook`` and ``loop.hook_state``: the REST endpoints' work, over MCP."""
    try:
        if name == ENABLE_HOOK:
            hook = hook_propose(
                agent=agent, definition=dict(arguments), proposed_by=f"agent:{agent.agent_id}"
            )
        else:
            try:
                pk = uuid.UUID(str(arguments.get("hook_id")))
            except ValueError:
                pk = None
            found = Hook.objects.filter(pk=pk, agent=agent).first() if pk else None
            if found is None or not isinstance(arguments.get("enabled"), bool):
                return refusal_result(
                    BrokerRefusal(404, "unknown_hook", "no such hook of yours", field="hook_id")
                )
            hook = hook_set_enabled(
                hook=found,
                enabled=arguments["enabled"],
                agent=agent,
                reason=str(arguments.get("reason", ""))[:500],
            )
    except HookError as error:
        return _hook_refusal(error)
    resource = hook_resource(hook)
    return types.CallToolResult(
        content=[types.TextContent(text=json_text(resource))], structured_content=resource
    )


def discover_result(agent: Agent, arguments: dict[str, Any]) -> types.CallToolResult:
    """``rabs.discover``: the same answer as ``GET /api/v1/discover/``."""
    query, limit = arguments.get("query"), arguments.get("limit", 10)
    if (
        not isinstance(query, str)
        or not query.strip()
        or len(query) > 1000
        or isinstance(limit, bool)
        or not isinstance(limit, int)
        or not 1 <= limit <= 50
    ):
        return refusal_result(
            BrokerRefusal(
                400, "invalid_arguments", "query is 1-1000 characters; limit is 1-50", field="query"
            )
        )
    found = discover(agent=agent, query=query.strip(), limit=limit)
    return types.CallToolResult(
        content=[types.TextContent(text=json_text(found))], structured_content=found
    )


def call(agent: Agent, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    """Run one of these tools (on a worker thread; its connection goes back afterwards)."""
    try:
        if name == DISCOVER:
            return discover_result(agent, arguments)
        if name in ledger_tools.NAMES:
            return ledger_tools.call(agent, name, arguments)
        return hook_tool_result(agent, name, arguments)
    finally:
        close_old_connections()
