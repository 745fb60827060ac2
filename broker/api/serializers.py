"""Request and response shapes of the agent API (also the OpenAPI schema's source)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from brainframe.choices import ContextBucket
from brainframe.events import CORE_EVENTS, EVENT_FAMILIES, EVENT_TYPES, PLAN_EVENTS
from brainframe.models import AgentTask, Hook, OriginRegistry, Tool


def _no_nul(value: Any, path: str = "") -> None:
    """PostgreSQL text cannot hold NUL; refuse it up front with the path where it is."""
    if isinstance(value, str) and "\x00" in value:
        raise serializers.ValidationError(f"NUL characters are not allowed (at {path or '/'})")
    if isinstance(value, dict):
        for key, item in value.items():
            _no_nul(key, f"{path}/{key}")
            _no_nul(item, f"{path}/{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _no_nul(item, f"{path}/{index}")


class StrictCharField(serializers.CharField):
    """A string, and only a string: no coercion of numbers, kept as sent (not trimmed: the audit
    records exactly what the agent said, and the schema's minLength means what it says)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


class StrictFloatField(serializers.FloatField):
    """A JSON number, and only a number: DRF would also take true/false and numeric strings."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictUUIDField(serializers.UUIDField):
    """A UUID written as a string (DRF would also take an integer)."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know, naming them."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["unknown field"] for name in unknown})
        return super().to_internal_value(data)


class OriginSerializer(StrictSerializer):
    origin_type = serializers.ChoiceField(choices=OriginRegistry.OriginType.choices)
    source_ref = StrictCharField(max_length=500)
    metadata = serializers.DictField(required=False, default=dict)

    def validate_metadata(self, value: dict[str, Any]) -> dict[str, Any]:
        _no_nul(value)
        return value


class ToolCallRequestSerializer(StrictSerializer):
    tool_id = StrictCharField(max_length=200)
    arguments = serializers.DictField(default=dict)
    reason = StrictCharField(max_length=4000, help_text="Why: becomes the call's R-Tag.")
    confidence = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=1)
    task_id = StrictUUIDField(required=False, allow_null=True)
    parent_r_tag = StrictUUIDField(
        required=False, allow_null=True, help_text="R-Tag of the decision this call follows from."
    )
    origin = OriginSerializer(required=False, allow_null=True)
    o_tag = StrictUUIDField(
        required=False,
        allow_null=True,
        help_text="An O-Tag this agent registered (an inbound event): the call joins that chain.",
    )

    def validate_arguments(self, value: dict[str, Any]) -> dict[str, Any]:
        _no_nul(value)
        return value


class ToolCallAnswerSerializer(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=["executed", "pending_approval", "denied", "invalid", "rejected", "expired"]
    )
    call_id = serializers.UUIDField()
    r_tag = serializers.UUIDField(allow_null=True)
    o_tag = serializers.UUIDField(allow_null=True)
    vpol = serializers.UUIDField(allow_null=True)
    result = serializers.JSONField(required=False)
    outcome = serializers.CharField(required=False)
    approval_id = serializers.UUIDField(required=False)
    expires_at = serializers.DateTimeField(required=False)
    approval_status = serializers.CharField(required=False)
    waiting_for = serializers.ChoiceField(
        choices=["worker"],
        required=False,
        help_text="Approved, but no worker has started the call yet (none is running, or all "
        "are busy): it runs when one does.",
    )
    code = serializers.CharField(required=False)
    detail = serializers.CharField(required=False)
    errors = serializers.ListField(  # type: ignore[assignment]
        child=serializers.DictField(), required=False
    )


class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    detail = serializers.CharField(allow_blank=True)
    field = serializers.CharField(required=False, allow_blank=True)  # "" for a field named ""
    errors = serializers.ListField(  # type: ignore[assignment]
        child=serializers.DictField(), required=False
    )


class ToolSerializer(serializers.ModelSerializer):
    class Meta:
        model = Tool
        fields = [
            "tool_id",
            "description",
            "category",
            "risk_level",
            "execution_mode",
            "validation_mode",
            "context_bucket",
            "data_class",
            "input_schema",
            "output_schema",
        ]


class TaskSerializer(serializers.ModelSerializer):
    class Meta:
        model = AgentTask
        fields = [
            "task_id",
            "title",
            "status",
            "priority",
            "payload",
            "result",
            "failure_reason",
            "progress",
            "o_tag",
            "created_at",
            "started_at",
            "completed_at",
        ]


