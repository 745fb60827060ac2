"""The audit trail: origins (O-Tag), reasons (R-Tag), their links, and every tool call.

``origin_registry``, ``reason_log`` and ``tool_calls`` are append-only (see ``append_only``).
"""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.db import models
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from brainframe.choices import ContextBucket

from .agents import Agent
from .append_only import AppendOnlyModel
from .registry import Tool, ValidationPolicy

EMBEDDING_DIMENSIONS = 768


class OriginRegistry(AppendOnlyModel):
    """An O-Tag: the message, event or trigger that started a causal chain. THE SOURCE."""

    class OriginType(models.TextChoices):
        EMAIL = "email", "E-mail"
        SMS = "sms", "SMS"
        PHONE_CALL = "phone_call", "Phone call"
        WEBHOOK = "webhook", "Webhook"
        TASK = "task", "Task"
        SCHEDULE = "schedule", "Scheduled job"
        FORM = "form", "Form submission"
        MANUAL = "manual", "Manual (staff)"
        AGENT = "agent", "Agent initiative"
        A2A = "a2a", "A2A message (another agent)"
        HOOK = "hook", "Hook (automation an agent proposed)"

    APPEND_ONLY_MUTABLE: ClassVar[tuple[str, ...]] = ("bucket", "bucket_confidence")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    origin_type = models.CharField(max_length=20, choices=OriginType.choices)
    source_ref = models.CharField(
        max_length=500, help_text="Where it came from, e.g. a message id or URL."
    )
    timestamp = models.DateTimeField(auto_now_add=True)
    metadata = models.JSONField(default=dict, blank=True)
    # Who is asking (docs/access.md), written only by the system for an inbound message: the
    # sender as resolved then (person, relationship, participant, groups, channel), which the
    # broker's ACL stage reads for every call of the chain. Null: no person behind the chain.
    principal = models.JSONField(null=True, blank=True, editable=False)
    registered_by = models.ForeignKey(
        Agent, on_delete=models.PROTECT, null=True, blank=True, related_name="origins"
    )
    # Filled in by the bucket checker after registration.
    bucket = models.CharField(max_length=32, choices=ContextBucket.choices, blank=True)
    bucket_confidence = models.FloatField(null=True, blank=True)

    class Meta:
        db_table = "origin_registry"
        verbose_name = "origin (O-Tag)"
        verbose_name_plural = "origin registry (O-Tags)"
        ordering = ["-timestamp"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(bucket_confidence__gte=0, bucket_confidence__lte=1),
                name="%(app_label)s_%(class)s_bucket_confidence_0_1",
            ),
        ]

    def __str__(self) -> str:
        return f"O-Tag {self.id} ({self.origin_type}: {self.source_ref[:40]})"

    @property
    def o_tag(self) -> uuid.UUID:
        return self.id


