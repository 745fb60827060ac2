"""The council (seed 001 Governor) and the reviewers' own tools: standing approvals and
notification preferences.

Constitutional changes — a new or strengthened constitution rule, a prime directive, a V-Pol
marked ``council_required``, the council's own membership — are proposals the seated members
vote on; a passed proposal is applied through the same services as an admin edit. Votes are
append-only and hash-chained per proposal (``verify_audit`` checks them).
"""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from simple_history.models import HistoricalRecords

from .agents import Agent
from .append_only import AppendOnlyModel
from .registry import Tool, ValidationPolicy
from .work import ApprovalRequest


class CouncilMember(models.Model):
    """A seat on the council. Seats change only through a passed proposal (or, while the council
    is empty, by a superuser: how the first members are seated)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="council_seat"
    )
    seated_at = models.DateTimeField(auto_now_add=True)
    seated_by = models.ForeignKey(
        "CouncilProposal",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="The proposal that seated this member (empty for the first members).",
    )

    history = HistoricalRecords(table_name="council_members_history")

    class Meta:
        db_table = "council_members"
        ordering = ["seated_at"]

    def __str__(self) -> str:
        return self.user.get_username()


class CouncilProposal(models.Model):
    """A change only the council may make, open for votes until its deadline."""

    class Kind(models.TextChoices):
        CONSTITUTION_ADD = "constitution_add", "New constitution rule"
        CONSTITUTION_STRENGTHEN = "constitution_strengthen", "Strengthen a constitution rule"
        DIRECTIVE = "directive", "Add or change a prime directive"
        VPOL = "vpol", "Change a council-governed V-Pol"
        SEAT = "seat", "Seat a council member"
        UNSEAT = "unseat", "Unseat a council member"

    class Status(models.TextChoices):
        OPEN = "open", "Open for votes"
        PASSED = "passed", "Passed and applied"
        REJECTED = "rejected", "Rejected"
        EXPIRED = "expired", "Expired (quorum not reached)"
        FAILED = "failed", "Passed, but could not be applied"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=24, choices=Kind.choices)
    target = models.CharField(
        max_length=150,
        help_text="What changes: a rule or directive code, a V-Pol name, a username.",
    )
    change = models.JSONField(default=dict, blank=True, help_text="The proposed values.")
    title = models.CharField(max_length=200)
    rationale = models.TextField(blank=True)
    proposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="council_proposals"
    )
    electorate = ArrayField(
        models.IntegerField(),
        default=list,
        help_text="The user ids seated when the proposal opened: who may vote.",
    )
    yes_needed = models.PositiveSmallIntegerField()
    quorum = models.PositiveSmallIntegerField(help_text="Votes (any choice) needed to count.")
    deadline = models.DateTimeField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    outcome = models.TextField(blank=True, help_text="What was applied, or why not.")
    what_if = models.JSONField(
        default=dict, blank=True, help_text="What the change would have decided on recent calls."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    history = HistoricalRecords(table_name="council_proposals_history")

    class Meta:
        db_table = "council_proposals"
        ordering = ["-created_at"]
        indexes = [
            models.Index(
                fields=["deadline"],
                name="council_open_deadline_idx",
                condition=models.Q(status="open"),
            )
        ]

    def __str__(self) -> str:
        return f"{self.title} [{self.status}]"


class CouncilVote(AppendOnlyModel):
    """One member's vote on one proposal: final, append-only, and hash-chained per proposal
    (``row_hash`` = sha256 of the previous vote's hash and this vote's canonical content)."""

    class Choice(models.TextChoices):
        YES = "yes", "Yes"
        NO = "no", "No"
        ABSTAIN = "abstain", "Abstain"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    proposal = models.ForeignKey(CouncilProposal, on_delete=models.PROTECT, related_name="votes")
    member = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="council_votes"
    )
    choice = models.CharField(max_length=8, choices=Choice.choices)
    comment = models.TextField(blank=True)
    cast_at = models.DateTimeField()
    seq = models.PositiveSmallIntegerField()
    prev_hash = models.CharField(max_length=64)
    row_hash = models.CharField(max_length=64)

    class Meta:
        db_table = "council_votes"
        ordering = ["proposal", "seq"]
        constraints = [
            models.UniqueConstraint(
                fields=["proposal", "member"], name="%(app_label)s_%(class)s_one_per_member"
            ),
            models.UniqueConstraint(
                fields=["proposal", "seq"], name="%(app_label)s_%(class)s_chain_seq"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.member_id}: {self.choice}"


class StandingApproval(models.Model):
    """ "Approve this and calls exactly like it for the next N hours": a reviewer's time-boxed
    grant for one agent, one tool and an argument pattern (the same keys; each value either
    exactly the approved one or, where the reviewer said so, any). It covers only calls the gate
    would send to ordinary review (never a flagged, escalated or denied call), under the same
    V-Pol version; every call it lets through names it in the audit."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="standing_approvals")
    tool = models.ForeignKey(Tool, on_delete=models.PROTECT, related_name="standing_approvals")
    pattern = models.JSONField(
        help_text='{argument: {"equals": value} or {"any": true}}: the same keys as the call.'
    )
    vpol = models.ForeignKey(
        ValidationPolicy, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    vpol_version = models.PositiveIntegerField(null=True, blank=True)
    from_approval = models.ForeignKey(
        ApprovalRequest, on_delete=models.PROTECT, related_name="standing_approvals"
    )
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="standing_approvals"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    until = models.DateTimeField()
    uses = models.PositiveIntegerField(default=0)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
    )
    revoked_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        db_table = "standing_approvals"
        ordering = ["-created_at"]
        indexes = [
            models.Index(
                fields=["agent", "tool", "until"],
                name="standing_live_idx",
                condition=models.Q(revoked_at__isnull=True),
            )
        ]

    def __str__(self) -> str:
        return f"{self.tool_id} for {self.agent_id} until {self.until:%Y-%m-%d %H:%M}"


class ReviewerPreference(models.Model):
    """How a reviewer wants approval e-mails: each at once, or gathered in a digest."""

    class Digest(models.TextChoices):
        IMMEDIATE = "immediate", "Each at once"
        QUARTER_HOUR = "15min", "Every 15 minutes"
        HOURLY = "hourly", "Hourly"

    MINUTES: ClassVar[dict[str, int]] = {"immediate": 0, "15min": 15, "hourly": 60}

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reviewer_preference"
    )
    digest = models.CharField(max_length=10, choices=Digest.choices, default=Digest.IMMEDIATE)
    last_digest_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "reviewer_preferences"

    def __str__(self) -> str:
        return f"{self.user_id}: {self.digest}"
