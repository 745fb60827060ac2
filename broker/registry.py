"""The registry as the broker reads it on every call: tools, active V-Pols, prime directives and
constitution rules and ACL policies, kept in process memory and reloaded when any of them changes.

Every statement that writes one of those tables (the admin, services, jobs, raw SQL) gives the
registry a new random generation token in the same transaction (a trigger, migration 0014).
A call reads the token first (one primary-key row) and uses the process's snapshot only when the
tokens match; otherwise it loads a new one. So a change is in force from the first call after it
commits, in every process, and since tokens are random a rolled-back change can never make a
stale snapshot look current. What a snapshot holds is read after its token, so it is never older
than the token says.

A signed tool call whose agent and key the process remembers does not read the token at all:
it decides under the process's snapshot and the statement that records the decision checks
that snapshot's token (``broker.pipeline.context.Expectation``, migration 0021).
"""

from __future__ import annotations

import fnmatch
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection

from brainframe.instances import model_copy
from brainframe.models import (
    CapabilityGrant,
    ConstitutionRule,
    MCPUpstream,
    PrimeDirective,
    Tool,
    ValidationPolicy,
)
from brainframe.services.access.acl import acl_specs
from brainframe.services.registry.policies import governing_policy
from brainframe.services.registry.tools import mcp_names

from .upstream_client import upstream_current

_NONE: Any = object()
__all__ = [
    "Snapshot",
    "governing_policy",
    "registry_snapshot",
    "registry_token",
    "tool_upstream",
    "tool_upstream_checked",
    "upstream_tool_problem",
]


@dataclass(frozen=True)
class LiveGrant:
    """A capability grant not withdrawn (docs/access.md, "Grants"); ``until`` None: until
    revoked. The broker checks ``until`` itself, so a grant ends on time even before the minute
    job withdraws it."""

    grant_id: str
    tool_patterns: tuple[str, ...]
    scopes: dict[str, str]
    until: datetime | None

    def live(self, now: datetime) -> bool:
        return self.until is None or self.until > now

    def covers_tool(self, tool_id: str) -> bool:
        return any(fnmatch.fnmatchcase(tool_id, pat) for pat in self.tool_patterns)


@dataclass
class Snapshot:
    token: str | None
    policies: list[ValidationPolicy]
    # (code, escalation, predicates) of active directives that have predicates.
    directives: list[tuple[str, str, list[Any]]]
    constitution: list[tuple[str, str, list[Any]]]
    # Active ACL policies' specs with their versions, highest priority first.
    acl: list[dict[str, Any]] = field(default_factory=list)
    # Live grants: a person's (by person id), and an agent's access to a tool (agent, tool).
    person_grants: dict[str, list[LiveGrant]] = field(default_factory=dict)
    agent_grants: dict[tuple[str, str], LiveGrant] = field(default_factory=dict)
    # Filled as calls name them; an unknown tool id is not remembered.
    _tools: dict[str, Tool] = field(default_factory=dict)
    _governing: dict[str, ValidationPolicy | None] = field(default_factory=dict)
    # Every registry id's name on the MCP face, and back (read on first use).
    _mcp: tuple[dict[str, str], dict[str, str]] | None = None

    def mcp_names(self, reserved: frozenset[str]) -> tuple[dict[str, str], dict[str, str]]:
        """(registry id → MCP name, MCP name → registry id) for every tool of the registry,
        the broker's own tools' names ``reserved`` (``mcp_names``)."""
        found = self._mcp
        if found is None:
            ids = Tool.objects.values_list("tool_id", flat=True)
            names = mcp_names(ids, reserved=reserved)
            found = (names, {name: tool_id for tool_id, name in names.items()})
            if self.token is not None:
                self._mcp = found
        return found

    def tool(self, tool_id: str) -> Tool | None:
        """The registry entry (a copy the caller may change), or None. A tool that forwards to
        an upstream MCP server carries the upstream as this snapshot read it
        (``tool_upstream``)."""
        tool = self._tools.get(tool_id)
        if tool is None:
            tool = Tool.objects.filter(pk=tool_id).first()
            if tool is None:
                return None
            if tool.handler_type == Tool.HandlerType.MCP:
                setattr(tool, _UPSTREAM, _enabled_upstream(tool))
            if self.token is not None:
                self._tools[tool_id] = tool
        return model_copy(tool)

    def governing_policy(self, tool: Tool) -> ValidationPolicy | None:
        found = self._governing.get(tool.tool_id, _NONE)
        if found is _NONE:
            found = governing_policy(tool, self.policies)
            if self.token is not None:
                self._governing[tool.tool_id] = found
        return found