class ReasonLog(AppendOnlyModel):
    """The decision ledger: one row per agent decision. Its ``id`` is the R-Tag. WHY.

    A knock-on decision points at its ``parent`` and shares the chain's O-Tag, V-Pol and
    ``chain_id`` (the root R-Tag), which the agent cannot change.
    """

    APPEND_ONLY_MUTABLE: ClassVar[tuple[str, ...]] = ("alignment", "vector", "embedding_model")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    parent = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="knock_ons"
    )
    # Indexed by reason_log_otag_idx (o_tag, created_at), which serves lookups by o_tag too.
    o_tag = models.ForeignKey(
        OriginRegistry,
        on_delete=models.PROTECT,
        related_name="reasons",
        db_column="o_tag",
        db_index=False,
    )
    vpol = models.ForeignKey(
        ValidationPolicy, on_delete=models.PROTECT, null=True, blank=True, related_name="reasons"
    )
    vpol_version = models.PositiveIntegerField(null=True, blank=True)
    chain_id = models.UUIDField(db_index=True, help_text="The root R-Tag of this causal chain.")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="reasons")
    tool = models.ForeignKey(
        Tool, on_delete=models.PROTECT, null=True, blank=True, related_name="reasons"
    )
    thought = models.TextField(help_text="The agent's stated reason.")
    confidence = models.FloatField(null=True, blank=True)
    risk = models.FloatField(null=True, blank=True, help_text="Assessed risk of the decision, 0–1.")
    alignment = models.FloatField(null=True, blank=True)
    vector = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_model = models.CharField(max_length=120, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "reason_log"
        verbose_name = "reason (R-Tag)"
        verbose_name_plural = "reason log (R-Tags)"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(confidence__gte=0, confidence__lte=1),
                name="%(app_label)s_%(class)s_confidence_0_1",
            ),
            models.CheckConstraint(
                condition=models.Q(risk__gte=0, risk__lte=1),
                name="%(app_label)s_%(class)s_risk_0_1",
            ),
            models.CheckConstraint(
                condition=models.Q(alignment__gte=0, alignment__lte=1),
                name="%(app_label)s_%(class)s_alignment_0_1",
            ),
        ]
        indexes = [
            # Semantic search over reasons (cosine distance, HNSW).
            HnswIndex(
                name="reason_log_vector_hnsw",
                fields=["vector"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
            # "Everything that came from this origin": reasons of one O-Tag in time order.
            models.Index(fields=["o_tag", "created_at"], name="reason_log_otag_idx"),
        ]

    def __str__(self) -> str:
        return f"R-Tag {self.id}: {self.thought[:60]}"

    @property
    def r_tag(self) -> uuid.UUID:
        return self.id


class ReasonEdge(models.Model):
    """Links an R-Tag to an entity it touched (a shift, an invoice, a participant…)."""

    class Relationship(models.TextChoices):
        CREATED = "created", "Created"
        UPDATED = "updated", "Updated"
        READ = "read", "Read"
        DELETED = "deleted", "Deleted"
        NOTIFIED = "notified", "Notified"
        REFERENCED = "referenced", "Referenced"

    id = models.BigAutoField(primary_key=True)
    reason = models.ForeignKey(ReasonLog, on_delete=models.PROTECT, related_name="edges")
    entity_type = models.CharField(max_length=60, help_text="e.g. roster.shift, participant")
    entity_id = models.CharField(max_length=120)
    relationship = models.CharField(max_length=20, choices=Relationship.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "reason_edges"
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["reason", "entity_type", "entity_id", "relationship"],
                name="%(app_label)s_%(class)s_unique_link",
            ),
        ]
        indexes = [
            # Graph traversal from an entity back to the reasons (and origins) that touched it.
            models.Index(fields=["entity_type", "entity_id"], name="reason_edges_entity_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.reason_id} {self.relationship} {self.entity_type}:{self.entity_id}"


class ToolCall(AppendOnlyModel):
    """The audit log of every tool invocation, including denials and invalid calls.

    Rows are hash-chained per agent: ``row_hash`` covers the row's recorded content and
    ``prev_hash``, the previous row's hash for the same agent (``seq`` orders the chain).
    Execution results arrive after the decision and are written once into the outcome columns.
    """

    class Face(models.TextChoices):
        REST = "rest", "REST (signed)"
        MCP = "mcp", "MCP"
        A2A = "a2a", "A2A"
        SYSTEM = "system", "The system (a hook, a job)"

    class Decision(models.TextChoices):
        EXECUTED = "executed", "Executed"
        PENDING_APPROVAL = "pending_approval", "Pending approval"
        EXECUTED_POST_REVIEW = "executed_post_review", "Executed, post-review queued"
        DENIED = "denied", "Denied"
        INVALID = "invalid", "Invalid"

    class Outcome(models.TextChoices):
        NOT_RUN = "not_run", "Not run"
        PENDING = "pending", "Pending"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        TIMED_OUT = "timed_out", "Timed out"
        CANCELLED = "cancelled", "Cancelled"

    APPEND_ONLY_MUTABLE: ClassVar[tuple[str, ...]] = (
        "output",
        "outcome",
        "error",
        "duration_ms",
        "executed_at",
        "executed_arguments",
        "outcome_hash",
        "outbound_findings",
        "alignment_rating",
        "alignment_reasons",
    )

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No single-column indexes on agent and tool: the chain (agent, seq), the action log
    # (agent, -timestamp) and tool_calls_tool_time_idx (tool, timestamp) lead with them, and
    # every index is written on each decision.
    agent = models.ForeignKey(
        Agent, on_delete=models.PROTECT, related_name="tool_calls", db_index=False
    )
    tool = models.ForeignKey(
        Tool,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="calls",
        db_index=False,
    )
    requested_tool_id = models.CharField(
        max_length=200, help_text="The tool id as the agent sent it (kept even if unknown)."
    )
    task = models.ForeignKey(
        "brainframe.AgentTask",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="tool_calls",
    )
    r_tag = models.ForeignKey(
        ReasonLog,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="tool_calls",
        db_column="r_tag",
    )
    o_tag = models.ForeignKey(
        OriginRegistry,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="tool_calls",
        db_column="o_tag",
    )
    vpol = models.ForeignKey(
        ValidationPolicy,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="tool_calls",
    )
    input = models.JSONField(default=dict, blank=True, help_text="Arguments as received.")
    decision = models.CharField(max_length=24, choices=Decision.choices)
    decision_code = models.CharField(max_length=80, blank=True)
    decision_detail = models.TextField(blank=True)
    decision_errors = models.JSONField(
        default=list, blank=True, help_text="[{path, message}] for invalid arguments."
    )
    threat_assessment = models.JSONField(default=dict, blank=True)
    idempotency_key = models.CharField(max_length=200, blank=True)
    request_hash = models.CharField(max_length=64, blank=True)
    face = models.CharField(
        max_length=8,
        choices=Face.choices,
        default=Face.REST,
        help_text="How the call came in (hashed from scheme 3 on).",
    )
    # Filled in once when the handler runs.
    executed_arguments = models.JSONField(null=True, blank=True)
    # What the outbound PII filter redacted before the text left ([{path, type, start, end}]).
    outbound_findings = models.JSONField(default=list, blank=True)
    output = models.JSONField(null=True, blank=True)
    outcome = models.CharField(max_length=12, choices=Outcome.choices, default=Outcome.NOT_RUN)
    error = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    executed_at = models.DateTimeField(null=True, blank=True)
    # Set by alignment scoring.
    alignment_rating = models.FloatField(null=True, blank=True)
    alignment_reasons = models.JSONField(default=list, blank=True)
    # Hash chain.
    #: 1: row_hash = sha256(canonical content incl. seq and prev_hash), computed in Python.
    #: 2: row_hash = sha256("prev_hash:seq:content_hash") computed in the database under the
    #: chain's lock, content_hash = sha256(canonical content incl. this scheme) from Python.
    #: 3: as 2, the content including ``face``.
    hash_scheme = models.PositiveSmallIntegerField(default=2)
    seq = models.PositiveBigIntegerField()
    prev_hash = models.CharField(max_length=64)
    row_hash = models.CharField(max_length=64)
    # Covers row_hash and the outcome columns once they are written (verify_audit checks both).
    outcome_hash = models.CharField(max_length=64, blank=True)
    # Set by the writer (not auto_now_add) because the hash covers it.
    timestamp = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "tool_calls"
        ordering = ["-timestamp"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "seq"], name="%(app_label)s_%(class)s_chain_seq_unique"
            ),
            models.UniqueConstraint(
                fields=["agent", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="%(app_label)s_%(class)s_idempotency_unique",
            ),
            models.CheckConstraint(
                condition=models.Q(alignment_rating__gte=0, alignment_rating__lte=1),
                name="%(app_label)s_%(class)s_alignment_rating_0_1",
            ),
        ]
        indexes = [
            # Alignment scoring and the admin: a tool's calls over time.
            models.Index(fields=["tool", "timestamp"], name="tool_calls_tool_time_idx"),
            # The action log and an agent's own call history, newest first.
            models.Index(fields=["agent", "-timestamp"], name="tool_calls_agent_time_idx"),
            # Alignment scoring: calls not yet rated (a small, moving set).
            models.Index(
                fields=["timestamp"],
                name="tool_calls_unrated_idx",
                condition=models.Q(alignment_reasons=[]),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.requested_tool_id} by {self.agent_id}: {self.decision}"

    @property
    def call_id(self) -> uuid.UUID:
        return self.id


class AuditCheckpoint(AppendOnlyModel):
    """A signed statement of the chains' heads (``broker.audit.checkpoints``): for each agent's
    audit chain, each event-log stream and the events ledger, its last seq and hash; and the
    heads of the conversation threads sealed since the one before. ``body`` is the exact text
    signed (canonical JSON, naming the previous checkpoint's digest, so checkpoints chain too);
    ``signature`` the deployment key's Ed25519 signature over it. ``at`` and ``key_id`` repeat
    the body's for the admin and the board; only the body counts."""

    id = models.BigAutoField(primary_key=True)
    seq = models.BigIntegerField(unique=True)
    at = models.DateTimeField()
    key_id = models.CharField(max_length=16)
    reason = models.CharField(max_length=16, help_text="beat, shutdown or manual")
    body = models.TextField()
    signature = models.CharField(max_length=100)

    class Meta:
        db_table = "audit_checkpoints"
        ordering = ["-seq"]
        verbose_name = "audit checkpoint"
        indexes = [
            # An export's checkpoints from a moment on; the board's last checkpoint.
            models.Index(fields=["at"], name="audit_checkpoints_at"),
        ]

    def __str__(self) -> str:
        return f"checkpoint #{self.seq} @ {self.at:%Y-%m-%d %H:%M:%S} ({self.reason})"
