"""The model gateway's registry and record (seed 004 "OpenAI sampling proxy", seed 002 roles):
upstreams staff configure, per-agent virtual keys and limits, and one row per request."""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.db import models
from pgvector.django import VectorField

from .agents import Agent
from .audit import EMBEDDING_DIMENSIONS

#: The roles an agent asks for instead of a model (seed 002; Reggie's modes too).
ROLES = ("dreamer", "actuator", "indexer", "normal", "super")


class LLMUpstream(models.Model):
    """An OpenAI-compatible endpoint the control plane calls on the agents' behalf."""

    name = models.SlugField(max_length=64, primary_key=True)
    base_url = models.URLField(max_length=300, help_text="e.g. https://api.openai.com/v1")
    api_key_encrypted = models.TextField(blank=True, editable=False)
    served_models = models.JSONField(
        default=list, help_text='The models it serves, e.g. ["gpt-4o-mini"].'
    )
    price_in = models.DecimalField(
        max_digits=10, decimal_places=4, default=Decimal(0), help_text="USD per 1M input tokens"
    )
    price_out = models.DecimalField(
        max_digits=10, decimal_places=4, default=Decimal(0), help_text="USD per 1M output tokens"
    )
    external = models.BooleanField(
        default=True,
        help_text="Outside the organisation: prompts are redacted by the outbound PII filter "
        "unless the agent has consent_pii.",
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "llm_upstreams"
        verbose_name = "LLM upstream"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(price_in__gte=0, price_out__gte=0),
                name="%(app_label)s_%(class)s_prices_not_negative",
            )
        ]

    def __str__(self) -> str:
        return self.name


class LLMKey(models.Model):
    """A virtual key for one agent: stored as a hash, shown once, revocable."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="llm_keys")
    prefix = models.CharField(max_length=16, help_text="The key's first characters, to tell it.")
    key_sha256 = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "llm_keys"
        verbose_name = "LLM key"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.agent_id} {self.prefix}…"


class LLMLimits(models.Model):
    """The limits an agent's model access and a team share (LiteLLM's names)."""

    rpm_limit = models.PositiveIntegerField(null=True, blank=True, help_text="requests/minute")
    tpm_limit = models.PositiveIntegerField(null=True, blank=True, help_text="tokens/minute")
    max_parallel_requests = models.PositiveIntegerField(null=True, blank=True)
    max_budget = models.DecimalField(
        max_digits=12, decimal_places=4, null=True, blank=True, help_text="USD per period"
    )
    budget_duration = models.CharField(
        max_length=8, default="30d", help_text="The period: Nh or Nd, e.g. 1d, 30d."
    )
    soft_budget = models.DecimalField(
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="USD: staff are told once per period when spend crosses it.",
    )

    class Meta:
        abstract = True


class LLMBudget(LLMLimits):
    """An agent's model access: limits with LiteLLM's names, its models and role aliases, and
    whether it is suspended. No row: no access (a key alone is not enough)."""

    agent = models.OneToOneField(
        Agent, on_delete=models.CASCADE, primary_key=True, related_name="llm_budget"
    )
    allowed_models = models.JSONField(
        default=list, blank=True, help_text="Models it may use (empty: every upstream's)."
    )
    aliases = models.JSONField(
        default=dict,
        blank=True,
        help_text='Role → model, e.g. {"actuator": "gpt-4o-mini", "dreamer": "o3-mini"}.',
    )
    suspended = models.BooleanField(default=False, help_text="Refuse every request at once.")
    store_bodies = models.BooleanField(
        default=False, help_text="Keep prompts and answers in the record (PII-filtered)."
    )

    class Cache(models.TextChoices):
        OFF = "off", "Off"
        EXACT = "exact", "Identical prompts (hash)"
        SEMANTIC = "semantic", "Identical or similar prompts (cosine)"

    cache = models.CharField(
        max_length=10,
        choices=Cache.choices,
        default=Cache.OFF,
        help_text="Reuse answers to temperature-0 requests (the semantic cache).",
    )
    cache_threshold = models.FloatField(
        default=0.95, help_text="With the semantic cache: the cosine similarity a hit needs."
    )
    consent_pii = models.BooleanField(
        default=False,
        help_text="Prompts may carry personal information to external upstreams (otherwise "
        "the outbound PII filter redacts them before they leave).",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "llm_budgets"
        verbose_name = "LLM budget"

    def __str__(self) -> str:
        return f"{self.agent_id} model access"


class LLMTeam(LLMLimits):
    """A group of agents sharing limits and a budget (LiteLLM's teams): every member's requests
    count against both its own model access and each of its teams'."""

    name = models.SlugField(max_length=64, primary_key=True)
    agents = models.ManyToManyField(Agent, related_name="llm_teams", blank=True)
    allowed_models = models.JSONField(
        default=list, blank=True, help_text="Models its agents may use (empty: no restriction)."
    )
    suspended = models.BooleanField(default=False, help_text="Refuse every member's requests.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "llm_teams"
        verbose_name = "LLM team"
        ordering = ["name"]

    def __str__(self) -> str:
        return f"team {self.name}"


class LLMRequest(models.Model):
    """One request through the gateway, recorded by the gateway itself (not self-reported)."""

    id = models.BigAutoField(primary_key=True)
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="llm_requests")
    endpoint = models.CharField(max_length=24)  # chat.completions / embeddings / models
    role = models.CharField(max_length=16, blank=True)
    model = models.CharField(max_length=120, blank=True)
    upstream = models.CharField(max_length=64, blank=True)
    stream = models.BooleanField(default=False)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal(0))
    latency_ms = models.PositiveIntegerField(default=0)
    status = models.PositiveSmallIntegerField()
    error_code = models.CharField(max_length=40, blank=True)
    redactions = models.PositiveIntegerField(
        default=0, help_text="Personal details the PII filter took out before the prompt left."
    )
    cache_hit = models.BooleanField(
        default=False, help_text="Answered from the agent's cache, without the upstream."
    )
    threats = models.JSONField(
        default=list,
        blank=True,
        help_text="Guardian assessments of tool-call arguments the model proposed (flag/block).",
    )
    request_body = models.JSONField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        db_table = "llm_requests"
        verbose_name = "LLM request"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["agent", "-created_at"], name="llm_requests_agent_idx")]

    def __str__(self) -> str:
        return f"{self.agent_id} {self.model} {self.status}"


class LLMCacheEntry(models.Model):
    """A temperature-0 answer kept for reuse: by the agent, the model that gave it (a role
    pointed at another model misses), the prompt's hash and, for the semantic cache, its
    embedding."""

    id = models.BigAutoField(primary_key=True)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="llm_cache")
    model = models.CharField(max_length=120)
    prompt_sha256 = models.CharField(max_length=64, help_text="The whole request's hash.")
    params_sha256 = models.CharField(
        max_length=64, help_text="Everything but the messages: a similar prompt must match it."
    )
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "llm_cache"
        verbose_name = "LLM cache entry"
        verbose_name_plural = "LLM cache entries"
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "model", "prompt_sha256"], name="llm_cache_one_per_prompt"
            )
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} {self.model} {self.prompt_sha256[:12]}"
