"""Reads that several places reuse: the tools an agent may call, and the causal chain behind an
origin or an entity."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from django.db.models import Prefetch, Q, QuerySet

from brainframe.choices import ExecutionMode
from brainframe.models import (
    Agent,
    ApprovalRequest,
    OriginRegistry,
    ReasonEdge,
    ReasonLog,
    Tool,
    ToolCall,
)

#: In a tool's ``agent_access``: every agent may call it (the broker's own tools, such as
#: ``rabs.capability.request``).
EVERY_AGENT = "*"


def tool_allows(tool: Tool, agent_id: str) -> bool:
    """Whether ``agent_id`` is on ``tool``'s allowlist."""
    return agent_id in tool.agent_access or EVERY_AGENT in tool.agent_access


def tools_for_agent(agent: Agent) -> QuerySet[Tool]:
    """The tools ``agent`` may call: on its allowlist and not disabled, by id."""
    return (
        Tool.objects.filter(
            Q(agent_access__contains=[agent.agent_id]) | Q(agent_access__contains=[EVERY_AGENT])
        )
        .exclude(execution_mode=ExecutionMode.DISABLED)
        .order_by("tool_id")
    )


def origin_reasons(*, o_tag: uuid.UUID) -> QuerySet[ReasonLog]:
    """Everything that came from one origin (an e-mail, a call…): one query for the reasons,
    with their tool calls, approvals and touched entities prefetched."""
    return (
        ReasonLog.objects.filter(o_tag_id=o_tag)
        .select_related("agent", "tool", "vpol")
        .prefetch_related(
            Prefetch("tool_calls", queryset=ToolCall.objects.order_by("timestamp")),
            Prefetch("approvals", queryset=ApprovalRequest.objects.order_by("created_at")),
            Prefetch("edges", queryset=ReasonEdge.objects.order_by("entity_type", "entity_id")),
        )
        .order_by("created_at")
    )


def entity_reasons(*, entity_type: str, entity_id: str) -> QuerySet[ReasonLog]:
    """Every decision that touched an entity (e.g. participant P-1042), with its origin."""
    return (
        ReasonLog.objects.filter(edges__entity_type=entity_type, edges__entity_id=entity_id)
        .select_related("o_tag", "agent", "tool")
        .distinct()
        .order_by("-created_at")
    )


@dataclass
class ChainNode:
    reason: ReasonLog
    children: list[ChainNode] = field(default_factory=list)
    depth: int = 0


def origin_chain(*, o_tag: uuid.UUID) -> tuple[OriginRegistry, list[ChainNode]]:
    """The origin and its decisions as a forest: knock-ons nested under their parent R-Tag."""
    origin = OriginRegistry.objects.get(pk=o_tag)
    reasons = list(origin_reasons(o_tag=o_tag))
    nodes = {reason.id: ChainNode(reason) for reason in reasons}
    roots: list[ChainNode] = []
    for reason in reasons:
        node = nodes[reason.id]
        parent = nodes.get(reason.parent_id) if reason.parent_id else None
        if parent is None:
            roots.append(node)
        else:
            parent.children.append(node)

    def set_depth(node: ChainNode, depth: int) -> None:
        node.depth = depth
        for child in node.children:
            set_depth(child, depth + 1)

    for root in roots:
        set_depth(root, 0)
    return origin, roots


def flatten(nodes: list[ChainNode]) -> list[ChainNode]:
    out: list[ChainNode] = []
    for node in nodes:
        out.append(node)
        out.extend(flatten(node.children))
    return out
