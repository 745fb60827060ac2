"""What the MCP face does, in plain synchronous functions over the broker's services: list an
agent's tools, call one through the one pipeline, read an agent's own resources.

The async server (``server.py``) runs these on worker threads. Every answer is MCP-shaped data
(``mcp_types``) built from the same ``CallAnswer`` the REST face returns.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from django.conf import settings
from django.db import DatabaseError, close_old_connections

from brainframe.choices import PermissionTier, RiskLevel
from brainframe.models import Agent, ApprovalRequest, Tool, ToolCall
from brainframe.selectors import tools_for_agent
from brainframe.services.access.credentials import Bearer, TokenRefused, agent_token_bearer
from brainframe.services.registry.tools import mcp_name_plain

from ..audit.hashing import canonical_json
from ..errors import BrokerRefusal
from ..pipeline.context import CallRequest
from ..services.calls import CallAnswer, call_answer, tool_call_submit_admitted
from . import loop_tools, names
from .results import json_text

#: Keys an MCP client may put in a ``tools/call`` request's ``_meta`` (the Tag Trinity and the
#: rest of what a REST call carries in its body).
META_REASON = "rabs/reason"
META_CONFIDENCE = "rabs/confidence"
META_TASK_ID = "rabs/task_id"
META_PARENT_R_TAG = "rabs/parent_r_tag"
META_O_TAG = "rabs/o_tag"
META_ORIGIN = "rabs/origin"
META_IDEMPOTENCY_KEY = "rabs/idempotency_key"
META_KEYS = (
    META_REASON,
    META_CONFIDENCE,
    META_TASK_ID,
    META_PARENT_R_TAG,
    META_O_TAG,
    META_ORIGIN,
    META_IDEMPOTENCY_KEY,
)
DEFAULT_REASON = "(no reason given over MCP)"

#: The follow-up tools every agent gets beside its registry tools.
APPROVAL_STATUS = "rabs.approval.status"
APPROVAL_WAIT = "rabs.approval.wait"

MAX_WAIT_SECONDS = 120.0

INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002


#: The code of a token that could not be checked (the database unreachable): 503.
AUTH_UNAVAILABLE = "auth_unavailable"


class UnknownTool(Exception):
    """Not a tool this agent may call (or no tool at all): the same answer for both."""


@dataclass
class Caller:
    """Who sent one ``/mcp`` request, as the gateway admitted its bearer token. A tools/call may
    be admitted from the process's memory (``Bearer.remembered``): then the decision's
    statement checks the agent's generation, and anything else reads the token first
    (``agent``). ``refused``: such a read refused the token, or could not be made; the gateway
    answers then as it would have at the door (401, or 503 ``auth_unavailable``)."""

    token: str
    bearer: Bearer
    refused: TokenRefused | None = None

    def reread(self) -> Bearer:
        """The bearer read for this request (itself if it was); raises TokenRefused."""
        if self.bearer.remembered:
            try:
                self.bearer = agent_token_bearer(token=self.token)
            except TokenRefused as refused:
                self.refused = refused
                raise
            except DatabaseError as exc:  # fail closed, and say so as the door would
                self.refused = TokenRefused(AUTH_UNAVAILABLE, "could not check the token")
                raise self.refused from exc
        return self.bearer

    def agent(self) -> Agent:
        return self.reread().agent


def on_worker_thread(fn: Any) -> Any:
    """Return the database connection to the pool after each call (a worker thread is not a
    request, so Django would not)."""

    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        finally:
            close_old_connections()

    return run


# --- tools/list -------------------------------------------------------------------------------


def _annotations(tool: Tool) -> types.ToolAnnotations:
    read = tool.risk_level == RiskLevel.READ
    destructive = (
        tool.risk_level == RiskLevel.CRITICAL
        or tool.permission_tier == PermissionTier.WRITE_DESTRUCTIVE
    )
    return types.ToolAnnotations(
        title=tool.tool_id,
        read_only_hint=read,
        destructive_hint=None if read else destructive,
        idempotent_hint=True if tool.idempotent else None,
        open_world_hint=True if tool.external_channel else None,
    )


def mcp_tool(tool: Tool, name: str) -> types.Tool:
    """A registry tool as listed: its MCP ``name``, its registry id as title and in ``_meta``."""
    return types.Tool(
        name=name,
        title=tool.tool_id,
        description=tool.description or tool.tool_id,
        input_schema=tool.input_schema or {"type": "object"},
        output_schema=tool.output_schema or None,
        annotations=_annotations(tool),
        _meta={names.META_TOOL_ID: tool.tool_id},
    )


FOLLOW_UP_TOOLS = [
    types.Tool(
        name=APPROVAL_STATUS,
        title="Approval status",
        description="Where a call that waits for a reviewer stands: pending, or its result, or "
        "the reason it was rejected. Give the approval_id a pending answer named.",
        input_schema={
            "type": "object",
            "required": ["approval_id"],
            "additionalProperties": False,
            "properties": {"approval_id": {"type": "string", "format": "uuid"}},
        },
        annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True),
    ),
    types.Tool(
        name=APPROVAL_WAIT,
        title="Wait for an approval",
        description="Wait for a reviewer to decide a call: up to timeout_s seconds (at most "
        "120; by default as long as a call is held, a few seconds unless the request asks for "
        "progress). Returns the executed call's result, the rejection reason, or that it still "
        "waits: then call it again.",
        input_schema={
            "type": "object",
            "required": ["approval_id"],
            "additionalProperties": False,
            "properties": {
                "approval_id": {"type": "string", "format": "uuid"},
                "timeout_s": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_SECONDS},
            },
        },
        annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True),
    ),
]
FOLLOW_UP_NAMES = frozenset(t.name for t in FOLLOW_UP_TOOLS)
#: The broker's own tools under their MCP names (``rabs_approval_wait`` …).
BUILTINS = names.Builtins([*FOLLOW_UP_TOOLS, *loop_tools.TOOLS])
APPROVAL_WAIT_NAME = mcp_name_plain(APPROVAL_WAIT)
APPROVAL_STATUS_NAME = mcp_name_plain(APPROVAL_STATUS)


@on_worker_thread
def tools_list(agent: Agent) -> list[types.Tool]:
    """Exactly the agent's allowlisted, enabled tools, then the broker's own tools, each
    under its MCP name."""
    tools = list(tools_for_agent(agent))
    by_id = names.registry_names(BUILTINS.reserved, current=False)[0]
    if any(tool.tool_id not in by_id for tool in tools):  # added since the snapshot was read
        by_id = names.registry_names(BUILTINS.reserved, current=True)[0]
    return [mcp_tool(t, by_id.get(t.tool_id, mcp_name_plain(t.tool_id))) for t in tools] + (
        BUILTINS.tools
    )


def resolve_name(name: str) -> str:
    """The dotted id of the tool a ``tools/call`` names (its MCP name or its id): one of the
    broker's own tools, else a registry id (or the name as given, which the pipeline refuses
    as it refuses any unknown tool)."""
    return BUILTINS.resolve(name) or names.registry_id(name, BUILTINS.reserved)


# --- tools/call -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Submitted:
    """The answer to a tools/call, and the approval to wait for when it is pending."""

    answer: CallAnswer
    approval_id: str | None


def _meta_uuid(meta: dict[str, Any], key: str) -> uuid.UUID | None:
    value = meta.get(key)
    if value is None:
        return None
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise BrokerRefusal(
            400, "invalid_request", f"_meta {key} is not a UUID", field=key
        ) from None


def call_request(name: str, arguments: dict[str, Any], meta: dict[str, Any]) -> CallRequest:
    """The broker's request for an MCP call: the arguments as given, the rest from ``_meta``."""
    reason = meta.get(META_REASON, DEFAULT_REASON)
    confidence = meta.get(META_CONFIDENCE)
    origin = meta.get(META_ORIGIN)
    key = meta.get(META_IDEMPOTENCY_KEY, "")
    if not isinstance(reason, str) or not reason.strip() or len(reason) > 4000:
        raise BrokerRefusal(
            400, "invalid_request", "a reason is 1-4000 characters", field=META_REASON
        )
    if confidence is not None and (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not 0 <= confidence <= 1
    ):
        raise BrokerRefusal(400, "invalid_request", "confidence is 0-1", field=META_CONFIDENCE)
    if origin is not None and not (
        isinstance(origin, dict)
        and isinstance(origin.get("origin_type"), str)
        and isinstance(origin.get("source_ref"), str)
    ):
        raise BrokerRefusal(
            400,
            "invalid_request",
            "origin is {origin_type, source_ref, metadata?}",
            field=META_ORIGIN,
        )
    if not isinstance(key, str) or len(key) > 200:
        raise BrokerRefusal(
            400, "invalid_request", "at most 200 characters", field=META_IDEMPOTENCY_KEY
        )
    return CallRequest(
        tool_id=name,
        arguments=arguments,
        reason=reason,
        confidence=confidence,
        task_id=_meta_uuid(meta, META_TASK_ID),
        parent_r_tag=_meta_uuid(meta, META_PARENT_R_TAG),
        origin=origin,
        o_tag=_meta_uuid(meta, META_O_TAG),
        idempotency_key=key,
        request_hash=hashlib_hex(
            {"tool_id": name, "arguments": arguments, **{k: meta.get(k) for k in META_KEYS}}
        ),
        face=ToolCall.Face.MCP,
    )


