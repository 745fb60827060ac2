"""Hooks (seeds 003, 004): governed automation that agents propose and staff approve.

A hook listens to the event log (deterministic, LLM, hybrid) or to the minute timer (scheduled),
and fires code-free effects for its owning agent: ``wake`` (a task in its inbox), ``message``
(queued for its next turn), ``invoke`` (a tool call through the broker, with the hook as its
O-Tag origin). See ``brainframe/services/hooks/lifecycle.py`` and docs/hooks.md.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models

from .agents import Agent


class Hook(models.Model):
    class Kind(models.TextChoices):
        DETERMINISTIC = "deterministic", "Deterministic (a condition over the event)"
        LLM = "llm", "LLM (a prompt judged by the agent's model)"
        SCHEDULED = "scheduled", "Scheduled (a cron expression on the minute timer)"
        HYBRID = "hybrid", "Hybrid (a condition, then the model)"

    class Status(models.TextChoices):
        PROPOSED = "proposed", "Proposed (waiting for staff)"
        ACTIVE = "active", "Active"
        DISABLED = "disabled", "Disabled"
        REJECTED = "rejected", "Rejected"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="hooks")
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    events = ArrayField(
        models.CharField(max_length=80),
        default=list,
        blank=True,
        help_text="Event names (inbound:received) or families (task) it listens to.",
    )
    condition = models.JSONField(
        null=True, blank=True, help_text="The condition language over event.* (prefilter)."
    )
    prompt = models.TextField(blank=True, help_text="Asked of the agent's model: yes or no.")
    model = models.CharField(
        max_length=120,
        blank=True,
        help_text="Model or alias; empty: the agent's first allowed model.",
    )
    schedule = models.CharField(max_length=120, blank=True, help_text="Cron: m h dom mon dow.")
    timezone = models.CharField(max_length=64, default="Australia/Brisbane")
    effects = models.JSONField(default=list)
    max_fires_per_hour = models.PositiveIntegerField(default=30)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PROPOSED)
    proposed_by = models.CharField(max_length=150, help_text="agent:<id> or a staff username")
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_reason = models.TextField(blank=True)
    disabled_reason = models.TextField(blank=True)
    # Who disabled it last (docs/hooks.md): "agent:<id>" or "system" (after failures in a row):
    # the agent that proposed it may enable it again; "staff:<username>": only staff may.
    disabled_by = models.CharField(max_length=160, blank=True)
    evaluations = models.BigIntegerField(default=0)
    fired = models.BigIntegerField(default=0)
    consecutive_errors = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    last_fired_at = models.DateTimeField(null=True, blank=True)
    schedule_checked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "hooks"
        ordering = ["agent_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "name"], name="hooks_one_name_per_agent")
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}/{self.name} ({self.kind}, {self.status})"


class HookMessage(models.Model):
    """A message a hook queued for its agent's next turn (handed over once, by the context
    endpoint)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="hook_messages")
    hook = models.ForeignKey(Hook, on_delete=models.CASCADE, related_name="messages")
    text = models.TextField()
    event_ref = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "hook_messages"
        ordering = ["created_at"]
        indexes = [
            models.Index(
                fields=["agent", "created_at"],
                name="hook_messages_waiting",
                condition=models.Q(delivered_at__isnull=True),
            )
        ]

    def __str__(self) -> str:
        return self.text[:60]


class HookCursor(models.Model):
    """How far the hook runner has read the event log (one row)."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    cursor = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "hook_cursor"

    def __str__(self) -> str:
        return f"hook cursor at {self.cursor}"
