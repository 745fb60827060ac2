"""The agent's own resources on the MCP face: ``rabs://approvals``, ``rabs://calls``,
``rabs://calls/{call_id}``, ``rabs://tasks``, ``rabs://directives`` and ``loop://hooks/{id}``;
each only the calling agent's."""

from __future__ import annotations

import uuid
from typing import Any

import mcp_types as types

from brainframe.models import Agent, AgentTask, ApprovalRequest, Hook, ToolCall
from brainframe.services.hooks.lifecycle import hook_resource
from brainframe.services.memory.context import directives_preamble

from ..services.calls import call_answer
from .face import on_worker_thread
from .results import json_text


class UnknownResource(Exception):
    pass


# --- resources --------------------------------------------------------------------------------

RESOURCES = {
    "rabs://approvals": ("approvals", "Your calls waiting for a reviewer"),
    "rabs://calls": ("calls", "Your latest 50 tool calls with their decisions and outcomes"),
    "rabs://tasks": ("tasks", "Your open tasks"),
    "rabs://directives": ("directives", "The prime directives you work under"),
}
CALL_TEMPLATE = "rabs://calls/{call_id}"
HOOK_TEMPLATE = "loop://hooks/{hook_id}"


def resources_list() -> list[types.Resource]:
    return [
        types.Resource(
            uri=uri,
            name=name,
            description=description,
            mime_type="text/markdown" if name == "directives" else "application/json",
        )
        for uri, (name, description) in RESOURCES.items()
    ]


def resource_templates() -> list[types.ResourceTemplate]:
    return [
        types.ResourceTemplate(
            uri_template=CALL_TEMPLATE,
            name="call",
            description="One of your tool calls: its decision, outcome and Tag Trinity",
            mime_type="application/json",
        ),
        types.ResourceTemplate(
            uri_template=HOOK_TEMPLATE,
            name="hook",
            description="One of your hooks: its definition, state and record",
            mime_type="application/json",
        ),
    ]


@on_worker_thread
def resource_read(agent: Agent, uri: str) -> tuple[str, str]:
    """(mime type, text) of one of ``agent``'s resources; UnknownResource for anything else,
    another agent's call included."""
    if uri == "rabs://directives":
        return "text/markdown", directives_preamble()
    if uri == "rabs://approvals":
        waiting = [
            {
                "approval_id": str(a.id),
                "call_id": str(a.tool_call_id) if a.tool_call_id else None,
                "tool_id": a.tool_id,
                "status": a.status,
                "kind": a.kind,
                "timeout_at": a.timeout_at.isoformat(),
            }
            for a in ApprovalRequest.objects.filter(
                agent=agent, status__in=[ApprovalRequest.Status.PENDING, "escalated"]
            ).order_by("timeout_at")[:100]
        ]
        return "application/json", json_text(waiting)
    if uri == "rabs://calls":
        calls = ToolCall.objects.filter(agent=agent).order_by("-timestamp")[:50]
        return "application/json", json_text([_call_row(c) for c in calls])
    if uri == "rabs://tasks":
        tasks = AgentTask.objects.filter(agent=agent).exclude(status=AgentTask.Status.DONE)
        rows = [
            {
                "task_id": str(t.task_id),
                "title": t.title,
                "status": t.status,
                "priority": t.priority,
            }
            for t in tasks.order_by("-priority", "created_at")[:100]
        ]
        return "application/json", json_text(rows)
    if uri.startswith("loop://hooks/"):
        try:
            hook_pk = uuid.UUID(uri.removeprefix("loop://hooks/"))
        except ValueError:
            raise UnknownResource(uri) from None
        hook = Hook.objects.filter(pk=hook_pk, agent=agent).first()
        if hook is not None:
            return "application/json", json_text(hook_resource(hook))
    if uri.startswith("rabs://calls/"):
        try:
            pk = uuid.UUID(uri.removeprefix("rabs://calls/"))
        except ValueError:
            raise UnknownResource(uri) from None
        call = ToolCall.objects.filter(pk=pk, agent=agent).first()
        if call is not None:
            return "application/json", json_text(call_answer(call).body)
    raise UnknownResource(uri)


def _call_row(call: ToolCall) -> dict[str, Any]:
    return {
        "call_id": str(call.id),
        "tool_id": call.requested_tool_id,
        "decision": call.decision,
        "code": call.decision_code,
        "outcome": call.outcome,
        "face": call.face,
        "r_tag": str(call.r_tag_id) if call.r_tag_id else None,
        "o_tag": str(call.o_tag_id) if call.o_tag_id else None,
        "at": call.timestamp.isoformat(),
    }