def hashlib_hex(value: Any) -> str:
    return hashlib.sha256(canonical_json(value, strict=False)).hexdigest()


@on_worker_thread
def tools_call(
    caller: Caller, name: str, arguments: dict[str, Any] | None, meta: dict[str, Any]
) -> Submitted:
    """Submit the call through the pipeline (audited like any other). A tool that does not exist,
    or is not on this agent's allowlist, raises UnknownTool after the attempt is recorded."""
    try:
        request = call_request(resolve_name(name), dict(arguments or {}), meta)
    except BrokerRefusal:
        caller.reread()  # refused by what the database says now, if it refuses
        raise
    answer = tool_call_submit_admitted(caller.bearer, request, caller.reread)
    if answer.body.get("code") in ("unknown_tool", "not_allowed"):
        raise UnknownTool(name)
    return Submitted(answer, answer.body.get("approval_id"))


@on_worker_thread
def approval_answer(agent: Agent, approval_id: str) -> CallAnswer | None:
    """The current answer for the call behind one of ``agent``'s approvals (None: not its)."""
    try:
        pk = uuid.UUID(str(approval_id))
    except ValueError:
        return None
    approval = (
        ApprovalRequest.objects.select_related("tool_call")
        .filter(pk=pk, agent=agent, tool_call__isnull=False)
        .first()
    )
    if approval is None or approval.tool_call is None:
        return None
    return call_answer(approval.tool_call, approval)


