"""Work: agent tasks (the Kanban), the approval queue, and the deliverables agents produce."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models

from brainframe.choices import Boundary, RiskLevel, ShareClass

from .agents import Agent
from .audit import OriginRegistry, ReasonLog, ToolCall
from .registry import Tool, ValidationPolicy


class AgentTask(models.Model):
    """A unit of work in an agent's inbox; its status is the board's Kanban column."""

    class Status(models.TextChoices):
        TODO = "todo", "To Do"
        IN_PROGRESS = "in_progress", "In Progress"
        REVIEW = "review", "Review"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    task_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="tasks")
    title = models.CharField(max_length=200)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.TODO)
    priority = models.PositiveSmallIntegerField(default=50, help_text="0–100, higher first.")
    payload = models.JSONField(default=dict, blank=True)
    result = models.JSONField(null=True, blank=True)
    failure_reason = models.TextField(blank=True)
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent complete.")
    on_behalf_of = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="agent_tasks",
        help_text="The person the task runs for; tools' role requirements are checked on them.",
    )
    o_tag = models.ForeignKey(
        OriginRegistry,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="tasks",
        db_column="o_tag",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "agent_tasks"
        ordering = ["-priority", "created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(priority__gte=0, priority__lte=100),
                name="%(app_label)s_%(class)s_priority_0_100",
            ),
            models.CheckConstraint(
                condition=models.Q(progress__gte=0, progress__lte=100),
                name="%(app_label)s_%(class)s_progress_0_100",
            ),
        ]
        indexes = [
            # The inbox and the Kanban: an agent's tasks in one status, most important first.
            models.Index(
                fields=["agent", "status", "-priority", "created_at"],
                name="agent_tasks_agent_status_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.title} [{self.get_status_display()}]"


class ApprovalRequest(models.Model):
    """A human-in-the-loop review item (the approval queue, seed 000 §13).

    It is bound to the exact tool, arguments and policy version it was created for:
    ``arguments_hash`` is sha256 of the canonical JSON of ``arguments``.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        MODIFIED = "modified", "Modified"
        ESCALATED = "escalated", "Escalated"
        EXPIRED = "expired", "Expired"

    class Kind(models.TextChoices):
        PRE_EXECUTION = "pre_execution", "Before execution"
        POST_EXECUTION = "post_execution", "Post-execution review"
        SPOT_CHECK = "spot_check", "Spot-check"

    class ReviewerGroup(models.TextChoices):
        REVIEWERS = "reviewers", "Reviewers (team leads)"
        SENIOR = "senior_reviewers", "Senior reviewers (directors)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tool = models.ForeignKey(Tool, on_delete=models.PROTECT, related_name="approvals")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="approvals")
    tool_call = models.OneToOneField(
        ToolCall, on_delete=models.PROTECT, related_name="approval", null=True, blank=True
    )
    task = models.ForeignKey(
        AgentTask, on_delete=models.PROTECT, null=True, blank=True, related_name="approvals"
    )
    r_tag = models.ForeignKey(
        ReasonLog,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="approvals",
        db_column="r_tag",
    )
    vpol = models.ForeignKey(
        ValidationPolicy,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="approvals",
    )
    vpol_version = models.PositiveIntegerField(null=True, blank=True)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.PRE_EXECUTION)
    arguments = models.JSONField(help_text="The full arguments the agent wants to pass.")
    arguments_hash = models.CharField(max_length=64)
    reason = models.TextField(help_text="The agent's stated reason (from the R-Tag).")
    summary = models.TextField(help_text="What will happen if approved, in plain words.")
    risk_level = models.CharField(max_length=10, choices=RiskLevel.choices)
    confidence = models.FloatField(null=True, blank=True)
    tags = ArrayField(models.CharField(max_length=80), default=list, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    reviewer_group = models.CharField(
        max_length=20, choices=ReviewerGroup.choices, default=ReviewerGroup.REVIEWERS
    )
    timeout_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="approval_decisions",
    )
    decision_reason = models.TextField(blank=True)
    modified_arguments = models.JSONField(null=True, blank=True)
    escalation_count = models.PositiveSmallIntegerField(default=0)

    class Meta:
        db_table = "approval_queue"
        verbose_name = "approval request"
        ordering = ["timeout_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(confidence__gte=0, confidence__lte=1),
                name="%(app_label)s_%(class)s_confidence_0_1",
            ),
            models.CheckConstraint(
                condition=~models.Q(status="rejected") | ~models.Q(decision_reason=""),
                name="%(app_label)s_%(class)s_rejection_has_reason",
            ),
        ]
        indexes = [
            # Expiry job and the approval board: open items, soonest timeout first.
            models.Index(
                fields=["timeout_at"],
                name="approval_open_timeout_idx",
                condition=models.Q(status__in=["pending", "escalated"]),
            ),
            models.Index(fields=["agent", "status"], name="approval_queue_agent_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.tool_id} for {self.agent_id} [{self.status}]"


class NotificationDelivery(models.Model):
    """One notification about an approval, to one recipient over one channel: written before
    the send and marked delivered after it, so a retry of one channel (a flaky webhook) never
    repeats what another channel (the e-mail) already delivered."""

    class Channel(models.TextChoices):
        EMAIL = "email", "E-mail"
        WEBHOOK = "webhook", "Webhook"

    approval = models.ForeignKey(
        ApprovalRequest, on_delete=models.CASCADE, related_name="deliveries"
    )
    event = models.CharField(max_length=20, help_text="created, escalated or expired")
    channel = models.CharField(max_length=16, choices=Channel.choices)
    recipient = models.CharField(max_length=500, help_text="An e-mail address or the webhook URL.")
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.TextField(blank=True)
    digest = models.BooleanField(
        default=False, help_text="Held for the recipient's next digest e-mail."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "notification_deliveries"
        verbose_name_plural = "notification deliveries"
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["approval", "event", "channel", "recipient"],
                name="%(app_label)s_%(class)s_once_per_recipient",
            )
        ]

    def __str__(self) -> str:
        state = "delivered" if self.delivered_at else f"{self.attempts} attempt(s)"
        return f"{self.event} by {self.channel} to {self.recipient} ({state})"


def deliverable_upload_to(instance: Deliverable, filename: str) -> str:
    task = instance.task_id or "no-task"
    return f"outbox/{instance.agent_id}/{task}/{filename}"


class Deliverable(models.Model):
    """A file an agent placed in its outbox for a task (the board's Deliverables panel)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="deliverables")
    task = models.ForeignKey(
        AgentTask, on_delete=models.PROTECT, null=True, blank=True, related_name="deliverables"
    )
    file = models.FileField(upload_to=deliverable_upload_to, max_length=400)
    filename = models.CharField(max_length=200)
    content_type = models.CharField(max_length=120)
    size_bytes = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    # Sharing (docs/access.md, "Sharing"): the owner (its agent) sets the boundary; MAC rules
    # no owner can override come after it; ``ask`` is decided by ``share_policy`` (ABAC).
    boundary = models.CharField(
        max_length=4, choices=Boundary.choices, default=Boundary.NONE, db_default=Boundary.NONE
    )
    share_policy = models.JSONField(
        default=dict,
        blank=True,
        help_text="For boundary ask: a condition over requester.* and item.* (docs/access.md).",
    )
    participant_id = models.CharField(
        max_length=40, blank=True, default="", db_default="", help_text="Whose data it is."
    )
    data_class = models.CharField(
        max_length=12, choices=ShareClass.choices, default=ShareClass.GENERAL,
        db_default=ShareClass.GENERAL,
    )  # fmt: skip
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "deliverables"
        ordering = ["-created_at"]
        indexes = [
            # The deliverables panel: an agent's newest files.
            models.Index(fields=["agent", "-created_at"], name="deliverables_agent_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}/{self.filename}"


class CapabilityGrant(models.Model):
    """What an agent was granted on asking for it (seed 004 capability requests): access to a
    tool, to an upstream MCP server's tools, or a higher monitoring level for one tool. Made by
    the approved ``rabs.capability.request`` call (``granted_by_call``: the audit of who asked,
    why, and who approved); time-boxed grants are withdrawn by the minute job at ``until``."""

    class Kind(models.TextChoices):
        TOOL = "tool", "Access to a tool"
        UPSTREAM = "upstream", "Access to an upstream MCP server's tools"
        LEVEL = "level", "A higher monitoring level for a tool"
        PERSON = "person", "A permission for a person, through an agent"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="grants")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    tool_ids = ArrayField(
        models.CharField(max_length=120),
        default=list,
        help_text="The tools the grant added the agent to (or whose level it raised).",
    )
    upstream = models.CharField(max_length=64, blank=True)
    # kind person (docs/access.md, "Grants"): whose ACL permissions it widens, and how (tool
    # patterns in ``tool_ids``; scopes such as {"participant": "any"}).
    person = models.ForeignKey(
        "brainframe.Person", on_delete=models.PROTECT, null=True, blank=True, related_name="grants"
    )
    scopes = models.JSONField(default=dict, blank=True)
    level_before = models.PositiveSmallIntegerField(null=True, blank=True)
    level = models.PositiveSmallIntegerField(null=True, blank=True)
    granted_by_call = models.OneToOneField(
        ToolCall, on_delete=models.PROTECT, related_name="grant", null=True, blank=True
    )
    until = models.DateTimeField(
        null=True, blank=True, help_text="When it ends (every grant made now has an end)."
    )
    # Who approved the request it was made from (a person grant: someone the person's ACL
    # policy names as an owner, or staff with the permission).
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="grants_approved",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    withdrawn_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        db_table = "capability_grants"
        permissions = [
            (
                "approve_person_grant",
                "May approve a grant for any person (beyond the owners their ACL policy names)",
            )
        ]
        ordering = ["-created_at"]
        indexes = [
            # The minute job: live grants whose time is up.
            models.Index(
                fields=["until"],
                name="capability_grants_due_idx",
                condition=models.Q(withdrawn_at__isnull=True, until__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        what = self.upstream or ", ".join(self.tool_ids)
        return f"{self.agent_id}: {self.get_kind_display()} {what}"
