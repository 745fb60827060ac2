"""Capability grants (seed 004 capability requests): what an agent gets when a reviewer approves
its ``rabs.capability.request`` call, and their withdrawal when a time-boxed grant runs out.

The request itself is an ordinary tool call of the broker's own tool, so it is audited in the
agent's hash chain, waits on the board for a reviewer (its monitoring ceiling is 0: it never
graduates to running unreviewed), can be modified (a shorter time box) or rejected with a reason
the agent reads, and runs exactly once. Running it applies the grant here.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from brainframe.choices import ExecutionMode
from brainframe.models import Agent, ApprovalRequest, CapabilityGrant, Tool, ToolCall
from brainframe.services.access.acl import acl_for
from brainframe.services.trust.alignment import monitoring_level_set

Kind = CapabilityGrant.Kind
#: The broker's own tool an agent asks for a grant with.
GRANT_TOOL = "rabs.capability.request"


class GrantRefused(Exception):
    """The grant cannot be applied as asked (no such tool, a level above its ceiling…)."""


@dataclass(frozen=True)
class GrantRequest:
    kind: str
    tool_id: str = ""
    upstream: str = ""
    level: int | None = None
    hours: float | None = None
    scope: str = ""

    @classmethod
    def of(cls, arguments: dict[str, Any]) -> GrantRequest:
        return cls(
            kind=arguments["kind"],
            tool_id=arguments.get("tool_id", ""),
            upstream=arguments.get("upstream", ""),
            level=arguments.get("level"),
            hours=arguments.get("hours"),
            scope=arguments.get("scope", ""),
        )


def _approver(call: ToolCall) -> Any:
    approval = ApprovalRequest.objects.filter(tool_call=call).select_related("decided_by").first()
    return approval.decided_by if approval is not None else None


def grant_hours(asked: float | None) -> float:
    """How long a grant lasts: every grant ends. None: ``RABS_GRANT_DEFAULT_HOURS``; never more
    than ``RABS_GRANT_MAX_HOURS``."""
    hours = asked if asked else settings.RABS_GRANT_DEFAULT_HOURS
    return float(min(hours, settings.RABS_GRANT_MAX_HOURS))


def person_grant_owners(call: ToolCall) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """The person a person grant asked in ``call``'s chain is for, and the staff groups their
    ACL policy (the one that matches them now) names as its owners."""
    principal = call.o_tag.principal if call.o_tag is not None else None
    if not principal:
        return None, ()
    return principal, acl_for(principal).owners


def may_approve_person_grant(user: Any, call: ToolCall) -> bool:
    """Someone the person's ACL policy names as an owner (a member of one of its ``owners``
    groups), or staff with the ``approve_person_grant`` permission (docs/access.md)."""
    if user.has_perm("brainframe.approve_person_grant"):
        return True
    _, owners = person_grant_owners(call)
    return bool(owners) and user.groups.filter(name__in=owners).exists()


def grant_apply(*, call_id: uuid.UUID, arguments: dict[str, Any]) -> dict[str, Any]:
    """Apply the grant the approved call ``call_id`` asked for. Returns what was granted."""
    call = ToolCall.objects.select_related("agent", "o_tag").get(pk=call_id)
    asked = GrantRequest.of(arguments)
    until = timezone.now() + timedelta(hours=grant_hours(asked.hours))
    with transaction.atomic():
        grant = CapabilityGrant(
            agent=call.agent,
            kind=asked.kind,
            granted_by_call=call,
            until=until,
            approved_by=_approver(call),
        )
        if asked.kind == Kind.PERSON:
            _for_person(grant, call, asked)
        elif asked.kind == Kind.TOOL:
            grant.tool_ids = _add_access(call.agent, _tools([asked.tool_id]))
        elif asked.kind == Kind.UPSTREAM:
            tools = Tool.objects.filter(
                handler_type=Tool.HandlerType.MCP, handler_config__upstream=asked.upstream
            ).exclude(execution_mode=ExecutionMode.DISABLED)
            if not tools.exists():
                raise GrantRefused(f"upstream {asked.upstream!r} has no enabled tools")
            grant.upstream = asked.upstream
            grant.tool_ids = _add_access(call.agent, list(tools.select_for_update()))
        else:
            tool = _tools([asked.tool_id])[0]
            level = int(asked.level or 0)
            if level <= tool.monitoring_level or level > tool.monitoring_ceiling:
                raise GrantRefused(
                    f"{tool.tool_id} is at level {tool.monitoring_level} with ceiling "
                    f"{tool.monitoring_ceiling}: level {level} cannot be granted"
                )
            grant.tool_ids, grant.level_before, grant.level = (
                [tool.tool_id],
                tool.monitoring_level,
                level,
            )
            monitoring_level_set(
                tool,
                to_level=level,
                by=_approver(call),
                reason=f"capability granted to {call.agent_id} (call {call.pk})",
            )
        grant.save()
    return {
        "grant_id": str(grant.pk),
        "kind": grant.kind,
        "tool_ids": grant.tool_ids,
        "until": until.isoformat(),
    }


def _for_person(grant: CapabilityGrant, call: ToolCall, asked: GrantRequest) -> None:
    """A permission for the person whose message started the call's chain (docs/access.md,
    "Grants"): a tool their ACL policy does not give them, or a wider data scope."""
    principal = call.o_tag.principal if call.o_tag is not None else None
    person_id = (principal or {}).get("person_id")
    if not person_id:
        raise GrantRefused(
            "a person grant is asked for in a chain a known person's message started; this "
            "chain has none"
        )
    grant.person_id = uuid.UUID(person_id)
    if asked.tool_id:
        if not Tool.objects.filter(pk=asked.tool_id).exists():
            raise GrantRefused(f"no such tool: {asked.tool_id}")
        grant.tool_ids = [asked.tool_id]
    if asked.scope:
        name, _, value = asked.scope.partition(":")
        grant.scopes = {name: value}


def _tools(tool_ids: list[str]) -> list[Tool]:
    tools = list(Tool.objects.select_for_update().filter(pk__in=tool_ids))
    if len(tools) != len(tool_ids):
        raise GrantRefused(f"no such tool: {', '.join(tool_ids)}")
    return tools


def _add_access(agent: Agent, tools: list[Tool]) -> list[str]:
    """Put ``agent`` on each tool's allowlist (saved one by one: each lands in its history)."""
    added = []
    for tool in tools:
        if agent.agent_id not in tool.agent_access:
            tool.agent_access = [*tool.agent_access, agent.agent_id]
            tool.save(update_fields=["agent_access", "updated_at"])
            added.append(tool.tool_id)
    return added


