"""Materialized views of the event log (seed 002): tables the log keeps current as events are
kept, and that ``manage.py replay_events --view NAME`` rebuilds from it (docs/events.md)."""

from __future__ import annotations

from django.db import models
from pgvector.django import VectorField

from .audit import EMBEDDING_DIMENSIONS


class KanbanCard(models.Model):
    """A task where the event log last saw it (``task:changed``): its agent, column, title."""

    task_id = models.UUIDField(primary_key=True)
    agent_id = models.CharField(max_length=64)
    status = models.CharField(max_length=20)
    title = models.CharField(max_length=200, blank=True)
    priority = models.IntegerField(default=50)
    progress = models.IntegerField(default=0)
    created_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField()

    class Meta:
        db_table = "view_kanban"
        ordering = ["agent_id", "-priority"]
        indexes = [models.Index(fields=["agent_id", "status"], name="view_kanban_agent_status")]

    def __str__(self) -> str:
        return f"{self.agent_id}: {self.title or self.task_id} [{self.status}]"


class PlanRecord(models.Model):
    """One saved plan of an agent and what became of it (``planner:*``): its history view."""

    plan_id = models.CharField(max_length=100, primary_key=True)
    agent_id = models.CharField(max_length=64)
    task_id = models.CharField(max_length=64, blank=True)
    goal = models.TextField(blank=True)
    steps = models.JSONField(default=list)
    status = models.CharField(max_length=20, help_text="saved, running, finished or failed")
    steps_finished = models.JSONField(default=dict, help_text="step id → achieved / not")
    saved_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        db_table = "view_plans"
        ordering = ["-saved_at"]
        indexes = [models.Index(fields=["agent_id", "saved_at"], name="view_plans_agent_saved")]

    def __str__(self) -> str:
        return f"{self.agent_id}: {self.goal[:60]} [{self.status}]"


class DiscoveryEntry(models.Model):
    """A tool, a plan or an agent as discovery searches it (seed 002's discovery layer): its
    text, for PostgreSQL full-text search, and its embedding (pgvector), computed off the
    request path."""

    class Kind(models.TextChoices):
        TOOL = "tool", "Tool"
        PLAN = "plan", "Plan"
        AGENT = "agent", "Agent"

    id = models.BigAutoField(primary_key=True)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    key = models.CharField(
        max_length=200, help_text="The tool's id, the plan's id or the agent's id."
    )
    agent_id = models.CharField(max_length=64, blank=True, help_text="A plan's agent.")
    text = models.TextField()
    vector = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_model = models.CharField(max_length=120, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "discovery_entries"
        verbose_name_plural = "discovery entries"
        ordering = ["kind", "key"]
        constraints = [
            models.UniqueConstraint(fields=["kind", "key"], name="discovery_one_per_key")
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.key}"


class AgentCard(models.Model):
    """An agent's status card as the event log has it: its status (``agent:status_changed``)
    and its tasks per Kanban column (from the Kanban view)."""

    agent_id = models.CharField(max_length=64, primary_key=True)
    status = models.CharField(max_length=20, blank=True)
    status_at = models.DateTimeField(null=True, blank=True)
    counts = models.JSONField(default=dict, help_text="Kanban column → tasks in it.")

    class Meta:
        db_table = "view_agent_cards"
        ordering = ["agent_id"]

    def __str__(self) -> str:
        return f"{self.agent_id} [{self.status}]"
