"""Work: tasks, deliverables and capability grants (approvals belong to the broker's admin)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from brainframe.models import AgentTask, CapabilityGrant, Deliverable, MacRule
from brainframe.services.access.grants import grant_withdraw
from brainframe.services.work.tasks import task_announce

from .common import JSONEditingMixin, ReadOnlyAdmin, SharePolicyFormMixin


@admin.register(AgentTask)
class AgentTaskAdmin(JSONEditingMixin, admin.ModelAdmin):
    list_display = (
        "title",
        "agent",
        "status",
        "priority",
        "progress",
        "created_at",
        "completed_at",
    )
    list_filter = ("status", "agent")
    search_fields = ("title", "task_id")
    list_select_related = ("agent",)
    autocomplete_fields = ("agent", "on_behalf_of")
    raw_id_fields = ("o_tag",)
    readonly_fields = ("task_id", "created_at", "started_at", "completed_at", "updated_at")

    def save_model(
        self, request: HttpRequest, obj: AgentTask, form: forms.ModelForm, change: bool
    ) -> None:
        super().save_model(request, obj, form, change)  # saved: announced (brainframe.apps)
        moved_from = form.initial.get("agent") if "agent" in form.changed_data else None
        if moved_from:  # and the Kanban it left
            task_announce(obj, also_agent_id=moved_from, owner=False)


class DeliverableForm(SharePolicyFormMixin):
    class Meta:
        model = Deliverable
        fields = "__all__"


@admin.register(Deliverable)
class DeliverableAdmin(JSONEditingMixin, admin.ModelAdmin):
    """Files agents made; staff set who else may read each (boundary, participant, data class,
    sharing policy: docs/access.md, "Sharing")."""

    form = DeliverableForm
    list_display = (
        "filename", "agent", "task", "boundary", "data_class", "participant_id", "created_at",
    )  # fmt: skip
    list_filter = ("agent", "content_type", "boundary", "data_class")
    search_fields = ("filename", "sha256")
    list_select_related = ("agent", "task")
    readonly_fields = ("id", "size_bytes", "sha256", "created_at")
    raw_id_fields = ("task",)


@admin.register(MacRule)
class MacRuleAdmin(JSONEditingMixin, admin.ModelAdmin):
    """Mandatory sharing rules: added here, never changed or removed (the table refuses)."""

    list_display = ("code", "reason", "created_at")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(CapabilityGrant)
class CapabilityGrantAdmin(ReadOnlyAdmin):
    """What agents were granted on asking (each from an approved rabs.capability.request call);
    withdraw one to undo it at once."""

    list_display = ("agent", "kind", "what", "until", "created_at", "withdrawn_at")
    list_filter = ("kind", "agent", ("withdrawn_at", admin.EmptyFieldListFilter))
    search_fields = ("agent__agent_id", "upstream", "tool_ids")
    list_select_related = ("agent",)
    actions = ["withdraw_grants"]

    @admin.display(description="tools")
    def what(self, obj: CapabilityGrant) -> str:
        level = f" → level {obj.level}" if obj.level is not None else ""
        return (obj.upstream + ": " if obj.upstream else "") + ", ".join(obj.tool_ids) + level

    @admin.action(description="Withdraw selected grants now")
    def withdraw_grants(self, request: HttpRequest, queryset: QuerySet[CapabilityGrant]) -> None:
        count = sum(
            grant_withdraw(grant=grant, reason=f"withdrawn by {request.user}") for grant in queryset
        )
        self.message_user(request, f"{count} grant(s) withdrawn.", messages.SUCCESS)