def settled(answer: CallAnswer) -> bool:
    """Whether a reviewer's decision (or expiry) has run its course: nothing more will change."""
    status = answer.body.get("status")
    if status in ("rejected", "expired", "denied", "invalid"):
        return True
    return status == "executed" and answer.body.get("outcome") not in (None, "pending", "not_run")


def tool_result(answer: CallAnswer, *, tool: types.Tool | None = None) -> types.CallToolResult:
    """A CallAnswer as MCP's CallToolResult (see docs/mcp.md for the table), the call's Tag
    Trinity in its ``_meta`` (``rabs/call_id``, ``rabs/r_tag``, ``rabs/o_tag``, ``rabs/vpol``)
    whatever the outcome."""
    result = _tool_result(answer, tool=tool)
    tags = {f"rabs/{k}": answer.body.get(k) for k in ("call_id", "r_tag", "o_tag", "vpol")}
    return result.model_copy(update={"meta": {k: v for k, v in tags.items() if v is not None}})


def _tool_result(answer: CallAnswer, *, tool: types.Tool | None = None) -> types.CallToolResult:
    body = answer.body
    status = body.get("status")
    tags = {k: body.get(k) for k in ("call_id", "r_tag", "o_tag", "vpol")}
    if status == "executed":
        outcome = body.get("outcome")
        if outcome == "succeeded":
            result = body.get("result")
            structured = result if isinstance(result, dict) else None
            if structured is None and tool is not None and tool.output_schema:
                structured = {"result": result}
            return types.CallToolResult(
                content=[types.TextContent(text=json_text(result))],
                structured_content=structured,
            )
        error = body.get("error") or f"the call {outcome}"
        return types.CallToolResult(
            content=[types.TextContent(text=f"{outcome}: {error}")],
            structured_content={"status": "failed", "outcome": outcome, "error": error, **tags},
            is_error=True,
        )
    if status == "pending_approval":
        waiting = (
            f"Approved, and waiting for a worker to run it (approval {body.get('approval_id')})"
            if body.get("waiting_for") == "worker"
            else f"Waiting for a human reviewer (approval {body.get('approval_id')}, until "
            f"{body.get('expires_at')})"
        )
        hint = (
            f"{waiting}. Call {APPROVAL_WAIT_NAME} or {APPROVAL_STATUS_NAME} with this "
            "approval_id to learn the outcome; do not call the tool again."
        )
        return types.CallToolResult(
            content=[types.TextContent(text=hint)],
            structured_content={
                "status": "pending_approval",
                "approval_id": body.get("approval_id"),
                "expires_at": body.get("expires_at"),
                **({"waiting_for": "worker"} if body.get("waiting_for") else {}),
                "follow_up": [APPROVAL_WAIT_NAME, APPROVAL_STATUS_NAME],
                **tags,
            },
            is_error=True,
        )
    if status in ("rejected", "expired"):
        why = body.get("rejection_reason") or "no reviewer decided in time"
        return types.CallToolResult(
            content=[types.TextContent(text=f"{status} by a reviewer: {why}")],
            structured_content={"status": status, "reason": why, **tags},
            is_error=True,
        )
    if status == "denied":
        return types.CallToolResult(
            content=[types.TextContent(text=f"denied ({body.get('code')}): {body.get('detail')}")],
            structured_content={
                "status": "denied",
                "code": body.get("code"),
                "reason": body.get("detail"),
                **tags,
            },
            is_error=True,
        )
    errors = body.get("errors") or []
    lines = [f"{e.get('path')}: {e.get('message')}" for e in errors] or [str(body.get("detail"))]
    return types.CallToolResult(
        content=[types.TextContent(text="invalid arguments:\n" + "\n".join(lines))],
        structured_content={
            "status": "invalid_arguments",
            "code": body.get("code"),
            "errors": errors,
            **tags,
        },
        is_error=True,
    )


def approval_wait_seconds() -> float:
    return float(settings.RABS_MCP_APPROVAL_WAIT_SECONDS)