class TaskProgressSerializer(StrictSerializer):
    progress = serializers.IntegerField(min_value=0, max_value=100)
    note = StrictCharField(max_length=2000, required=False, default="", allow_blank=True)


class TaskCompleteSerializer(StrictSerializer):
    result = serializers.JSONField(
        allow_null=True, help_text="What the task produced (null: nothing)."
    )

    def validate_result(self, value: Any) -> Any:
        _no_nul(value)
        return value


class TaskFailSerializer(StrictSerializer):
    reason = StrictCharField(max_length=4000)


class HeartbeatSerializer(StrictSerializer):
    status = serializers.ChoiceField(choices=["active", "idle", "error"])
    uptime_seconds = serializers.IntegerField(min_value=0, max_value=10**10)


class InboundTaskSerializer(StrictSerializer):
    title = StrictCharField(max_length=200)
    assign_to = serializers.SlugField(max_length=64)
    priority = serializers.IntegerField(min_value=0, max_value=100, default=50)
    payload = serializers.DictField(default=dict)


class InboundEventSerializer(StrictSerializer):
    event_id = StrictCharField(max_length=200, help_text="The platform's id: one event, one O-Tag.")
    event_type = serializers.RegexField(r"^[a-z][a-z0-9_.]{0,59}$")
    platform = serializers.RegexField(r"^[a-z][a-z0-9_-]{0,59}$")
    origin_type = serializers.ChoiceField(
        choices=["phone_call", "webhook", "sms", "email", "form"], default="webhook"
    )
    source_ref = StrictCharField(max_length=500, required=False, default="")
    text = StrictCharField(max_length=16000, required=False, default="", allow_blank=True)
    metadata = serializers.DictField(default=dict)
    task = InboundTaskSerializer(required=False, allow_null=True)
    in_reply_to = StrictUUIDField(
        required=False,
        allow_null=True,
        help_text="A result for an event pushed to you: the O-Tag its delivery carried.",
    )

    def validate_metadata(self, value: dict[str, Any]) -> dict[str, Any]:
        _no_nul(value)
        return value


class UsageSerializer(StrictSerializer):
    mode = serializers.ChoiceField(choices=["normal", "super", "external", "native"])
    model = serializers.RegexField(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,119}$")
    prompt_tokens = serializers.IntegerField(min_value=0, max_value=10**9, default=0)
    completion_tokens = serializers.IntegerField(min_value=0, max_value=10**9, default=0)
    seconds = serializers.FloatField(min_value=0, max_value=86400, default=0)
    model_calls = serializers.IntegerField(min_value=1, max_value=10**6, default=1)
    task_id = StrictUUIDField(required=False, allow_null=True)
    query_ref = StrictCharField(max_length=200, required=False, default="", allow_blank=True)


class ObservationSerializer(StrictSerializer):
    # Without a bucket, the bucket checker picks one (the observation is queued: 202).
    bucket = serializers.ChoiceField(choices=ContextBucket.choices, required=False)
    entity = StrictCharField(max_length=200)
    pattern_type = serializers.RegexField(r"^[a-z][a-z0-9_]{0,59}$")
    observation = StrictCharField(max_length=4000)
    severity = serializers.IntegerField(min_value=1, max_value=5, default=1)
    repeatable = StrictFloatField(min_value=0.5, max_value=1.5, default=1.0)
    # Provenance (seed 001): how reliable the agent judges it, and where it came from.
    confidence = StrictFloatField(min_value=0.0, max_value=1.0, default=1.0)
    source = serializers.ChoiceField(  # type: ignore[assignment]
        choices=["session", "api", "scheduled", "person"], default="api"
    )


class DeliverableUploadSerializer(StrictSerializer):
    file = serializers.FileField()
    task_id = serializers.UUIDField(required=False, allow_null=True)  # multipart: always text


#: A tool-call request refused: an audited answer, or an error before any call was recorded.
CALL_REFUSAL = PolymorphicProxySerializer(
    component_name="ToolCallRefusal",
    serializers=[ToolCallAnswerSerializer, ErrorSerializer],
    resource_type_field_name=None,
)


