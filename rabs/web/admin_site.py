"""The admin's index grouped by concept (the registry, agents and keys, approvals and audit, …)
rather than one alphabetical list of every table of every app.

``RabsAdminConfig`` (in ``INSTALLED_APPS`` instead of ``django.contrib.admin``) makes
``RabsAdminSite`` the default site, so every ``admin.register`` lands on it; an app's own index
(``/admin/brainframe/``) still lists that app's tables.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest
from django.urls import reverse

#: Concept → the tables in it, in the order a member of staff looks for them. A table not
#: named here is listed under "Other" (nothing registered is ever hidden).
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Registry",
        (
            "brainframe.Tool",
            "brainframe.ValidationPolicy",
            "brainframe.PrimeDirective",
            "brainframe.ConstitutionRule",
            "brainframe.MacRule",
            "brainframe.ContextBucketDefinition",
            "brainframe.MCPUpstream",
            "brainframe.UpstreamToolChange",
            "brainframe.DiscoveryEntry",
            "brainframe.ReplicaView",
        ),
    ),
    (
        "Agents and keys",
        (
            "brainframe.Agent",
            "brainframe.AgentCredential",
            "brainframe.AgentToken",
            "brainframe.AgentNote",
            "brainframe.AgentSupervisor",
            "brainframe.SupervisorCommand",
        ),
    ),
    (
        "Agents' work and memory",
        (
            "brainframe.AgentTask",
            "brainframe.Deliverable",
            "brainframe.KanbanCard",
            "brainframe.AgentCard",
            "brainframe.PlanRecord",
            "brainframe.ContextBucketEntry",
            "brainframe.LearningCard",
            "brainframe.DecayRun",
        ),
    ),
    (
        "Approvals and audit",
        (
            "brainframe.ApprovalRequest",
            "brainframe.StandingApproval",
            "brainframe.CapabilityGrant",
            "brainframe.NotificationDelivery",
            "brainframe.ReviewerPreference",
            "brainframe.ToolCall",
            "brainframe.OriginRegistry",
            "brainframe.ReasonLog",
            "brainframe.ReasonEdge",
            "brainframe.MonitoringLevelChange",
            "brainframe.AlignmentSnapshot",
            "brainframe.RuleProposal",
            "brainframe.AuditCheckpoint",
        ),
    ),
    (
        "People and access",
        (
            "auth.User",
            "auth.Group",
            "brainframe.Person",
            "brainframe.ChannelIdentity",
            "brainframe.AclPolicy",
        ),
    ),
    (
        "Conversations",
        (
            "brainframe.Thread",
            "brainframe.Session",
            "brainframe.Turn",
            "brainframe.Message",
            "brainframe.OutboundMessage",
            "brainframe.MatrixRoom",
            "brainframe.QueuedMessage",
            "brainframe.LedgerEvent",
            "brainframe.Delegation",
            "brainframe.ChannelAdapter",
            "brainframe.TimerTicks",
        ),
    ),
    (
        "Model gateway",
        (
            "brainframe.LLMUpstream",
            "brainframe.LLMKey",
            "brainframe.LLMBudget",
            "brainframe.LLMTeam",
            "brainframe.LLMRequest",
            "brainframe.LLMUsage",
            "brainframe.LLMCacheEntry",
            "brainframe.ModelPrice",
        ),
    ),
    (
        "Events and hooks",
        (
            "brainframe.EventLogEntry",
            "brainframe.EventSink",
            "brainframe.Hook",
            "brainframe.HookMessage",
            "brainframe.HookCursor",
            "brainframe.WebhookSubscription",
            "brainframe.WebhookDelivery",
        ),
    ),
    (
        "Council",
        ("brainframe.CouncilProposal", "brainframe.CouncilMember", "brainframe.CouncilVote"),
    ),
)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")


class RabsAdminSite(admin.AdminSite):
    site_header = "RABS Brainframe"
    site_title = "RABS Brainframe"
    index_title = "Registry, agents, approvals and audit"
    # The lists get the whole width (at 1366 px a sidebar beside the filters cut columns off);
    # the index, grouped by concept, is one click away in the breadcrumbs.
    enable_nav_sidebar = False

    def get_app_list(self, request: HttpRequest, app_label: str | None = None) -> list[Any]:
        """The index and the sidebar by concept; an app's own index as Django lists it."""
        if app_label is not None:
            return super().get_app_list(request, app_label)
        by_name: dict[str, dict[str, Any]] = {}
        for app in self._build_app_dict(request).values():  # only what the user may see
            for model in app["models"]:
                by_name[f"{app['app_label']}.{model['object_name']}"] = model
        index = reverse("admin:index", current_app=self.name)
        groups = []
        for name, members in GROUPS:
            models = [by_name.pop(member) for member in members if member in by_name]
            if models:
                groups.append(self._group(name, models, index))
        if by_name:
            rest = sorted(by_name.values(), key=lambda m: str(m["name"]).lower())
            groups.append(self._group("Other", rest, index))
        return groups

    @staticmethod
    def _group(name: str, models: list[dict[str, Any]], index: str) -> dict[str, Any]:
        slug = _slug(name)
        return {
            "name": name,
            "app_label": slug,
            # Not a path prefix of any page: the sidebar marks no group as the current one.
            "app_url": f"{index}#{slug}",
            "has_module_perms": True,
            "models": models,
        }


class RabsAdminConfig(AdminConfig):
    default_site = "rabs.web.admin_site.RabsAdminSite"
