"""Agents, their signing credentials and their standing notes (seed 000 §2, §10, §12)."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Value

from brainframe.choices import MemorySource, MonitoringLevel, TrustLevel


class Agent(models.Model):
    """An LLM agent the business runs: native (Type 1), sandboxed in a VM (Type 2) or external."""

    class Type(models.TextChoices):
        NATIVE = "type_1_native", "Type 1 · RABS native"
        SANDBOXED = "type_2_sandboxed", "Type 2 · Sandboxed VM"
        EXTERNAL = "type_3_external", "Type 3 · External"

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        IDLE = "idle", "Idle"
        PAUSED = "paused", "Paused"
        ERROR = "error", "Error"

    agent_id = models.SlugField(
        primary_key=True, max_length=64, help_text="Stable identifier, e.g. 'henry'."
    )
    name = models.CharField(max_length=120)
    type = models.CharField(max_length=20, choices=Type.choices)
    role = models.CharField(
        max_length=120, blank=True, help_text="What the agent does, e.g. 'operations'."
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.IDLE)
    config = models.JSONField(
        default=dict, blank=True, help_text="Agent configuration (models per mode, endpoints…)."
    )
    monitoring_level = models.PositiveSmallIntegerField(
        choices=MonitoringLevel.choices, default=MonitoringLevel.REVIEW_ALL
    )
    trust_level = models.CharField(
        max_length=10,
        choices=TrustLevel.choices,
        default=TrustLevel.STANDARD,
        help_text="Trust of the agent and of the text it passes on (Guardian multiplier, tiers).",
    )
    caps = models.JSONField(
        default=dict,
        db_default=Value({}, output_field=models.JSONField()),
        blank=True,
        help_text="Three-axis caps (docs/access.md): capability, autonomy, authority; each "
        "axis capped on its own. Empty: no caps beyond the registry's.",
    )
    alignment_score_90d = models.DecimalField(max_digits=5, decimal_places=4, null=True, blank=True)
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)
    uptime_seconds = models.PositiveBigIntegerField(default=0)
    # How many tasks it holds for a person or a manager (in progress, from a person's message or
    # delegated): kept by a trigger on agent_tasks, never written by the ORM (``save``). The
    # broker reads the work an agent holds only when this is not 0 (services.access.held).
    held_tasks = models.PositiveIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "agents"
        ordering = ["agent_id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(monitoring_level__gte=0, monitoring_level__lte=4),
                name="%(app_label)s_%(class)s_monitoring_level_0_4",
            ),
            models.CheckConstraint(
                condition=models.Q(alignment_score_90d__gte=0, alignment_score_90d__lte=1),
                name="%(app_label)s_%(class)s_alignment_0_1",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.agent_id})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """The trigger's count is never overwritten by an instance read earlier."""
        if not self._state.adding and kwargs.get("update_fields") is None:
            kwargs["update_fields"] = [
                f.name
                for f in self._meta.concrete_fields
                if not f.primary_key and f.name != "held_tasks"
            ]
        super().save(*args, **kwargs)


class AgentCredential(models.Model):
    """An agent's request-signing secret, encrypted at rest; rotation revokes the previous one.

    HMAC verification needs the secret itself, so it cannot be hashed; it is encrypted with the
    server's key (``RABS_SECRET_ENCRYPTION_KEY``) and shown in plain text only once, at creation.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="credentials")
    secret_encrypted = models.TextField(editable=False)
    fingerprint = models.CharField(
        max_length=16,
        editable=False,
        help_text="First hex digits of sha256(secret), to recognise it.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "agent_credentials"
        ordering = ["-created_at"]
        constraints = [
            # At most one live secret per agent: rotation revokes before it issues.
            models.UniqueConstraint(
                fields=["agent"],
                condition=models.Q(revoked_at__isnull=True),
                name="%(app_label)s_%(class)s_one_active_per_agent",
            ),
        ]

    def __str__(self) -> str:
        state = "revoked" if self.revoked_at else "active"
        return f"{self.agent_id} key {self.fingerprint}… ({state})"


class AgentToken(models.Model):
    """A bearer token by which an agent reaches the broker's MCP face (and A2A): MCP clients
    cannot sign requests. Stored as its sha256 only; shown in plain text once, at creation;
    revocable; optionally expiring."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="tokens")
    token_sha256 = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(
        max_length=12, editable=False, help_text="The token's first characters, to recognise it."
    )
    label = models.CharField(max_length=120, blank=True, help_text="What the token is for.")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: no expiry.")
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        db_table = "agent_tokens"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        state = "revoked" if self.revoked_at else "active"
        return f"{self.agent_id} token {self.prefix}… ({state})"


