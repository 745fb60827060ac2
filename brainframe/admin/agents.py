"""Agents, their standing notes and credentials (pause and resume them here)."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from brainframe.models import (
    Agent,
    AgentCredential,
    AgentNote,
)
from brainframe.services.agents import agent_changed, agent_set_paused

from .common import (
    AgentLevelChangeInline,
    JSONEditingMixin,
    LevelChangeAdmin,
    LevelChangeForm,
    ReadOnlyAdmin,
    ReadOnlyInline,
)


class AgentNoteInline(admin.TabularInline):
    model = AgentNote
    extra = 0
    fields = ("note_type", "content", "priority", "active")


class AgentCredentialInline(ReadOnlyInline):
    model = AgentCredential
    fields = ("fingerprint", "created_at", "revoked_at")
    verbose_name_plural = "signing keys (issue with: manage.py agent_key <agent_id>)"


class AgentAdminForm(LevelChangeForm):
    class Meta:
        model = Agent
        fields = "__all__"


@admin.register(Agent)
class AgentAdmin(JSONEditingMixin, LevelChangeAdmin):
    form = AgentAdminForm
    list_display = (
        "agent_id",
        "name",
        "type",
        "role",
        "status",
        "monitoring_level",
        "alignment_score_90d",
        "last_heartbeat_at",
    )
    list_filter = ("type", "status", "monitoring_level", "trust_level")
    search_fields = ("agent_id", "name", "role")
    readonly_fields = (
        "alignment_score_90d",
        "last_heartbeat_at",
        "uptime_seconds",
        "created_at",
        "updated_at",
    )
    inlines = [AgentNoteInline, AgentCredentialInline, AgentLevelChangeInline]
    actions = ["pause_agents", "resume_agents"]

    def save_model(
        self, request: HttpRequest, obj: Agent, form: forms.ModelForm, change: bool
    ) -> None:
        super().save_model(request, obj, form, change)
        if change and form.changed_data:
            agent_changed(agent=obj)

    @admin.action(description="Pause selected agents (the broker refuses their requests)")
    def pause_agents(self, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
        count = agent_set_paused(agents=queryset, paused=True)
        self.message_user(request, f"{count} agent(s) paused.", messages.SUCCESS)

    @admin.action(description="Resume selected agents")
    def resume_agents(self, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
        count = agent_set_paused(agents=queryset, paused=False)
        self.message_user(request, f"{count} agent(s) may work again.", messages.SUCCESS)


@admin.register(AgentNote)
class AgentNoteAdmin(JSONEditingMixin, admin.ModelAdmin):
    list_display = ("agent", "note_type", "short_content", "priority", "active", "updated_at")
    list_filter = ("note_type", "active", "agent")
    search_fields = ("content", "agent__agent_id")
    list_select_related = ("agent",)
    autocomplete_fields = ("agent",)
    readonly_fields = ("created_by", "created_at", "updated_at")

    @admin.display(description="content")
    def short_content(self, obj: AgentNote) -> str:
        return obj.content[:80]

    def save_model(
        self, request: HttpRequest, obj: AgentNote, form: forms.ModelForm, change: bool
    ) -> None:
        if not change and request.user.is_authenticated:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)


@admin.register(AgentCredential)
class AgentCredentialAdmin(ReadOnlyAdmin):
    list_display = ("agent", "fingerprint", "created_at", "revoked_at")
    list_filter = ("agent",)
    search_fields = ("agent__agent_id", "fingerprint")
    list_select_related = ("agent",)
    exclude = ("secret_encrypted",)
