"""LLM usage and cost: a price table staff edit, and one row per answered query or native call."""

from __future__ import annotations

from decimal import Decimal

from django.db import models

from .agents import Agent
from .work import AgentTask


class ModelPrice(models.Model):
    """What one model costs, in US dollars. Edited in the admin; costs use the price in force
    when the usage is recorded."""

    model = models.CharField(max_length=120, primary_key=True)
    input_per_million = models.DecimalField(
        max_digits=10, decimal_places=4, default=Decimal(0), help_text="USD per 1M input tokens"
    )
    output_per_million = models.DecimalField(
        max_digits=10, decimal_places=4, default=Decimal(0), help_text="USD per 1M output tokens"
    )
    per_minute = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        default=Decimal(0),
        help_text="USD per minute of streaming (realtime voice)",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "model_prices"
        ordering = ["model"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(
                    input_per_million__gte=0, output_per_million__gte=0, per_minute__gte=0
                ),
                name="%(app_label)s_%(class)s_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return self.model

    def cost(self, prompt_tokens: int, completion_tokens: int, seconds: float) -> Decimal:
        return (
            self.input_per_million * prompt_tokens / 1_000_000
            + self.output_per_million * completion_tokens / 1_000_000
            + self.per_minute * Decimal(str(seconds)) / 60
        ).quantize(Decimal("0.000001"))


class LLMUsage(models.Model):
    """Tokens (or streamed seconds) one query used, in which mode and model, and what it cost."""

    class Mode(models.TextChoices):
        NORMAL = "normal", "Normal (read-only, one turn)"
        SUPER = "super", "Super (multi-turn)"
        EXTERNAL = "external", "External (realtime voice)"
        NATIVE = "native", "Native (inline helper)"

    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="llm_usage")
    task = models.ForeignKey(
        AgentTask, on_delete=models.SET_NULL, null=True, blank=True, related_name="llm_usage"
    )
    mode = models.CharField(max_length=10, choices=Mode.choices)
    model = models.CharField(max_length=120)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0)
    model_calls = models.PositiveIntegerField(default=1)
    cost_usd = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="Empty when the model has no price in the price table.",
    )
    query_ref = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "llm_usage"
        verbose_name = "LLM usage"
        verbose_name_plural = "LLM usage and cost"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["agent", "-created_at"], name="llm_usage_agent_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(seconds__gte=0), name="%(app_label)s_%(class)s_seconds_0"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} {self.mode} {self.model}: {self.cost_usd}"
