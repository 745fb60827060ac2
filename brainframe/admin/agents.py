"""Agents, their standing notes and credentials: signing keys and MCP tokens (pause and resume
agents, issue and revoke tokens here)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from brainframe.models import (
    Agent,
    AgentCredential,
    AgentNote,
    AgentSupervisor,
    AgentToken,
    SupervisorCommand,
)
from brainframe.safety.policy.caps import caps_errors
from brainframe.services.access.credentials import agent_token_issue, agent_tokens_revoke
from brainframe.services.registry.agents import agent_changed, agent_set_paused
from brainframe.services.work.supervisors import (
    SupervisorError,
    supervisor_check,
    supervisor_command,
    supervisor_set,
)

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


class AgentTokenInline(ReadOnlyInline):
    model = AgentToken
    fields = ("prefix", "label", "created_at", "expires_at", "revoked_at", "last_used_at")
    verbose_name_plural = (
        "MCP tokens (issue with the action on the agents list, or agent_key --mcp)"
    )


class AgentAdminForm(LevelChangeForm):
    class Meta:
        model = Agent
        fields = "__all__"

    def clean_caps(self) -> dict[str, Any]:
        caps = self.cleaned_data.get("caps") or {}
        problems = caps_errors(caps)
        if problems:
            raise forms.ValidationError(problems)
        return caps


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
    inlines = [AgentNoteInline, AgentCredentialInline, AgentTokenInline, AgentLevelChangeInline]
    actions = ["pause_agents", "resume_agents", "issue_mcp_token"]

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

    @admin.action(description="Issue an MCP token for each selected agent (shown once)")
    def issue_mcp_token(self, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
        for agent in queryset:
            token = agent_token_issue(agent=agent, label=f"issued in the admin by {request.user}")
            self.message_user(
                request,
                f"MCP token for {agent.agent_id} (copy it now; it is not shown again): {token}",
                messages.WARNING,
            )


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


@admin.register(AgentToken)
class AgentTokenAdmin(ReadOnlyAdmin):
    """Bearer tokens of the MCP face: stored as a hash; revoke one to refuse it from the next
    request."""

    list_display = ("agent", "prefix", "label", "created_at", "expires_at", "revoked_at")
    list_filter = ("agent", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("agent__agent_id", "prefix", "label")
    list_select_related = ("agent",)
    exclude = ("token_sha256",)
    actions = ["revoke_tokens"]

    @admin.action(description="Revoke selected tokens (refused from the next request)")
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[AgentToken]) -> None:
        count = agent_tokens_revoke(tokens=queryset)
        self.message_user(request, f"{count} token(s) revoked.", messages.SUCCESS)


class AgentSupervisorForm(forms.ModelForm):
    control_url = forms.URLField(
        max_length=300,
        assume_scheme="http",
        help_text="e.g. http://127.0.0.1:8765 — loopback only (constitution LOOPBACK_ONLY).",
    )
    token = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False),
        help_text="The supervisor's control token (its [control] token). Stored encrypted; "
        "leave empty to keep the stored one.",
    )

    class Meta:
        model = AgentSupervisor
        fields = ("agent", "control_url")

    def clean(self) -> dict[str, object]:
        cleaned = super().clean() or {}
        agent, url = cleaned.get("agent"), cleaned.get("control_url")
        if agent is None or not url:
            return cleaned
        try:
            self.instance = supervisor_set(
                agent=agent, control_url=str(url), token=cleaned.get("token") or None
            )
        except SupervisorError as exc:
            field = exc.field if exc.field in ("control_url", "token") else None
            raise forms.ValidationError({field: exc.detail} if field else exc.detail) from None
        return cleaned


@admin.register(AgentSupervisor)
class AgentSupervisorAdmin(admin.ModelAdmin):
    """Where each agent's supervisor answers (loopback only), its last health answer, and
    restart / stop actions (recorded as supervisor commands, like the board's buttons)."""

    form = AgentSupervisorForm
    list_display = ("agent", "control_url", "reachable", "checked_at", "error")
    list_select_related = ("agent",)
    readonly_fields = ("health", "reachable", "checked_at", "error")
    actions = ["check_now", "restart_drain", "restart_force"]

    def save_model(
        self, request: HttpRequest, obj: AgentSupervisor, form: forms.ModelForm, change: bool
    ) -> None:
        # The form's clean() saved it through supervisor_set (validation and encryption).
        supervisor_check(supervisor=form.instance)

    @admin.action(description="Ask the selected supervisors how they are")
    def check_now(self, request: HttpRequest, queryset: QuerySet[AgentSupervisor]) -> None:
        for supervisor in queryset:
            supervisor_check(supervisor=supervisor)
        self.message_user(request, f"{queryset.count()} supervisor(s) checked.", messages.SUCCESS)

    def _restart(
        self, request: HttpRequest, queryset: QuerySet[AgentSupervisor], force: bool
    ) -> None:
        for supervisor in queryset.select_related("agent"):
            try:
                supervisor_command(
                    agent=supervisor.agent,
                    action="restart",
                    force=force,
                    reason="from the admin",
                    requested_by=request.user,  # type: ignore[arg-type]
                )
            except SupervisorError as exc:
                self.message_user(request, f"{supervisor.agent_id}: {exc.detail}", messages.ERROR)
            else:
                self.message_user(request, f"{supervisor.agent_id}: restarted.", messages.SUCCESS)

    @admin.action(description="Restart the selected agents' workers (drain the call in hand)")
    def restart_drain(self, request: HttpRequest, queryset: QuerySet[AgentSupervisor]) -> None:
        self._restart(request, queryset, force=False)

    @admin.action(description="Restart the selected agents' workers at once (force)")
    def restart_force(self, request: HttpRequest, queryset: QuerySet[AgentSupervisor]) -> None:
        self._restart(request, queryset, force=True)


@admin.register(SupervisorCommand)
class SupervisorCommandAdmin(ReadOnlyAdmin):
    """Every restart and stop sent to a supervisor: who asked or approved, why, the answer."""

    list_display = ("created_at", "agent", "action", "force", "requested_by", "call", "ok")
    list_filter = ("agent", "action", "ok")
    list_select_related = ("agent", "requested_by")
    search_fields = ("agent__agent_id", "reason")