class AgentNote(models.Model):
    """A standing instruction or persistent note an agent follows (the board's Notes panel)."""

    class NoteType(models.TextChoices):
        STANDING_INSTRUCTION = "standing_instruction", "Standing instruction"
        PREFERENCE = "preference", "Preference"
        WARNING = "warning", "Warning"
        CONTEXT = "context", "Context"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="notes")
    note_type = models.CharField(
        max_length=24, choices=NoteType.choices, default=NoteType.STANDING_INSTRUCTION
    )
    content = models.TextField()
    priority = models.PositiveSmallIntegerField(default=50, help_text="Higher shows first.")
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Provenance (seed 001): who made it, from where, how reliable, how used.
    author = models.CharField(
        max_length=150, blank=True, default="", db_default="", help_text="agent:<id> or a username"
    )
    source = models.CharField(
        max_length=12,
        choices=MemorySource.choices,
        default=MemorySource.STAFF,
        db_default=MemorySource.STAFF,
    )
    confidence = models.FloatField(
        default=1.0, db_default=1.0, help_text="0–1: how reliable it is."
    )
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    access_count = models.PositiveIntegerField(default=0, db_default=0)

    class Meta:
        db_table = "agent_notes"
        ordering = ["agent_id", "-priority", "created_at"]
        indexes = [
            # The context endpoint and the board's notes panel: an agent's active notes by priority.
            models.Index(fields=["agent", "active", "-priority"], name="agent_notes_active_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}: {self.content[:60]}"


class AgentSupervisor(models.Model):
    """Where an agent's supervisor answers (seed 004 "Supervisor"): its control API, reached only
    on a loopback address (constitution LOOPBACK_ONLY) or through the gate's control lane, with
    its bearer token encrypted at rest like agent credentials; and what it last said."""

    agent = models.OneToOneField(
        Agent, on_delete=models.CASCADE, primary_key=True, related_name="supervisor"
    )
    control_url = models.URLField(
        max_length=300,
        help_text="e.g. http://127.0.0.1:8765 — loopback only (or a host in "
        "RABS_CONTROL_GATE_HOSTS, the gate's control lane in the compose deployment).",
    )
    token_encrypted = models.TextField(editable=False)
    health = models.JSONField(default=dict, blank=True, editable=False)
    reachable = models.BooleanField(null=True, editable=False)
    checked_at = models.DateTimeField(null=True, blank=True, editable=False)
    error = models.TextField(blank=True, editable=False)
    last_command = models.ForeignKey(
        "brainframe.SupervisorCommand",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        editable=False,
        related_name="+",
    )

    class Meta:
        db_table = "agent_supervisors"

    def __str__(self) -> str:
        return f"{self.agent_id} supervisor at {self.control_url}"


class SupervisorCommand(models.Model):
    """A restart or stop sent to an agent's supervisor: by whom (a reviewer approving the agent's
    own ``agent.restart_self``, or staff from the board), why, and what the supervisor answered."""

    class Action(models.TextChoices):
        RESTART = "restart", "Restart the loop worker"
        SHUTDOWN = "shutdown", "Stop the agent service"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="supervisor_commands")
    action = models.CharField(max_length=10, choices=Action.choices)
    force = models.BooleanField(default=False, help_text="Kill at once instead of draining.")
    reason = models.CharField(max_length=200)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    call = models.ForeignKey(
        "brainframe.ToolCall",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="The agent's own agent.restart_self call, when it asked.",
    )
    ok = models.BooleanField()
    answer = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "supervisor_commands"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["agent", "-created_at"], name="supervisor_cmd_agent_idx")]

    def __str__(self) -> str:
        return f"{self.action} {self.agent_id} ({'ok' if self.ok else 'failed'})"
