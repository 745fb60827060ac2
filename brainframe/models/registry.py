"""What agents may do and under which authority: tools, V-Pols, prime directives, buckets."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.core.validators import validate_slug
from django.db import models
from simple_history.models import HistoricalRecords

from brainframe.choices import (
    BUCKET_SCOPES,
    ContextBucket,
    DataClass,
    ExecutionMode,
    MonitoringLevel,
    PermissionTier,
    RiskLevel,
    ValidationMode,
)


def validate_agent_access(value: str) -> None:
    """An agent id (a slug), or ``*``: every agent."""
    if value != "*":
        validate_slug(value)


class Tool(models.Model):
    """An entry of the tools registry: one action an agent can ask the broker to perform."""

    class Category(models.TextChoices):
        OPERATIONS = "operations", "Operations"
        COMMS = "comms", "Comms"
        HR = "hr", "HR"
        FINANCE = "finance", "Finance"
        DATA = "data", "Data"
        SYSTEM = "system", "System"

    class HandlerType(models.TextChoices):
        FUNCTION = "function", "Function (Python callable)"
        SQL = "sql", "SQL (parameterised query)"
        API = "api", "API (HTTP call)"
        SCRIPT = "script", "Script (a program in the OS sandbox)"
        MCP = "mcp", "MCP (a tool of an upstream MCP server)"
        A2A = "a2a", "A2A (a task handed to an external agent)"

    tool_id = models.CharField(
        primary_key=True,
        max_length=120,
        help_text="Dotted identifier, e.g. roster.shift.create or comms.email.send.",
    )
    description = models.TextField(
        blank=True, help_text="For the agents: what the tool does and how to call it."
    )
    reviewer_summary = models.TextField(
        blank=True,
        help_text="For reviewers: one plain sentence on what running it does in the business, "
        "shown on its approval cards (empty: a neutral sentence, never the agents' description).",
    )
    category = models.CharField(max_length=12, choices=Category.choices)
    agent_access = ArrayField(
        models.CharField(max_length=64, validators=[validate_agent_access]),
        default=list,
        blank=True,
        help_text="Agents that may invoke this tool, e.g. henry, reggie; * for every agent.",
    )
    role_requirements = ArrayField(
        models.CharField(max_length=80),
        default=list,
        blank=True,
        help_text="RABS user roles, one of which the person a task runs for must hold.",
    )
    risk_level = models.CharField(max_length=10, choices=RiskLevel.choices)
    execution_mode = models.CharField(
        max_length=10, choices=ExecutionMode.choices, default=ExecutionMode.REVIEW
    )
    context_bucket = models.CharField(max_length=32, choices=ContextBucket.choices)
    monitoring_level = models.PositiveSmallIntegerField(
        choices=MonitoringLevel.choices, default=MonitoringLevel.REVIEW_ALL
    )
    monitoring_ceiling = models.PositiveSmallIntegerField(
        choices=MonitoringLevel.choices,
        default=MonitoringLevel.AUTONOMOUS,
        help_text="Highest level this tool may graduate to (critical tools default to 2).",
    )
    alignment_score_90d = models.DecimalField(max_digits=5, decimal_places=4, null=True, blank=True)
    validation_mode = models.CharField(
        max_length=10, choices=ValidationMode.choices, default=ValidationMode.INTERCEPT
    )
    data_class = models.CharField(max_length=10, choices=DataClass.choices)
    handler_type = models.CharField(max_length=10, choices=HandlerType.choices)
    handler_config = models.JSONField(
        default=dict,
        blank=True,
        help_text="Per handler type (docs/admin-guide.md). script: {argv, cwd?, timeout_s?, "
        "limits?, keep_outputs?, egress?} — runs in the OS sandbox (docs/sandbox.md): no "
        "network unless egress names hosts; sees only /usr, the interpreter and its tool "
        "directory (read-only, at /tool) and a private /workspace of limits.workspace_mb "
        "(64 MB); as an unprivileged user without capabilities; limits memory_mb 1024, cpu_s 30, "
        "nofile 64, fsize_mb 16, nproc 32 by default; every process killed when the call ends.",
    )
    input_schema = models.JSONField(default=dict, help_text="JSON Schema for the arguments.")
    output_schema = models.JSONField(
        default=dict, blank=True, help_text="JSON Schema the handler's output must satisfy."
    )
    permission_tier = models.CharField(
        max_length=20,
        choices=PermissionTier.choices,
        default=PermissionTier.WRITE_SAFE,
        help_text="Executor tier: the trust an agent needs (READ_ONLY any … ADMIN system).",
    )
    approval_timeout_minutes = models.PositiveIntegerField(
        null=True, blank=True, help_text="Overrides the default approval timeout (30 min)."
    )
    external_channel = models.BooleanField(
        default=False, help_text="Output leaves the business (e-mail, SMS…): PII filter applies."
    )
    idempotent = models.BooleanField(
        default=False,
        help_text="Calling it twice with the same arguments has the effect of calling it once "
        "(shown to MCP clients as idempotentHint).",
    )
    modes = ArrayField(
        models.CharField(max_length=12),
        default=list,
        blank=True,
        help_text="Reggie's modes that may call it, e.g. super; empty: any. The "
        "broker works the mode out from the call's task (its query and channel), never from "
        "what the agent says; a call on no task is refused.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords(table_name="tools_history")

    class Meta:
        db_table = "tools"
        ordering = ["tool_id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(monitoring_level__gte=0, monitoring_level__lte=4),
                name="%(app_label)s_%(class)s_monitoring_level_0_4",
            ),
            models.CheckConstraint(
                condition=models.Q(monitoring_ceiling__gte=0, monitoring_ceiling__lte=4),
                name="%(app_label)s_%(class)s_monitoring_ceiling_0_4",
            ),
            models.CheckConstraint(
                condition=models.Q(alignment_score_90d__gte=0, alignment_score_90d__lte=1),
                name="%(app_label)s_%(class)s_alignment_0_1",
            ),
            models.CheckConstraint(
                condition=models.Q(approval_timeout_minutes__gte=1),
                name="%(app_label)s_%(class)s_approval_timeout_positive",
            ),
        ]
        indexes = [
            # GET /api/v1/tools/: the tools an agent may call (agent_access @> ARRAY[agent]).
            GinIndex(fields=["agent_access"], name="tools_agent_access_gin"),
        ]

    def __str__(self) -> str:
        return self.tool_id

    @property
    def enabled(self) -> bool:
        return self.execution_mode != ExecutionMode.DISABLED


class ValidationPolicy(models.Model):
    """A V-Pol: the rules and oversight that govern a chain of decisions (seed 000 §4).

    ``rules`` is an ordered list of conditions over the call (see ``brainframe.vpol_rules``);
    ``version`` increases on every change so an approval can be bound to the policy it was
    created under.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.SlugField(max_length=80, unique=True, help_text="e.g. scheduling_write")
    description = models.TextField(blank=True)
    rules = models.JSONField(default=list, blank=True)
    context_bucket = models.CharField(max_length=32, choices=ContextBucket.choices, blank=True)
    tool_patterns = ArrayField(
        models.CharField(max_length=120),
        default=list,
        blank=True,
        help_text="Tools this policy governs, as glob patterns (e.g. roster.*).",
    )
    enforcement_mode = models.CharField(
        max_length=10, choices=ValidationMode.choices, default=ValidationMode.INTERCEPT
    )
    priority = models.PositiveSmallIntegerField(
        default=50, help_text="When several policies match a tool, the highest governs."
    )
    version = models.PositiveIntegerField(default=1, editable=False)
    active = models.BooleanField(default=True)
    council_required = models.BooleanField(
        default=False,
        help_text="Changes to what this policy decides with need a council vote (setting this "
        "is immediate; clearing it is itself a change for the council).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords(table_name="validation_policies_history")

    class Meta:
        db_table = "validation_policies"
        verbose_name = "validation policy (V-Pol)"
        verbose_name_plural = "validation policies (V-Pol)"
        ordering = ["-priority", "name"]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def vpol_id(self) -> uuid.UUID:
        return self.id


class PrimeDirective(models.Model):
    """A non-negotiable rule that overrides all other agent behaviour (seed 000 §14)."""

    class Escalation(models.TextChoices):
        """What an ``escalate`` predicate of the directive does to the call it matched."""

        SENIOR_REVIEW = "senior_review", "Senior reviewers decide the call"
        SAFETY_LEVEL_ZERO = (
            "safety_level_zero",
            "Senior reviewers decide; the tool drops to level 0 and they are e-mailed at once",
        )

    code = models.CharField(
        primary_key=True,
        max_length=40,
        help_text="UPPER_SNAKE identifier named in denials, e.g. PRIVACY_NO_PII.",
    )
    priority = models.PositiveSmallIntegerField(help_text="Higher is evaluated first (0–100).")
    scope = models.TextField(help_text="What the directive covers, as shown to agents.")
    rule_text = models.TextField(help_text="The rule as injected into every agent's system prompt.")
    predicates = models.JSONField(
        default=list,
        blank=True,
        help_text="Block predicates the broker evaluates (decision filter).",
    )
    escalation = models.CharField(
        max_length=24,
        choices=Escalation.choices,
        default=Escalation.SENIOR_REVIEW,
        help_text="What a matching 'escalate' predicate does beyond the senior review "
        "(SAFETY_FIRST: the tool drops to level 0 and senior reviewers are told at once).",
    )
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords(table_name="prime_directives_history")

    class Meta:
        db_table = "prime_directives"
        ordering = ["-priority", "code"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(priority__gte=0, priority__lte=100),
                name="%(app_label)s_%(class)s_priority_0_100",
            ),
            models.CheckConstraint(
                condition=models.Q(code__regex=r"^[A-Z][A-Z0-9_]*$"),
                name="%(app_label)s_%(class)s_code_upper_snake",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.code} ({self.priority})"


class ContextBucketDefinition(models.Model):
    """One of the 20 fixed knowledge domains, with its scope and the bucket checker's hints.

    The set of buckets is fixed (``ContextBucket``); staff may edit keywords and exemplars.
    """

    bucket = models.CharField(primary_key=True, max_length=32, choices=ContextBucket.choices)
    number = models.PositiveSmallIntegerField(unique=True)
    scope = models.TextField()
    keywords = ArrayField(
        models.CharField(max_length=60),
        default=list,
        blank=True,
        help_text="Keyword rules for the bucket checker (lower case).",
    )
    exemplars = ArrayField(
        models.TextField(),
        default=list,
        blank=True,
        help_text="Example texts that belong in this bucket.",
    )

    class Meta:
        db_table = "context_bucket_definitions"
        ordering = ["number"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(number__gte=1, number__lte=20),
                name="%(app_label)s_%(class)s_number_1_20",
            ),
            models.CheckConstraint(
                condition=models.Q(bucket__in=ContextBucket.values),
                name="%(app_label)s_%(class)s_bucket_known",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.number}. {self.bucket}"

    @staticmethod
    def default_scope(bucket: str) -> str:
        return BUCKET_SCOPES[bucket]


class ConstitutionRule(models.Model):
    """A constitutional rule (seed 001 Governor; seed 002 ratchet): rules can be added, never
    removed or weakened. The database refuses DELETE, any change to a rule's words or
    predicates, and any lowering of its enforcement; the admin offers only strengthening.
    """

    class Enforcement(models.TextChoices):
        RECORD = "record", "Record (architectural; noted in the audit)"
        FLAG = "flag", "Flag (send the call to review)"
        BLOCK = "block", "Block (deny the call)"

    STRENGTH = {"record": 0, "flag": 1, "block": 2}

    code = models.CharField(primary_key=True, max_length=40)
    number = models.PositiveSmallIntegerField(unique=True)
    title = models.CharField(max_length=120)
    text = models.TextField()
    enforcement = models.CharField(max_length=8, choices=Enforcement.choices)
    predicates = models.JSONField(
        default=list, blank=True, help_text="Conditions (V-Pol language) that violate the rule."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    history = HistoricalRecords(table_name="constitution_rules_history")

    class Meta:
        db_table = "constitution_rules"
        ordering = ["number"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(code__regex=r"^[A-Z][A-Z0-9_]*$"),
                name="%(app_label)s_%(class)s_code_upper_snake",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.number}. {self.title} ({self.enforcement})"


class MCPUpstream(models.Model):
    """An MCP server whose tools the broker can forward to (handler type ``mcp``): reached by
    Streamable HTTP URL or started as a stdio command. Staff import its tools into the registry,
    disabled until they enable them."""

    class Transport(models.TextChoices):
        HTTP = "http", "Streamable HTTP (URL)"
        STDIO = "stdio", "stdio (a command the broker starts)"

    class Trust(models.TextChoices):
        TRUSTED = "trusted", "Trusted (its annotations are taken as staff's proposal)"
        UNTRUSTED = "untrusted", "Untrusted (its annotations never skip review)"

    name = models.SlugField(
        primary_key=True, max_length=64, help_text="Short name; imported tools are <name>.<tool>."
    )
    description = models.TextField(blank=True)
    transport = models.CharField(max_length=8, choices=Transport.choices)
    url = models.URLField(blank=True, help_text="For HTTP: the server's MCP endpoint.")
    command = models.JSONField(
        default=list,
        blank=True,
        help_text='For stdio: the command and its arguments, e.g. ["uvx", "mcp-server-time"].',
    )
    headers = models.JSONField(
        default=dict, blank=True, help_text="Extra HTTP headers (an upstream's own API key)."
    )
    enabled = models.BooleanField(default=True)
    server_info = models.JSONField(
        default=dict, blank=True, editable=False, help_text="What it said about itself."
    )
    last_imported_at = models.DateTimeField(null=True, blank=True, editable=False)
    trust = models.CharField(
        max_length=10,
        choices=Trust.choices,
        default=Trust.UNTRUSTED,
        help_text="From an untrusted upstream, readOnlyHint does not by itself let a tool run "
        "without review.",
    )
    listed = models.JSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text="What it lists now: each tool's name → the sha256 of its definition.",
    )
    listed_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    history = HistoricalRecords(
        table_name="mcp_upstreams_history", excluded_fields=["listed", "listed_at"]
    )

    class Meta:
        db_table = "mcp_upstreams"
        verbose_name = "MCP upstream"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=(models.Q(transport="http") & ~models.Q(url=""))
                | (models.Q(transport="stdio") & ~models.Q(command=[])),
                name="%(app_label)s_%(class)s_has_url_or_command",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class UpstreamToolChange(models.Model):
    """What an upstream changed about a tool already imported (its description, schemas or
    annotations, or the tool gone): flagged at re-import and applied only when staff accept it,
    so an upstream cannot change what the registry says a tool does behind staff's back."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        ACCEPTED = "accepted", "Accepted"
        DISMISSED = "dismissed", "Dismissed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    upstream = models.ForeignKey(MCPUpstream, on_delete=models.CASCADE, related_name="changes")
    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="upstream_changes")
    fields = models.JSONField(default=list, help_text="What changed: description, inputSchema…")
    before = models.JSONField(default=dict, help_text="The definition as imported.")
    after = models.JSONField(
        null=True, blank=True, help_text="The definition the upstream gives now (none: removed)."
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    detected_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
    )

    class Meta:
        db_table = "upstream_tool_changes"
        ordering = ["-detected_at"]
        constraints = [
            # One open flag per tool: a later re-import updates it.
            models.UniqueConstraint(
                fields=["tool"],
                condition=models.Q(status="pending"),
                name="%(app_label)s_%(class)s_one_pending_per_tool",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool_id}: {', '.join(self.fields)} ({self.status})"
