"""Reads that several places reuse: the tools an agent may call, and the causal chain behind an
origin or an entity."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
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
from brainframe.safety.policy.acl import RECIPIENT_ARGUMENTS
from brainframe.safety.policy.caps import AMOUNT_ARGUMENTS

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


# --- what the caps count (brainframe.safety.policy.caps) ---------------------------------------
_AMOUNT_SQL = " + ".join(
    f"CASE WHEN jsonb_typeof(input -> '{name}') = 'number' "
    f"THEN (input ->> '{name}')::numeric ELSE 0 END"
    for name in AMOUNT_ARGUMENTS
)
_RECIPIENTS_SQL = " + ".join(
    f"CASE jsonb_typeof(input -> '{name}') WHEN 'array' THEN jsonb_array_length(input -> '{name}') "
    f"WHEN 'string' THEN 1 ELSE 0 END"
    for name in RECIPIENT_ARGUMENTS
)


def executed_unreviewed_since(agent_id: str, since: datetime, until: datetime) -> int:
    """How many of the agent's calls since ``since`` executed with no human look (no approval
    before or after): the autonomy axis's hourly count. Index: (agent, -timestamp)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM tool_calls WHERE agent_id = %s AND timestamp >= %s "
            "AND timestamp < %s AND decision = 'executed'",
            [agent_id, since, until],
        )
        return int(cursor.fetchone()[0])


def authority_since(agent_id: str, since: datetime, until: datetime) -> tuple[float, int]:
    """The amounts and the recipients the agent's calls since ``since`` carried (executed or
    waiting for approval): the authority axis's daily totals."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COALESCE(SUM({_AMOUNT_SQL}), 0), COALESCE(SUM({_RECIPIENTS_SQL}), 0) "
            "FROM tool_calls WHERE agent_id = %s AND timestamp >= %s AND timestamp < %s "
            "AND decision IN ('executed', 'executed_post_review', 'pending_approval')",
            [agent_id, since, until],
        )
        amount, recipients = cursor.fetchone()
    return float(amount), int(recipients)


# --- what sequence rules count (brainframe.safety.policy.conditions, ``history``) -----------
def _like(pattern: str) -> str:
    escaped = pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%").replace("?", "_")


def history_count(
    spec: Mapping[str, Any], *, o_tag: uuid.UUID | None, agent_id: str, before: datetime
) -> int:
    """How many earlier calls (that ran or are running) match a sequence rule's ``history``
    spec, up to its ``at_least``: of the chain (``scope: chain``, its O-Tag), of the agent
    (``agent``), or of the session (``session``: the chain's, and the agent's own in any chain
    over the last ``RABS_SEQUENCE_SESSION_MINUTES``, so that a new origin does not start afresh).
    Indexed: (o_tag) or (agent, -timestamp); the count stops at ``at_least`` rows."""
    params: list[Any]
    scope = spec["scope"]
    if scope == "chain":
        if o_tag is None:
            return 0
        where, params = ["c.o_tag = %s"], [o_tag]
    elif scope == "session":
        recent = before - timedelta(minutes=settings.RABS_SEQUENCE_SESSION_MINUTES)
        if o_tag is None:
            where, params = ["c.agent_id = %s AND c.timestamp >= %s"], [agent_id, recent]
        else:
            where = ["(c.o_tag = %s OR (c.agent_id = %s AND c.timestamp >= %s))"]
            params = [o_tag, agent_id, recent]
    else:
        where, params = ["c.agent_id = %s"], [agent_id]
    where.append("c.timestamp < %s")
    params.append(before)
    minutes = spec.get("within_minutes")
    if minutes is not None:
        where.append("c.timestamp >= %s")
        params.append(before - timedelta(minutes=minutes))
    where.append("(c.decision IN ('executed', 'executed_post_review') OR c.outcome <> 'not_run')")
    if spec.get("tool"):
        where.append("c.requested_tool_id LIKE %s")
        params.append(_like(spec["tool"]))
    join = ""
    if "data_class" in spec or "external_channel" in spec:
        join = "JOIN tools t ON t.tool_id = c.requested_tool_id"
        if "data_class" in spec:
            where.append("t.data_class = %s")
            params.append(spec["data_class"])
        if "external_channel" in spec:
            where.append("t.external_channel = %s")
            params.append(bool(spec["external_channel"]))
    limit = int(spec.get("at_least", 1))
    sql = (
        f"SELECT count(*) FROM (SELECT 1 FROM tool_calls c {join} "
        f"WHERE {' AND '.join(where)} LIMIT %s) x"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, limit])
        return int(cursor.fetchone()[0])
