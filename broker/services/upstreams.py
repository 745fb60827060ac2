"""Putting an upstream MCP server's tools into the registry, and keeping them honest.

``upstream_import`` lists the upstream's tools and creates a registry entry for each new one:
**disabled** until staff enable it, its schemas copied, its risk level and permission tier
proposed from the upstream's annotations (``destructiveHint`` → critical, reviewed; neither →
write, reviewed; ``readOnlyHint`` → read, executed at once when enabled, but only from a
*trusted* upstream: from an untrusted one it is a claim, and the tool is proposed as write,
reviewed), all of which staff may change.

Every listing (an import, ``upstream_relist`` on the upstream's ``tools/list_changed`` notice or
the periodic job) is recorded on the upstream (``listed``: each tool's definition hash), and a
tool whose description, schemas or annotations changed upstream (or that is gone) is flagged as
an ``UpstreamToolChange``. Every call of an imported tool compares the definition staff accepted
with the recorded listing (``upstream_tool_problem``, a dict lookup) and is refused
(``upstream_tool_changed``) until staff accept the change: an upstream cannot change what a tool
does under the registry (a "rug pull") between two imports.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from django.db import transaction
from django.utils import timezone
from mcp.shared.exceptions import MCPError

from brainframe.choices import (
    ContextBucket,
    DataClass,
    ExecutionMode,
    RiskLevel,
    default_monitoring_ceiling,
    default_permission_tier,
)
from brainframe.models import MCPUpstream, Tool, UpstreamToolChange

from ..audit.hashing import canonical_json
from ..upstream_client import (
    UpstreamTimeout,
    UpstreamUnavailable,
    upstream_listed,
    upstream_tools,
)

#: The parts of an upstream's tool definition the registry depends on.
DEFINITION_FIELDS = ("description", "inputSchema", "outputSchema", "annotations")


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    flagged: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        parts = [
            f"{len(self.created)} new (disabled until you enable them)",
            f"{len(self.unchanged)} unchanged",
            f"{len(self.flagged)} changed upstream and flagged for review",
        ]
        return ", ".join(parts)


def definition(tool: types.Tool) -> dict[str, Any]:
    """The upstream's definition of a tool, in MCP's own field names."""
    dumped = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {k: dumped[k] for k in DEFINITION_FIELDS if k in dumped}


def definition_sha256(value: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(value, strict=False)).hexdigest()


def registry_id(upstream: MCPUpstream, tool_name: str) -> str:
    """``<upstream>.<tool>``, in the registry's alphabet."""
    return f"{upstream.name}.{re.sub(r'[^a-zA-Z0-9_.-]', '_', tool_name)}"[:120]


def proposed_risk(annotations: dict[str, Any], *, trusted: bool = True) -> str:
    """The risk level an upstream's annotations propose. ``readOnlyHint`` alone makes a tool
    read (executed without review once enabled) only from a trusted upstream."""
    if annotations.get("destructiveHint"):
        return RiskLevel.CRITICAL
    if annotations.get("readOnlyHint") and trusted:
        return RiskLevel.READ
    return RiskLevel.WRITE


def _new_tool(upstream: MCPUpstream, name: str, defined: dict[str, Any]) -> Tool:
    annotations = defined.get("annotations") or {}
    risk = proposed_risk(annotations, trusted=upstream.trust == MCPUpstream.Trust.TRUSTED)
    output_schema = defined.get("outputSchema") or {}
    return Tool(
        tool_id=registry_id(upstream, name),
        description=(defined.get("description") or name)[:5000],
        category=Tool.Category.OPERATIONS,
        agent_access=[],
        risk_level=risk,
        execution_mode=ExecutionMode.DISABLED,
        context_bucket=ContextBucket.DATA_REPORTING,
        monitoring_ceiling=default_monitoring_ceiling(risk),
        data_class=DataClass.LOGISTICS,
        handler_type=Tool.HandlerType.MCP,
        handler_config={
            "upstream": upstream.name,
            "tool": name,
            "definition_sha256": definition_sha256(defined),
        },
        input_schema=defined.get("inputSchema") or {"type": "object"},
        output_schema=output_schema,
        permission_tier=default_permission_tier(risk),
        external_channel=bool(annotations.get("openWorldHint")),
        idempotent=bool(annotations.get("idempotentHint")),
    )


def _imported(upstream: MCPUpstream) -> dict[str, Tool]:
    """This upstream's tools already in the registry, by their upstream name."""
    return {
        tool.handler_config.get("tool", ""): tool
        for tool in Tool.objects.filter(
            handler_type=Tool.HandlerType.MCP, handler_config__upstream=upstream.name
        )
    }


def _before(tool: Tool) -> dict[str, Any]:
    """What the registry holds of the definition (as imported or last accepted)."""
    return {
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "outputSchema": tool.output_schema or None,
    }


def _flag(upstream: MCPUpstream, tool: Tool, after: dict[str, Any] | None) -> None:
    before = _before(tool)
    if after is None:
        fields = ["removed"]
    else:
        fields = [
            name
            for name in DEFINITION_FIELDS
            if name != "annotations" and (after.get(name) or None) != (before.get(name) or None)
        ] or ["annotations"]
    same: dict[str, Any] = {"after__isnull": True} if after is None else {"after": after}
    if UpstreamToolChange.objects.filter(
        tool=tool,
        status__in=[UpstreamToolChange.Status.PENDING, UpstreamToolChange.Status.DISMISSED],
        **same,
    ).exists():
        return  # flagged already (or dismissed: the tool stays refused, not flagged again)
    UpstreamToolChange.objects.update_or_create(
        tool=tool,
        status=UpstreamToolChange.Status.PENDING,
        defaults={"upstream": upstream, "fields": fields, "before": before, "after": after},
    )