class HookDefinitionSerializer(StrictSerializer):
    """A hook an agent proposes (``loop.enable_hook``): code-free, checked by the control plane
    (docs/hooks.md)."""

    name = StrictCharField(max_length=120)
    description = StrictCharField(max_length=2000, required=False, allow_blank=True)
    kind = serializers.ChoiceField(choices=Hook.Kind.choices)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=sorted({*EVENT_TYPES, *EVENT_FAMILIES})),
        required=False,
        max_length=20,
    )
    condition = serializers.JSONField(required=False, allow_null=True)
    prompt = StrictCharField(max_length=4000, required=False, allow_blank=True)
    model = StrictCharField(max_length=120, required=False, allow_blank=True)
    schedule = StrictCharField(max_length=120, required=False, allow_blank=True)
    timezone = StrictCharField(max_length=64, required=False)
    effects = serializers.ListField(child=serializers.DictField(), min_length=1, max_length=5)
    max_fires_per_hour = serializers.IntegerField(min_value=1, max_value=600, required=False)


class HookStateSerializer(StrictSerializer):
    reason = StrictCharField(max_length=500, required=False, allow_blank=True)


class PlanEventSerializer(StrictSerializer):
    """What the agent's planner reports (its ``planner:*`` events)."""

    event = serializers.ChoiceField(choices=sorted(PLAN_EVENTS))
    plan_id = serializers.RegexField(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$")
    task_id = StrictUUIDField(required=False)
    goal = StrictCharField(max_length=1000, required=False, allow_blank=True)
    step = StrictCharField(max_length=100, required=False)
    tool_id = StrictCharField(max_length=200, required=False)
    status = StrictCharField(max_length=40, required=False, allow_blank=True)
    detail = StrictCharField(max_length=1000, required=False, allow_blank=True)
    steps = serializers.ListField(child=serializers.DictField(), required=False, max_length=50)


class CoreEventSerializer(StrictSerializer):
    """What the agent's orchestrator reports (``core:route`` / ``core:response``)."""

    event = serializers.ChoiceField(choices=sorted(CORE_EVENTS))
    task_id = StrictUUIDField()
    target = serializers.RegexField(
        r"^(planner|direct|agent:[a-z0-9][a-z0-9_-]{0,63})$",
        help_text="planner, direct, or agent:<agent_id>",
    )
    reason = StrictCharField(max_length=500, required=False, allow_blank=True)
    persona = StrictCharField(max_length=80, required=False)
    turn_id = StrictUUIDField(required=False)
    status = serializers.ChoiceField(
        choices=["done", "asked", "handed_over", "failed"], required=False
    )
    message = StrictCharField(max_length=500, required=False, allow_blank=True)


class CoreEventAnswerSerializer(serializers.Serializer):
    event = serializers.CharField()
    task_id = serializers.CharField()


class HookResourceSerializer(serializers.Serializer):
    """A hook as its agent reads it (``loop://hooks/{id}``)."""

    uri = serializers.CharField()
    id = serializers.UUIDField()
    agent_id = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    kind = serializers.ChoiceField(choices=Hook.Kind.choices)
    events = serializers.ListField(child=serializers.CharField())
    condition = serializers.JSONField(allow_null=True)
    prompt = serializers.CharField(allow_blank=True)
    model = serializers.CharField(allow_blank=True)
    schedule = serializers.CharField(allow_blank=True)
    timezone = serializers.CharField(allow_blank=True)
    effects = serializers.ListField(child=serializers.DictField())
    max_fires_per_hour = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Hook.Status.choices)
    proposed_by = serializers.CharField(allow_blank=True)
    reviewed_by = serializers.CharField(allow_null=True, allow_blank=True)
    review_reason = serializers.CharField(allow_blank=True)
    disabled_reason = serializers.CharField(allow_blank=True)
    evaluations = serializers.IntegerField()
    fired = serializers.IntegerField()
    consecutive_errors = serializers.IntegerField()
    last_error = serializers.CharField(allow_blank=True)
    last_fired_at = serializers.DateTimeField(allow_null=True)


class PlanEventAnswerSerializer(serializers.Serializer):
    event = serializers.CharField()
    plan_id = serializers.CharField()


class DiscoveredToolSerializer(serializers.Serializer):
    tool_id = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    risk_level = serializers.CharField()
    score = serializers.FloatField()
    matched_by = serializers.ChoiceField(choices=["vector", "text"])
    used_in_plans = serializers.ListField(child=serializers.CharField())
    success_rate = serializers.FloatField(allow_null=True)


class DiscoveredPlanSerializer(serializers.Serializer):
    plan_id = serializers.CharField()
    goal = serializers.CharField(allow_blank=True)
    outcome = serializers.CharField()
    score = serializers.FloatField()
    matched_by = serializers.ChoiceField(choices=["vector", "text"])
    steps = serializers.ListField(child=serializers.DictField())
    saved_at = serializers.DateTimeField()


