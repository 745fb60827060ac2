"""Channels both ways (docs/channels.md): the adapters messages arrive by and replies leave by,
what was sent and where its delivery stands, and the Matrix rooms conversations live in.

- ``ChannelAdapter``: an inbound channel (a provider posts each message to
  ``/api/v1/channels/<name>/``) and, when it has a sender (``send_via``), the way answers go
  back: an SMS provider speaking Twilio's Messages API, the deployment's mail server, the Matrix
  homeserver.
- ``OutboundMessage`` (``ledger_outbound``): one message the control plane sent on a channel, as
  it was sent (after the channel's rules and the outbound PII filter), with the governed call
  that sent it and its delivery state. The content is append-only (a trigger); only the delivery
  columns move.
- ``MatrixRoom``: a room an agent's bot account is in, and the session (so the thread) its
  conversation is kept in.
"""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.db import models

from .agents import Agent
from .append_only import AppendOnlyModel
from .ledger import Channel


class ChannelAdapter(models.Model):
    """An inbound channel: the provider posts each message to ``/api/v1/channels/<name>/`` with
    its bearer token; the adapter normalises it and hands it to its agent. With a sender
    (``send_via``), the agent's answers go back the same way."""

    class SendVia(models.TextChoices):
        NONE = "none", "Nothing: inbound only, answers are not sent"
        TWILIO = "twilio", "SMS provider (Twilio's Messages API)"
        SMTP = "smtp", "The deployment's mail server (EMAIL_* settings)"
        MATRIX = "matrix", "The Matrix homeserver (RABS_MATRIX_*)"

    name = models.SlugField(max_length=60, unique=True)
    channel = models.CharField(max_length=8, choices=Channel.choices)
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="channel_adapters")
    token_hash = models.CharField(max_length=64, help_text="SHA-256 of the provider's token.")
    max_length = models.PositiveIntegerField(
        default=0, help_text="Longest answer the channel carries (characters; 0: no limit)."
    )
    markdown = models.BooleanField(default=False, help_text="The channel renders Markdown.")
    send_via = models.CharField(
        max_length=8,
        choices=SendVia.choices,
        default=SendVia.NONE,
        help_text="How answers go back to the person.",
    )
    send_url = models.URLField(
        max_length=300,
        blank=True,
        help_text="SMS: the provider's API base (empty: https://api.twilio.com).",
    )
    send_account = models.CharField(
        max_length=100, blank=True, help_text="SMS: the provider's account id (Account SID)."
    )
    send_from = models.CharField(
        max_length=254,
        blank=True,
        help_text="SMS: the number answers come from; e-mail: the From address.",
    )
    send_secret_encrypted = models.TextField(
        blank=True, editable=False, help_text="SMS: the provider's auth token, encrypted."
    )
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "channel_adapters"
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.channel} → {self.agent_id})"


class OutboundMessage(AppendOnlyModel):
    """One message sent on a channel by a governed call (``channel.reply``,
    ``chat.assistant.post``): what left, to whom, and where its delivery stands."""

    class Kind(models.TextChoices):
        REPLY = "reply", "Answer to a turn"
        POST = "post", "Agent's post"

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent (the provider took it)"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    APPEND_ONLY_MUTABLE: ClassVar[tuple[str, ...]] = (
        "state",
        "provider_id",
        "attempts",
        "next_attempt_at",
        "claimed_at",
        "sent_at",
        "delivered_at",
        "failed_at",
        "last_error",
        "history",
    )

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    call = models.OneToOneField(
        "brainframe.ToolCall", on_delete=models.PROTECT, related_name="outbound"
    )
    kind = models.CharField(max_length=6, choices=Kind.choices)
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="outbound")
    adapter = models.ForeignKey(ChannelAdapter, on_delete=models.PROTECT, related_name="outbound")
    session = models.ForeignKey(
        "brainframe.Session",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="outbound",
    )
    turn = models.ForeignKey(
        "brainframe.Turn",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="outbound",
        help_text="The turn it answers.",
    )
    channel = models.CharField(max_length=8, choices=Channel.choices)
    address = models.CharField(max_length=254, help_text="Where it went, exactly as addressed.")
    subject = models.CharField(max_length=300, blank=True)
    message_id = models.CharField(
        max_length=300, blank=True, help_text="E-mail: its Message-ID; chat: its transaction id."
    )
    in_reply_to = models.CharField(max_length=300, blank=True)
    references = models.TextField(blank=True)
    body = models.TextField(help_text="The text as it was sent.")
    html = models.TextField(blank=True, help_text="Chat: the Markdown as rendered.")
    segments = models.PositiveSmallIntegerField(default=1, help_text="SMS segments.")
    truncated = models.BooleanField(default=False)
    pii = models.CharField(max_length=300, blank=True, help_text="What the PII filter did.")
    created_at = models.DateTimeField(auto_now_add=True)
    # Delivery: the only columns that change after the row is written.
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    provider_id = models.CharField(max_length=300, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    history = models.JSONField(default=list, blank=True, help_text="[{at, state, detail}]")

    class Meta:
        db_table = "ledger_outbound"
        ordering = ["created_at"]
        indexes = [
            # The delivery sweep: messages waiting for their next attempt, or claimed too long.
            models.Index(
                fields=["next_attempt_at"],
                name="ledger_outbound_due_idx",
                condition=models.Q(state__in=["queued", "sending"]),
            ),
            # The conversation page: a turn's replies.
            models.Index(fields=["turn"], name="ledger_outbound_turn_idx"),
            # The provider's status callback finds the message by its id.
            models.Index(fields=["adapter", "provider_id"], name="ledger_outbound_provider_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.channel} to {self.address}: {self.state}"


class MatrixRoom(models.Model):
    """A Matrix room an agent's bot account is in, and the session its conversation is kept in
    (the session's address is the room id; room ids are case-sensitive, so kept here as they
    are)."""

    room_id = models.CharField(max_length=255, primary_key=True)
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="matrix_rooms")
    adapter = models.ForeignKey(
        ChannelAdapter, on_delete=models.PROTECT, related_name="matrix_rooms"
    )
    session = models.OneToOneField(
        "brainframe.Session",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="matrix_room",
    )
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "matrix_rooms"
        ordering = ["-joined_at"]

    def __str__(self) -> str:
        return f"{self.room_id} ({self.agent_id})"
