"""Proposed V-Pol rules (seed 002's flywheel): what recurring rejections and denials suggest,
waiting for staff to accept (after a what-if) or dismiss. docs/access.md, "Proposed rules"."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class RuleProposal(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        ACCEPTED = "accepted", "Accepted"
        DISMISSED = "dismissed", "Dismissed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tool_id = models.CharField(max_length=120)
    argument = models.CharField(max_length=120, help_text="The argument the pattern is about.")
    value = models.JSONField(help_text="The value the recurring calls had.")
    action = models.CharField(max_length=16, help_text="review (from rejections) or deny")
    rule = models.JSONField(help_text="The V-Pol rule proposed (the condition language).")
    evidence = models.JSONField(default=list, help_text="The calls it was drawn from (ids).")
    count = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    vpol = models.CharField(
        max_length=80, blank=True, help_text="The V-Pol it was added to (when accepted)."
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "rule_proposals"
        ordering = ["-created_at"]
        constraints = [
            # One proposal per pattern: a dismissed one is not proposed again.
            models.UniqueConstraint(
                fields=["tool_id", "argument", "value", "action"],
                name="%(app_label)s_rule_proposal_once",
            )
        ]

    def __str__(self) -> str:
        return f"{self.tool_id}: {self.argument}={self.value} → {self.action}"
