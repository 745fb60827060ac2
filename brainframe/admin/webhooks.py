"""Events pushed to external agents: subscriptions (the secret is shown once, when staff add
one) and each delivery's state."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest

from brainframe.models import Agent, WebhookDelivery, WebhookSubscription
from brainframe.services.eventlog.webhooks import WebhookRefusal, webhook_subscribe

from .common import ReadOnlyAdmin


class WebhookSubscriptionForm(forms.ModelForm):
    class Meta:
        model = WebhookSubscription
        fields = ("agent", "url", "event_types", "enabled")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "agent" in self.fields:
            self.fields["agent"].queryset = Agent.objects.filter(type=Agent.Type.EXTERNAL)  # type: ignore[attr-defined]


@admin.register(WebhookSubscription)
class WebhookSubscriptionAdmin(admin.ModelAdmin):
    """An external agent subscribed to event types: each is pushed to its URL, signed as agents
    sign what they send us (RABS-HMAC under the subscription's secret), retried with backoff,
    once per event (docs/mcp.md, "Platforms without A2A")."""

    form = WebhookSubscriptionForm
    list_display = ("agent", "kind", "url", "event_types", "enabled", "pending", "created_at")
    list_filter = ("kind", "enabled")
    search_fields = ("agent__agent_id", "url")
    readonly_fields = ("kind", "task", "created_at")

    @admin.display(description="pending deliveries")
    def pending(self, obj: WebhookSubscription) -> int:
        return obj.deliveries.filter(state=WebhookDelivery.State.PENDING).count()

    def save_model(
        self, request: HttpRequest, obj: WebhookSubscription, form: forms.ModelForm, change: bool
    ) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        try:
            made, secret = webhook_subscribe(
                agent=obj.agent, url=obj.url, event_types=list(obj.event_types)
            )
        except WebhookRefusal as exc:
            messages.error(request, str(exc))
            return
        obj.pk = made.pk
        messages.warning(
            request,
            f"The signing secret, shown this once: {secret} (the receiver checks each "
            "delivery's X-RABS-Signature with it).",
        )


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "subscription",
        "event",
        "state",
        "attempts",
        "last_status",
        "next_attempt_at",
        "delivered_at",
    )
    list_filter = ("state",)
    list_select_related = ("subscription", "subscription__agent", "event")
    show_full_result_count = False
