"""The model gateway: upstreams (keys encrypted), agents' model access and limits, virtual keys
(revoke here; issue with manage.py llm_key), and the gateway's record of every request."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, QuerySet, Sum
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from brainframe.models import (
    LLMBudget,
    LLMCacheEntry,
    LLMKey,
    LLMRequest,
    LLMTeam,
    LLMUpstream,
)
from brainframe.services.access.credentials import secret_seal
from brainframe.services.llm.admission import spend

from .common import JSONEditingMixin, ReadOnlyAdmin


class LLMUpstreamForm(forms.ModelForm):
    base_url = forms.URLField(max_length=300, assume_scheme="https")
    api_key = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Stored encrypted; leave empty to keep the stored one.",
    )
    clear_api_key = forms.BooleanField(required=False, help_text="Remove the stored key.")

    class Meta:
        model = LLMUpstream
        fields = (
            "name",
            "base_url",
            "served_models",
            "price_in",
            "price_out",
            "external",
            "enabled",
        )

    def clean_served_models(self) -> list[str]:
        value = self.cleaned_data["served_models"]
        if not isinstance(value, list) or not all(isinstance(m, str) and m for m in value):
            raise forms.ValidationError('a JSON list of model names, e.g. ["gpt-4o-mini"]')
        return value

    def save(self, commit: bool = True) -> LLMUpstream:
        upstream: LLMUpstream = super().save(commit=False)
        if self.cleaned_data.get("clear_api_key"):
            upstream.api_key_encrypted = ""
        elif self.cleaned_data.get("api_key"):
            upstream.api_key_encrypted = secret_seal(self.cleaned_data["api_key"])
        if commit:
            upstream.save()
        return upstream


@admin.register(LLMUpstream)
class LLMUpstreamAdmin(JSONEditingMixin, admin.ModelAdmin):
    form = LLMUpstreamForm
    list_display = ("name", "base_url", "served", "price_in", "price_out", "external", "enabled")
    search_fields = ("name", "base_url")

    @admin.display(description="models")
    def served(self, obj: LLMUpstream) -> str:
        return ", ".join(obj.served_models)


@admin.register(LLMBudget)
class LLMBudgetAdmin(JSONEditingMixin, admin.ModelAdmin):
    """An agent's model access; a change applies from its next request."""

    list_display = (
        "agent",
        "suspended",
        "rpm_limit",
        "tpm_limit",
        "max_parallel_requests",
        "max_budget",
        "budget_duration",
        "spend_now",
    )
    list_select_related = ("agent",)
    search_fields = ("agent__agent_id",)
    actions = ["suspend", "resume"]

    @admin.display(description="spend this period (USD)")
    def spend_now(self, obj: LLMBudget) -> str:
        return f"{spend(obj.agent_id, obj.budget_duration):.4f}"

    @admin.action(description="Suspend the selected agents' model access (next request on)")
    def suspend(self, request: HttpRequest, queryset: QuerySet[LLMBudget]) -> None:
        count = queryset.update(suspended=True)
        self.message_user(request, f"{count} suspended.", messages.SUCCESS)

    @admin.action(description="Resume the selected agents' model access")
    def resume(self, request: HttpRequest, queryset: QuerySet[LLMBudget]) -> None:
        count = queryset.update(suspended=False)
        self.message_user(request, f"{count} resumed.", messages.SUCCESS)


@admin.register(LLMTeam)
class LLMTeamAdmin(admin.ModelAdmin):
    """Agents sharing limits and a budget; a change applies from their next request."""

    list_display = (
        "name",
        "members",
        "suspended",
        "rpm_limit",
        "tpm_limit",
        "max_parallel_requests",
        "max_budget",
        "budget_duration",
    )
    filter_horizontal = ("agents",)
    search_fields = ("name", "agents__agent_id")

    def get_queryset(self, request: HttpRequest) -> QuerySet[LLMTeam]:
        return super().get_queryset(request).prefetch_related("agents")

    @admin.display(description="agents")
    def members(self, obj: LLMTeam) -> str:
        return ", ".join(a.agent_id for a in obj.agents.all())


@admin.register(LLMKey)
class LLMKeyAdmin(ReadOnlyAdmin):
    list_display = ("agent", "prefix", "created_at", "last_used_at", "revoked_at")
    list_filter = ("agent", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("agent__agent_id", "prefix")
    list_select_related = ("agent",)
    exclude = ("key_sha256",)
    actions = ["revoke"]

    @admin.action(description="Revoke selected keys (refused from the next request)")
    def revoke(self, request: HttpRequest, queryset: QuerySet[LLMKey]) -> None:
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"{count} key(s) revoked.", messages.SUCCESS)


@admin.register(LLMRequest)
class LLMRequestAdmin(ReadOnlyAdmin):
    list_display = (
        "created_at",
        "agent",
        "endpoint",
        "role",
        "model",
        "upstream",
        "stream",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "latency_ms",
        "status",
        "error_code",
    )
    list_filter = ("agent", "endpoint", "model", "upstream", "status", "stream")
    search_fields = ("agent__agent_id", "model", "error_code")
    list_select_related = ("agent",)
    date_hierarchy = "created_at"
    show_full_result_count = False

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        response = super().changelist_view(request, extra_context)
        changelist = getattr(response, "context_data", {}).get("cl")
        if isinstance(response, TemplateResponse) and changelist is not None:
            assert response.context_data is not None
            totals = changelist.queryset.aggregate(
                cost=Sum("cost_usd"),
                requests=Count("id"),
                tokens_in=Sum("prompt_tokens"),
                tokens_out=Sum("completion_tokens"),
            )
            response.context_data["title"] = (
                f"Model requests: {totals['requests']}, tokens {totals['tokens_in'] or 0} in / "
                f"{totals['tokens_out'] or 0} out, USD {totals['cost'] or 0:.4f} (filtered)"
            )
        return response


@admin.register(LLMCacheEntry)
class LLMCacheEntryAdmin(admin.ModelAdmin):
    """Answers kept by agents' caches; delete entries here to drop them."""

    list_display = ("created_at", "agent", "model", "prompt_sha256")
    list_filter = ("agent", "model")
    search_fields = ("agent__agent_id", "model", "prompt_sha256")
    list_select_related = ("agent",)
    exclude = ("embedding",)
    readonly_fields = ("agent", "model", "prompt_sha256", "params_sha256", "response", "created_at")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