class DiscoveredAgentSerializer(serializers.Serializer):
    agent_id = serializers.CharField()
    name = serializers.CharField()
    role = serializers.CharField(allow_blank=True)
    score = serializers.FloatField()
    matched_by = serializers.ChoiceField(choices=["vector", "text"])


class DiscoverAnswerSerializer(serializers.Serializer):
    query = serializers.CharField()
    mode = serializers.ChoiceField(choices=["hybrid", "text"])
    tools = DiscoveredToolSerializer(many=True)
    plans = DiscoveredPlanSerializer(many=True)
    agents = DiscoveredAgentSerializer(many=True)


# --- conversations (docs/ledgers.md) ------------------------------------------------------------


class TurnOpenSerializer(StrictSerializer):
    """A turn the agent starts itself: its query, in one of its threads or a new one."""

    text = StrictCharField(min_length=1, max_length=100_000)
    thread = StrictUUIDField(required=False)
    title = StrictCharField(max_length=200, required=False, allow_blank=True)
    task_id = StrictUUIDField(required=False)
    channel = serializers.ChoiceField(choices=["sms", "email", "chat"], required=False)


class TurnRecordSerializer(TurnOpenSerializer):
    """A whole turn, recorded once it is over: its query (``text``), the agent's notes, the tool
    calls it made (the agent's own), the answer."""

    answer = StrictCharField(max_length=100_000, allow_blank=True)
    tool_calls = serializers.ListField(child=StrictUUIDField(), max_length=500, required=False)
    notes = serializers.ListField(
        child=StrictCharField(min_length=1, max_length=100_000), max_length=50, required=False
    )


class TurnMessageSerializer(StrictSerializer):
    """Something the agent says or notes during a turn, before its answer."""

    content = StrictCharField(min_length=1, max_length=100_000)


class TurnCompleteSerializer(StrictSerializer):
    answer = StrictCharField(max_length=100_000, allow_blank=True)
    tool_calls = serializers.ListField(child=StrictUUIDField(), max_length=500, required=False)


class CompactSerializer(StrictSerializer):
    """A compaction the agent's model wrote: the summary of every turn up to
    ``summarised_through``; ``first_kept``: the first turn kept whole after it."""

    summary = StrictCharField(min_length=1, max_length=100_000)
    summarised_through = StrictUUIDField()
    first_kept = StrictUUIDField(required=False)


class LedgerMessageSerializer(serializers.Serializer):
    seq = serializers.IntegerField()
    role = serializers.CharField()
    author = serializers.CharField(allow_blank=True)
    person = serializers.UUIDField(allow_null=True)
    content = serializers.CharField(allow_blank=True)
    event = serializers.UUIDField(allow_null=True)
    at = serializers.DateTimeField()


class TurnAnswerSerializer(serializers.Serializer):
    turn_id = serializers.UUIDField()
    thread = serializers.UUIDField()
    seq = serializers.IntegerField()
    turn_type = serializers.ChoiceField(choices=["normal", "compaction"])
    status = serializers.ChoiceField(choices=["open", "completed", "interrupted"])
    agent = serializers.CharField()
    session = serializers.UUIDField(allow_null=True)
    o_tag = serializers.UUIDField(allow_null=True)
    task_id = serializers.UUIDField(allow_null=True)
    channel_context = serializers.DictField()
    answer = serializers.CharField(allow_blank=True)
    tool_calls = serializers.ListField(child=serializers.UUIDField())
    parent_hash = serializers.CharField()
    hash = serializers.CharField(allow_null=True)
    started_at = serializers.DateTimeField(allow_null=True)
    completed_at = serializers.DateTimeField(allow_null=True)
    summary = serializers.CharField(required=False, allow_blank=True)
    summarised_through = serializers.UUIDField(required=False)
    first_kept = serializers.UUIDField(required=False, allow_null=True)
    interrupted_by = serializers.UUIDField(required=False)
    messages = LedgerMessageSerializer(many=True, required=False)


class ThreadContextSerializer(serializers.Serializer):
    thread = serializers.UUIDField()
    summary = serializers.CharField(allow_blank=True)
    compaction = serializers.UUIDField(allow_null=True)
    turns = TurnAnswerSerializer(many=True)


# --- the loop (docs/channels.md) ------------------------------------------------------------------


class YieldSerializer(StrictSerializer):
    timeout_s = serializers.FloatField(required=False, min_value=0, max_value=30)


class YieldAnswerSerializer(serializers.Serializer):
    woke = serializers.BooleanField(help_text="Something arrived (else the time ran out).")
    traffic = serializers.ListField(child=serializers.DictField())