def upstream_import(*, upstream: MCPUpstream) -> ImportReport:
    """List the upstream's tools and bring the registry up to date as the module says.
    Raises what reaching the upstream raises (nothing is written then)."""
    offered, server_info = upstream_tools(upstream)
    with transaction.atomic():
        MCPUpstream.objects.select_for_update().filter(pk=upstream.pk).first()
        known = _imported(upstream)
        created = []
        for tool in offered:
            if tool.name not in known:
                new = _new_tool(upstream, tool.name, definition(tool))
                if Tool.objects.filter(pk=new.tool_id).exists():
                    raise ValueError(f"{new.tool_id} is already a registry tool of another kind")
                new.save()
                created.append(new.tool_id)
        report = _listing_record(upstream, offered, known)
        report.created = created
        MCPUpstream.objects.filter(pk=upstream.pk).update(
            server_info=server_info, last_imported_at=timezone.now()
        )
    # Not stale here once the listing is in the database (a transaction around it may not commit).
    transaction.on_commit(lambda: upstream_listed(upstream.name))
    return report


def _listing_record(
    upstream: MCPUpstream, offered: list[types.Tool], known: dict[str, Tool]
) -> ImportReport:
    """Record what the upstream lists now, and flag each imported tool whose accepted
    definition it no longer matches (a flag of a tool changed and changed back is closed)."""
    report = ImportReport()
    listed = {tool.name: definition(tool) for tool in offered}
    for name, existing in known.items():
        defined = listed.get(name)
        if defined is None:
            _flag(upstream, existing, None)
            report.flagged.append(existing.tool_id)
        elif existing.handler_config.get("definition_sha256") == definition_sha256(defined):
            report.unchanged.append(existing.tool_id)
            UpstreamToolChange.objects.filter(
                tool=existing, status=UpstreamToolChange.Status.PENDING
            ).delete()  # changed and changed back: nothing to review
        else:
            _flag(upstream, existing, defined)
            report.flagged.append(existing.tool_id)
    MCPUpstream.objects.filter(pk=upstream.pk).update(
        listed={name: definition_sha256(defined) for name, defined in listed.items()},
        listed_at=timezone.now(),
    )
    return report


def upstream_relist(*, upstream: MCPUpstream) -> ImportReport:
    """List the upstream's tools again: the listing recorded, changed tools flagged (never
    applied). Raises what reaching the upstream raises (nothing is written then)."""
    offered, _ = upstream_tools(upstream)
    with transaction.atomic():
        # One listing of an upstream at a time (a notice and the job may meet).
        MCPUpstream.objects.select_for_update().filter(pk=upstream.pk).first()
        report = _listing_record(upstream, offered, _imported(upstream))
    # Not stale here once the listing is in the database (a transaction around it may not commit).
    transaction.on_commit(lambda: upstream_listed(upstream.name))
    return report


def upstream_relist_named(name: str) -> MCPUpstream | None:
    """``upstream_relist`` by the upstream's name (the connection's relister); the upstream as
    recorded after it, or None when there is no such enabled upstream here."""
    upstream = MCPUpstream.objects.filter(pk=name, enabled=True).first()
    if upstream is None:
        return None
    upstream_relist(upstream=upstream)
    return MCPUpstream.objects.get(pk=name)


def upstreams_relist() -> dict[str, Any]:
    """The periodic job: every enabled upstream with imported tools listed again."""
    done: dict[str, Any] = {}
    names = (
        Tool.objects.filter(handler_type=Tool.HandlerType.MCP)
        .values_list("handler_config__upstream", flat=True)
        .distinct()
    )
    for upstream in MCPUpstream.objects.filter(enabled=True, name__in=list(names)):
        try:
            report = upstream_relist(upstream=upstream)
        except (UpstreamUnavailable, UpstreamTimeout, MCPError) as exc:
            done[upstream.name] = f"not listed: {exc}"
            continue
        done[upstream.name] = {"flagged": report.flagged, "unchanged": len(report.unchanged)}
    return done


def upstream_change_accept(*, change: UpstreamToolChange, by: Any) -> None:
    """Apply a flagged change to its registry tool (a removed tool is disabled)."""
    with transaction.atomic():
        tool = Tool.objects.select_for_update().get(pk=change.tool_id)
        after = change.after
        if after is None:
            tool.execution_mode = ExecutionMode.DISABLED
        else:
            tool.description = (after.get("description") or tool.description)[:5000]
            tool.input_schema = after.get("inputSchema") or {"type": "object"}
            tool.output_schema = after.get("outputSchema") or {}
            tool.handler_config = {
                **tool.handler_config,
                "definition_sha256": definition_sha256(after),
            }
        tool.save()
        UpstreamToolChange.objects.filter(pk=change.pk).update(
            status=UpstreamToolChange.Status.ACCEPTED, decided_at=timezone.now(), decided_by=by
        )


def upstream_change_dismiss(*, change: UpstreamToolChange, by: Any) -> None:
    """Keep the registry as it is: the flag closes, and the tool stays refused while the upstream
    offers that definition (a further change is flagged anew)."""
    UpstreamToolChange.objects.filter(pk=change.pk).update(
        status=UpstreamToolChange.Status.DISMISSED, decided_at=timezone.now(), decided_by=by
    )