# The attribute under which a snapshot's tool carries its upstream (None: none enabled).
_UPSTREAM = "_rabs_upstream"


def _enabled_upstream(tool: Tool) -> MCPUpstream | None:
    name = (tool.handler_config or {}).get("upstream", "")
    return MCPUpstream.objects.filter(pk=name, enabled=True).first()


def tool_upstream(tool: Tool) -> MCPUpstream | None:
    """The enabled upstream MCP server an ``mcp`` tool forwards to, or None: as the registry
    snapshot the call was decided under read it (upstreams are part of the registry's
    generation, migration 0038), else (a tool read elsewhere: a worker running an approved
    call) read now."""
    found = getattr(tool, _UPSTREAM, _NONE)
    return _enabled_upstream(tool) if found is _NONE else found


def upstream_tool_problem(tool: Tool, upstream: MCPUpstream) -> str | None:
    """Why a call of an imported tool is refused now (None: the upstream lists the definition
    staff accepted). A tool registered by hand (no accepted definition) is not checked."""
    accepted = (tool.handler_config or {}).get("definition_sha256")
    if not accepted:
        return None
    name = tool.handler_config.get("tool", "")
    listed = (upstream.listed or {}).get(name)
    if listed == accepted:
        return None
    if listed is None:
        what = f"upstream {upstream.name} no longer offers {name!r}"
    else:
        what = f"upstream {upstream.name} changed the definition of {name!r}"
    return (
        f"{what} since staff accepted it: refused until staff accept the change "
        "(admin: Upstream tool changes)"
    )


def tool_upstream_checked(tool: Tool) -> tuple[MCPUpstream | None, str | None]:
    """The enabled upstream an ``mcp`` tool forwards to (``tool_upstream``), with a listing no
    older than its last change notice (``upstream_current``), and why a call of the tool is
    refused now (None: not refused). Raises what reaching the upstream raises, when it has to
    be listed first."""
    upstream = tool_upstream(tool)
    if upstream is None or not (tool.handler_config or {}).get("definition_sha256"):
        return upstream, None
    upstream = upstream_current(upstream)
    return upstream, upstream_tool_problem(tool, upstream)


_current: Snapshot | None = None
_lock = threading.Lock()


def registry_token() -> str | None:
    """The registry's generation token as this connection sees it (None: not recorded, so
    nothing is cached)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT token::text FROM registry_generation WHERE id = 1")
        row = cursor.fetchone()
    return row[0] if row else None


def registry_snapshot(token: str | None = None) -> Snapshot:
    """The registry as of ``token`` (read just now by the caller, e.g. with the signed request's
    key; else read here): this process's snapshot if it matches, else a fresh one."""
    global _current
    if token is None:
        token = registry_token()
    snapshot = _current
    if snapshot is None or token is None or snapshot.token != token:
        with _lock:  # one load per change, not one per thread that noticed it
            snapshot = _current
            if snapshot is None or token is None or snapshot.token != token:
                snapshot = _current = _load(token)
    return snapshot


def registry_remembered() -> Snapshot | None:
    """This process's snapshot as it is, without reading the token: for a caller that has its
    token checked by the statement that acts on it (``Expectation``), else None."""
    snapshot = _current
    return snapshot if snapshot is not None and snapshot.token is not None else None


def _load(token: str | None) -> Snapshot:
    return Snapshot(
        token=token,
        policies=list(ValidationPolicy.objects.filter(active=True)),
        directives=[
            (code, escalation, predicates)
            for code, escalation, predicates in PrimeDirective.objects.filter(active=True)
            .exclude(predicates=[])
            .values_list("code", "escalation", "predicates")
        ],
        constitution=[
            (code, enforcement, predicates)
            for code, enforcement, predicates in ConstitutionRule.objects.exclude(predicates=[])
            .order_by("number")
            .values_list("code", "enforcement", "predicates")
        ],
        acl=acl_specs(),
        **_live_grants(),
    )


def _live_grants() -> dict[str, Any]:
    person: dict[str, list[LiveGrant]] = {}
    agent: dict[tuple[str, str], LiveGrant] = {}
    for grant in CapabilityGrant.objects.filter(withdrawn_at__isnull=True).exclude(
        kind=CapabilityGrant.Kind.LEVEL
    ):
        live = LiveGrant(str(grant.pk), tuple(grant.tool_ids), dict(grant.scopes), grant.until)
        if grant.kind == CapabilityGrant.Kind.PERSON:
            person.setdefault(str(grant.person_id), []).append(live)
        else:
            for tool_id in grant.tool_ids:
                agent[(grant.agent_id, tool_id)] = live
    return {"person_grants": person, "agent_grants": agent}
