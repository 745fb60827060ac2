"""The approval queue in the admin: reviewers decide on the board; staff here see the queue, its
history and each notification's deliveries, and can decide selected items in bulk (each through
the same service as the board).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from brainframe.admin.common import JSONEditingMixin, ReadOnlyAdmin, ReadOnlyInline, pretty_json
from brainframe.models import ApprovalRequest, NotificationDelivery

from .services.approvals import ApprovalError, approval_decide


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

    actions = ["approve_selected", "reject_selected", "escalate_selected"]

    @admin.display(description="arguments")
    def pretty_arguments(self, obj: ApprovalRequest) -> str:
        return pretty_json(obj.arguments)

    def _decide_all(
        self,
        request: HttpRequest,
        queryset: QuerySet[ApprovalRequest],
        action: str,
        reason: str = "",
    ) -> None:
        done, refused = 0, []
        for approval_id in queryset.values_list("pk", flat=True):
            try:
                approval_decide(
                    approval_id=approval_id,
                    reviewer=request.user,  # type: ignore[arg-type]
                    action=action,
                    reason=reason,
                )
                done += 1
            except ApprovalError as exc:
                refused.append(f"{str(approval_id)[:8]}: {exc.detail}")
        if done:
            self.message_user(request, f"{action.title()}d {done} approval(s).", messages.SUCCESS)
        for problem in refused:
            self.message_user(request, f"Not {action}d — {problem}", messages.WARNING)

    @admin.action(description="Approve selected (runs each call once)")
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[ApprovalRequest]) -> None:
        self._decide_all(request, queryset, "approve", "approved in the admin")

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