def grant_withdraw(*, grant: CapabilityGrant, reason: str) -> bool:
    """Undo a grant: take the agent off the allowlists it added it to, or set the tool's level
    back (if nobody has moved it since). Returns False if it was already withdrawn."""
    with transaction.atomic():
        locked = CapabilityGrant.objects.select_for_update().get(pk=grant.pk)
        if locked.withdrawn_at is not None:
            return False
        tools = list(Tool.objects.select_for_update().filter(pk__in=locked.tool_ids))
        if locked.kind == Kind.PERSON:
            pass  # nothing to undo: the broker reads live grants from its registry snapshot
        elif locked.kind == Kind.LEVEL:
            for tool in tools:
                if tool.monitoring_level == locked.level and locked.level_before is not None:
                    monitoring_level_set(
                        tool, to_level=locked.level_before, by=None, reason=f"grant {reason}"
                    )
        else:
            for tool in tools:
                if locked.agent_id in tool.agent_access:
                    tool.agent_access = [a for a in tool.agent_access if a != locked.agent_id]
                    tool.save(update_fields=["agent_access", "updated_at"])
        locked.withdrawn_at, locked.withdrawn_reason = timezone.now(), reason[:200]
        locked.save(update_fields=["withdrawn_at", "withdrawn_reason"])
    return True


def grants_expire(*, now: datetime | None = None) -> list[str]:
    """Withdraw every time-boxed grant whose time is up (the minute job). Safe to run twice."""
    now = now or timezone.now()
    due = CapabilityGrant.objects.filter(withdrawn_at__isnull=True, until__lte=now)
    return [str(g.pk) for g in due if grant_withdraw(grant=g, reason="expired")]
