"""Pushing events out (Type 3 platforms that do not speak A2A, and A2A push notifications for
the tasks other agents hand us): subscriptions and the delivery of each event to each one."""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.db import models

from .agents import Agent
from .events import EventLogEntry
from .work import AgentTask


class WebhookSubscription(models.Model):
    """An external (Type 3) agent subscribed to kinds of events: each such event logged is
    pushed to its URL as a signed webhook (brainframe/services/eventlog/webhooks.py), once."""

    class Kind(models.TextChoices):
        EVENTS = "events", "Events (a platform without A2A)"
        A2A_PUSH = "a2a_push", "A2A push notifications of one task"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="webhook_subscriptions")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.EVENTS)
    url = models.URLField(max_length=2000)
    event_types = ArrayField(
        models.CharField(max_length=80),
        default=list,
        blank=True,
        help_text="Event names (approval:decided) or families (approval); empty: every event.",
    )
    task = models.ForeignKey(
        AgentTask,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="push_subscriptions",
        help_text="A2A push: the task whose state changes are pushed.",
    )
    # The signing secret, encrypted (it must be used again to sign each delivery).
    secret_sealed = models.TextField(editable=False)
    # A2A push: the token the subscriber gave, sent back with each notification.
    token = models.CharField(max_length=500, blank=True)
    enabled = models.BooleanField(default=True)
    # How far the event log has been read for this subscription (stream → last seq).
    cursor = models.JSONField(default=dict, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "webhook_subscriptions"

    def __str__(self) -> str:
        return f"{self.agent_id} ← {', '.join(self.event_types) or 'every event'} ({self.url})"


class WebhookDelivery(models.Model):
    """One event pushed to one subscription: made once (unique), sent until the receiver
    answers 2xx, retried with backoff, given up after the last attempt."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    id = models.BigAutoField(primary_key=True)
    subscription = models.ForeignKey(
        WebhookSubscription, on_delete=models.CASCADE, related_name="deliveries"
    )
    event = models.ForeignKey(EventLogEntry, on_delete=models.PROTECT, related_name="+")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    last_status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "webhook_deliveries"
        verbose_name_plural = "webhook deliveries"
        constraints = [
            models.UniqueConstraint(
                fields=["subscription", "event"], name="brainframe_webhookdelivery_once"
            )
        ]
        indexes = [
            # The sender's query: pending deliveries that are due, oldest first.
            models.Index(fields=["state", "next_attempt_at"], name="webhook_delivery_due"),
        ]

    def __str__(self) -> str:
        return f"{self.event_id} → {self.subscription_id}: {self.state}"
