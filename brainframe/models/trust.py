"""Trust over time: the record of every monitoring-level change (seed 000 §9)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from brainframe.choices import MonitoringLevel

from .agents import Agent
from .registry import Tool


class MonitoringLevelChange(models.Model):
    """One graduation, demotion or manual change of a tool's or an agent's monitoring level."""

    class Rule(models.TextChoices):
        GRADUATION = "graduation", "Graduation (30 days at threshold)"
        DEMOTION_MISALIGNMENTS = "demotion_misalignments", "Demotion: 5+ misalignments in 24 h"
        DEMOTION_SCORE = "demotion_score", "Demotion: score below threshold"
        DEMOTION_CRITICAL = "demotion_critical", "Demotion: critical misalignment"
        DIRECTIVE_SAFETY = "directive_safety", "SAFETY_FIRST escalation"
        MANUAL = "manual", "Manual change by staff"

    id = models.BigAutoField(primary_key=True)
    tool = models.ForeignKey(
        Tool, on_delete=models.PROTECT, null=True, blank=True, related_name="level_changes"
    )
    agent = models.ForeignKey(
        Agent, on_delete=models.PROTECT, null=True, blank=True, related_name="level_changes"
    )
    from_level = models.PositiveSmallIntegerField(choices=MonitoringLevel.choices)
    to_level = models.PositiveSmallIntegerField(choices=MonitoringLevel.choices)
    rule = models.CharField(max_length=24, choices=Rule.choices)
    reason = models.TextField()
    evidence = models.JSONField(default=dict, blank=True)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "monitoring_level_changes"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(tool__isnull=False, agent__isnull=True)
                    | models.Q(tool__isnull=True, agent__isnull=False)
                ),
                name="%(app_label)s_%(class)s_tool_xor_agent",
            ),
            models.CheckConstraint(
                condition=models.Q(
                    from_level__gte=0, from_level__lte=4, to_level__gte=0, to_level__lte=4
                ),
                name="%(app_label)s_%(class)s_levels_0_4",
            ),
        ]
        indexes = [
            # A tool's level history, newest first (admin inline, graduation evidence).
            models.Index(fields=["tool", "-created_at"], name="level_changes_tool_idx"),
        ]

    def __str__(self) -> str:
        subject = self.tool_id or self.agent_id
        return f"{subject}: {self.from_level} → {self.to_level} ({self.rule})"


class AlignmentSnapshot(models.Model):
    """A tool's or an agent's alignment on one (Brisbane) day, written by the nightly job.

    "Held the threshold for 30 consecutive days" is a count over these rows.
    """

    id = models.BigAutoField(primary_key=True)
    tool = models.ForeignKey(
        Tool, on_delete=models.CASCADE, null=True, blank=True, related_name="snapshots"
    )
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, null=True, blank=True, related_name="snapshots"
    )
    date = models.DateField()
    score = models.FloatField(null=True, blank=True, help_text="alignment_score_90d that day")
    level = models.PositiveSmallIntegerField(choices=MonitoringLevel.choices)
    volume_30d = models.PositiveIntegerField(default=0, help_text="Rated calls, last 30 days.")
    misalignments_30d = models.PositiveIntegerField(default=0)
    high_priority_30d = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "alignment_snapshots"
        ordering = ["-date"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(tool__isnull=False, agent__isnull=True)
                    | models.Q(tool__isnull=True, agent__isnull=False)
                ),
                name="%(app_label)s_%(class)s_tool_xor_agent",
            ),
            models.CheckConstraint(
                condition=models.Q(score__gte=0, score__lte=1),
                name="%(app_label)s_%(class)s_score_0_1",
            ),
            # Graduation: one row per subject and day (the job upserts it).
            models.UniqueConstraint(
                fields=["tool", "date"],
                condition=models.Q(tool__isnull=False),
                name="%(app_label)s_%(class)s_tool_day",
            ),
            models.UniqueConstraint(
                fields=["agent", "date"],
                condition=models.Q(agent__isnull=False),
                name="%(app_label)s_%(class)s_agent_day",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool_id or self.agent_id} {self.date}: {self.score}"
