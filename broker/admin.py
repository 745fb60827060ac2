"""The broker's admin pages: the approval queue (reviewers decide on the board; staff here see the
queue, its history and each notification's deliveries, and can decide selected items in bulk
through the same service as the board), upstream MCP servers with their imported tools, and the
"What if?" dry run on the change forms of V-Pols, directives, ACL policies and agents' caps.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from mcp.shared.exceptions import MCPError
from simple_history.admin import SimpleHistoryAdmin

from brainframe.admin.access import AclPolicyAdmin
from brainframe.admin.agents import AgentAdmin
from brainframe.admin.common import JSONEditingMixin, ReadOnlyAdmin, ReadOnlyInline, pretty_json
from brainframe.admin.registry import PrimeDirectiveAdmin, ValidationPolicyAdmin
from brainframe.models import (
    AclPolicy,
    Agent,
    ApprovalRequest,
    MCPUpstream,
    NotificationDelivery,
    PrimeDirective,
    Tool,
    UpstreamToolChange,
    ValidationPolicy,
)
from brainframe.safety.policy.acl import AclDocumentError, acl_parse

from .errors import BrokerRefusal
from .services.approvals import ApprovalError
from .services.batches import approvals_decide_batch
from .services.replay import policy_replay
from .services.upstreams import (
    upstream_change_accept,
    upstream_change_dismiss,
    upstream_import,
    upstream_relist,
)
from .upstream_client import UpstreamTimeout, UpstreamUnavailable


class DeliveryInline(ReadOnlyInline):
    """Who was told about the approval, how, and whether it arrived."""

    model = NotificationDelivery
    fields = ("event", "channel", "recipient", "attempts", "delivered_at", "last_error")


@admin.register(ApprovalRequest)
class ApprovalRequestAdmin(JSONEditingMixin, admin.ModelAdmin):
    """Reviewers decide on the board; the admin shows the queue and its history."""

    inlines = [DeliveryInline]

    list_display = (
        "tool",
        "agent",
        "kind",
        "status",
        "risk_level",
        "confidence",
        "reviewer_group",
        "timeout_at",
        "decided_by",
    )
    list_filter = ("status", "kind", "risk_level", "reviewer_group", "agent")
    search_fields = ("tool__tool_id", "reason", "summary")
    list_select_related = ("tool", "agent", "decided_by")
    show_full_result_count = False
    readonly_fields = (
        "id",
        "tool",
        "agent",
        "tool_call",
        "task",
        "r_tag",
        "vpol",
        "vpol_version",
        "kind",
        "pretty_arguments",
        "arguments_hash",
        "reason",
        "summary",
        "risk_level",
        "confidence",
        "tags",
        "status",
        "reviewer_group",
        "timeout_at",
        "created_at",
        "decided_at",
        "decided_by",
        "decision_reason",
        "modified_arguments",
        "escalation_count",
    )
    exclude = ("arguments",)

    actions = [
        "approve_selected",
        "approve_selected_across_chains",
        "reject_selected",
        "escalate_selected",
    ]

    @admin.display(description="arguments")
    def pretty_arguments(self, obj: ApprovalRequest) -> str:
        return pretty_json(obj.arguments)

    def _decide_all(
        self,
        request: HttpRequest,
        queryset: QuerySet[ApprovalRequest],
        action: str,
        reason: str = "",
        *,
        across_chains: bool = False,
    ) -> None:
        """Each selected approval decided on its own (``approvals_decide_batch``); calls of
        several chains only with the action that says so."""
        try:
            results = approvals_decide_batch(
                approval_ids=list(queryset.values_list("pk", flat=True)),
                reviewer=request.user,  # type: ignore[arg-type]
                action=action,
                reason=reason,
                across_chains=across_chains,
            )
        except ApprovalError as exc:
            self.message_user(request, f"Nothing was {action}d: {exc.detail}.", messages.ERROR)
            return
        done = sum(1 for r in results if r.decided)
        refused = [f"{r.approval_id[:8]}: {r.detail}" for r in results if not r.decided]
        if done:
            self.message_user(request, f"{action.title()}d {done} approval(s).", messages.SUCCESS)
        for problem in refused:
            self.message_user(request, f"Not {action}d — {problem}", messages.WARNING)

    @admin.action(description="Approve selected (runs each call once)")
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[ApprovalRequest]) -> None:
        self._decide_all(request, queryset, "approve", "approved in the admin")

    @admin.action(description="Approve selected, even from different chains")
    def approve_selected_across_chains(
        self, request: HttpRequest, queryset: QuerySet[ApprovalRequest]
    ) -> None:
        self._decide_all(request, queryset, "approve", "approved in the admin", across_chains=True)

    @admin.action(description="Escalate selected to senior reviewers")
    def escalate_selected(self, request: HttpRequest, queryset: QuerySet[ApprovalRequest]) -> None:
        self._decide_all(request, queryset, "escalate", "escalated in the admin")

    @admin.action(description="Reject selected (asks for the reason)")
    def reject_selected(
        self, request: HttpRequest, queryset: QuerySet[ApprovalRequest]
    ) -> TemplateResponse | None:
        reason = request.POST.get("rejection_reason", "").strip()
        if request.POST.get("confirm") and reason:
            self._decide_all(request, queryset, "reject", reason)
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Reject approvals",
            "approvals": queryset,
            "opts": self.model._meta,
            "missing_reason": bool(request.POST.get("confirm")),
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/brainframe/approval_reject.html", context)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # created only by the broker

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(NotificationDelivery)
class NotificationDeliveryAdmin(ReadOnlyAdmin):
    """Every notification sent or still being retried (a failing webhook shows its error)."""

    list_display = ("approval", "event", "channel", "recipient", "attempts", "delivered_at")
    list_filter = ("channel", "event", ("delivered_at", admin.EmptyFieldListFilter))
    search_fields = ("recipient", "last_error")
    list_select_related = ("approval__tool", "approval__agent")
    show_full_result_count = False


@admin.register(MCPUpstream)
class MCPUpstreamAdmin(JSONEditingMixin, SimpleHistoryAdmin):
    """Upstream MCP servers: register one, then "Import tools" to list its tools into the
    registry (disabled until enabled); importing again flags what changed upstream."""

    formfield_overrides = {
        **JSONEditingMixin.formfield_overrides,
        models.URLField: {"assume_scheme": "https"},  # a URL typed without one
    }
    list_display = (
        "name",
        "transport",
        "target",
        "trust",
        "enabled",
        "tool_count",
        "last_imported_at",
        "listed_at",
    )
    list_filter = ("transport", "trust", "enabled")
    search_fields = ("name", "description", "url")
    readonly_fields = ("server_info", "last_imported_at", "listed", "listed_at", "created_at")
    actions = ["import_tools", "list_tools_again"]

    @admin.display(description="URL or command")
    def target(self, obj: MCPUpstream) -> str:
        return obj.url or " ".join(str(part) for part in obj.command or [])

    @admin.display(description="tools in the registry")
    def tool_count(self, obj: MCPUpstream) -> int:
        return Tool.objects.filter(
            handler_type=Tool.HandlerType.MCP, handler_config__upstream=obj.name
        ).count()

    @admin.action(description="Import tools (new ones stay disabled; changes are flagged)")
    def import_tools(self, request: HttpRequest, queryset: QuerySet[MCPUpstream]) -> None:
        for upstream in queryset:
            try:
                report = upstream_import(upstream=upstream)
            except (UpstreamUnavailable, UpstreamTimeout, MCPError, ValueError) as exc:
                self.message_user(
                    request, f"{upstream.name}: nothing imported — {exc}", messages.ERROR
                )
                continue
            self.message_user(request, f"{upstream.name}: {report}.", messages.SUCCESS)

    @admin.action(description="List tools again (a changed tool is flagged and refused)")
    def list_tools_again(self, request: HttpRequest, queryset: QuerySet[MCPUpstream]) -> None:
        for upstream in queryset:
            try:
                report = upstream_relist(upstream=upstream)
            except (UpstreamUnavailable, UpstreamTimeout, MCPError) as exc:
                self.message_user(request, f"{upstream.name}: not listed — {exc}", messages.ERROR)
                continue
            self.message_user(
                request,
                f"{upstream.name}: {len(report.unchanged)} unchanged, "
                f"{len(report.flagged)} changed upstream (refused until accepted).",
                messages.SUCCESS if not report.flagged else messages.WARNING,
            )


@admin.register(UpstreamToolChange)
class UpstreamToolChangeAdmin(ReadOnlyAdmin):
    """What an upstream changed about an imported tool: accept to apply it to the registry,
    dismiss to keep the registry as it is."""

    list_display = ("tool", "upstream", "changed", "status", "detected_at", "decided_by")
    list_filter = ("status", "upstream")
    search_fields = ("tool__tool_id",)
    list_select_related = ("tool", "upstream", "decided_by")
    actions = ["accept_changes", "dismiss_changes"]

    @admin.display(description="what changed")
    def changed(self, obj: UpstreamToolChange) -> str:
        return ", ".join(obj.fields)

    @admin.action(description="Accept: apply the upstream's new definition to the registry")
    def accept_changes(self, request: HttpRequest, queryset: QuerySet[UpstreamToolChange]) -> None:
        pending = queryset.filter(status=UpstreamToolChange.Status.PENDING)
        for change in pending:
            upstream_change_accept(change=change, by=request.user)
        self.message_user(request, f"Applied {len(pending)} change(s).", messages.SUCCESS)

    @admin.action(description="Dismiss: keep the registry as it is")
    def dismiss_changes(self, request: HttpRequest, queryset: QuerySet[UpstreamToolChange]) -> None:
        pending = queryset.filter(status=UpstreamToolChange.Status.PENDING)
        for change in pending:
            upstream_change_dismiss(change=change, by=request.user)
        self.message_user(request, f"Dismissed {len(pending)} change(s).", messages.SUCCESS)


# --- what-if before saving (docs/access.md, "What-if") ------------------------------------------


class WhatIfMixin(admin.ModelAdmin):
    """A change form with a "What if?" button: the draft in the form is replayed over recorded
    calls through the real pipeline (``broker.services.replay``) and the report shown, with a
    button that saves the same draft. Nothing is saved by the dry run."""

    whatif_kind = ""
    change_form_template = "admin/whatif/change_form.html"

    def whatif_target(self, obj: Any, form: Any) -> str:
        return str(obj.pk)

    def whatif_draft(self, form: Any) -> Any:
        raise NotImplementedError

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> Any:
        if request.method != "POST" or "_whatif" not in request.POST or object_id is None:
            return super().changeform_view(request, object_id, form_url, extra_context)
        obj = self.get_object(request, unquote(object_id))
        if obj is None or not self.has_change_permission(request, obj):
            raise PermissionDenied
        form = self.get_form(request, obj, change=True)(request.POST, request.FILES, instance=obj)
        report, error = None, ""
        if not form.is_valid():
            error = "; ".join(
                f"{name}: {' '.join(str(m) for m in messages_)}"
                for name, messages_ in form.errors.items()
            )
        else:
            try:
                days = max(1, min(365, int(request.POST.get("_whatif_days") or 30)))
            except ValueError:
                days = 30
            try:
                report = policy_replay(
                    kind=self.whatif_kind,
                    target=self.whatif_target(obj, form),
                    draft=self.whatif_draft(form),
                    days=days,
                ).as_dict()
            except (BrokerRefusal, AclDocumentError) as exc:
                error = str(exc)
        resubmit = [
            (name, value)
            for name, values in request.POST.lists()
            if name not in ("_whatif", "_whatif_days", "csrfmiddlewaretoken")
            for value in values
        ]
        return TemplateResponse(
            request,
            "admin/whatif/report.html",
            {
                **self.admin_site.each_context(request),
                "subject": f"{self.model._meta.verbose_name} {obj}",
                "report": report,
                "error": error,
                "resubmit": resubmit,
                "opts": self.model._meta,
            },
        )


admin.site.unregister(ValidationPolicy)


@admin.register(ValidationPolicy)
class ValidationPolicyWhatIfAdmin(WhatIfMixin, ValidationPolicyAdmin):
    whatif_kind = "vpol"

    def whatif_draft(self, form: Any) -> Any:
        fields = ("rules", "enforcement_mode", "tool_patterns", "priority", "active")
        return {name: form.cleaned_data[name] for name in fields if name in form.cleaned_data}


admin.site.unregister(PrimeDirective)


@admin.register(PrimeDirective)
class PrimeDirectiveWhatIfAdmin(WhatIfMixin, PrimeDirectiveAdmin):
    whatif_kind = "directive"

    def whatif_draft(self, form: Any) -> Any:
        fields = ("predicates", "escalation", "active")
        return {name: form.cleaned_data[name] for name in fields if name in form.cleaned_data}


admin.site.unregister(AclPolicy)


@admin.register(AclPolicy)
class AclPolicyWhatIfAdmin(WhatIfMixin, AclPolicyAdmin):  # type: ignore[misc]
    whatif_kind = "acl"

    def whatif_target(self, obj: Any, form: Any) -> str:
        return str(acl_parse(form.cleaned_data["document"])["name"])

    def whatif_draft(self, form: Any) -> Any:
        return form.cleaned_data["document"]


admin.site.unregister(Agent)


@admin.register(Agent)
class AgentWhatIfAdmin(WhatIfMixin, AgentAdmin):
    """Caps are tried before they are saved (the rest of the agent's form is not replayed)."""

    whatif_kind = "caps"

    def whatif_draft(self, form: Any) -> Any:
        return form.cleaned_data.get("caps") or {}
