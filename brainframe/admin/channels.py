"""Channel adapters (both ways: the provider's token for messages in, the sender for answers out),
the messages sent on them (read-only: written by governed calls, moved by their delivery), and the
Matrix rooms agents' bots are in (docs/channels.md)."""

from __future__ import annotations

import secrets
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest

from brainframe.models import ChannelAdapter, MatrixRoom, OutboundMessage
from brainframe.services.access.credentials import secret_seal
from brainframe.services.ledger.channels import token_hash

from .common import ReadOnlyAdmin


class ChannelAdapterForm(forms.ModelForm):
    new_token = forms.BooleanField(
        required=False,
        help_text="Issue a new bearer token for the provider (shown once, after saving).",
    )
    send_secret = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="SMS: the provider's auth token (kept encrypted; leave empty to keep it).",
    )

    class Meta:
        model = ChannelAdapter
        fields = (
            "name", "channel", "agent", "max_length", "markdown", "active",
            "send_via", "send_url", "send_account", "send_from",
        )  # fmt: skip

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        wanted = {"sms": "twilio", "email": "smtp", "chat": "matrix"}
        via, channel = data.get("send_via"), data.get("channel")
        if via and via != "none" and channel and wanted.get(channel) != via:
            self.add_error("send_via", f"a {channel} channel sends by {wanted.get(channel)}")
        if via == "twilio" and not (data.get("send_account") and data.get("send_from")):
            self.add_error("send_account", "an SMS sender needs the account id and a number")
        return data


@admin.register(ChannelAdapter)
class ChannelAdapterAdmin(admin.ModelAdmin):
    """Channels: the provider posts each message to /api/v1/channels/<name>/ with the adapter's
    bearer token; answers go back by its sender."""

    form = ChannelAdapterForm
    list_display = ("name", "channel", "agent", "send_via", "max_length", "markdown", "active")
    list_filter = ("channel", "send_via", "active")
    search_fields = ("name",)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        token = None
        if not change or form.cleaned_data.get("new_token"):
            token = secrets.token_urlsafe(32)
            obj.token_hash = token_hash(token)
        if form.cleaned_data.get("send_secret"):
            obj.send_secret_encrypted = secret_seal(form.cleaned_data["send_secret"])
        super().save_model(request, obj, form, change)
        if token:
            messages.warning(
                request,
                f"The provider's bearer token for {obj.name} (shown once): {token}",
            )


@admin.register(OutboundMessage)
class OutboundMessageAdmin(ReadOnlyAdmin):
    """What was sent on a channel, as it was sent, and where its delivery stands."""

    list_display = ("created_at", "kind", "channel", "address", "agent", "state", "attempts")
    list_filter = ("state", "channel", "kind")
    search_fields = ("address", "provider_id", "body")
    list_select_related = ("agent",)
    date_hierarchy = "created_at"
    show_full_result_count = False


@admin.register(MatrixRoom)
class MatrixRoomAdmin(admin.ModelAdmin):
    """Rooms agents' bots are in (made when a bot accepts an invitation)."""

    list_display = ("room_id", "agent", "adapter", "session", "joined_at")
    list_select_related = ("agent", "adapter", "session")
    search_fields = ("room_id",)
    readonly_fields = ("room_id", "agent", "adapter", "session", "joined_at")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
