"""What the event log keeps beyond the board's events: calls' fates, governance, the planner,
memory, inbound events, hooks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from brainframe.models import ToolCall

from .base import (
    ALIGNMENT_SNAPSHOTTED,
    CALL_BLOCKED,
    CHAIN_REFUSED,
    CORE_RESPONSE,
    CORE_ROUTE,
    ESCALATED,
    HOOK_DISABLED,
    HOOK_ENABLED,
    HOOK_EVALUATED,
    HOOK_FAILED,
    HOOK_FIRED,
    HOOK_PROPOSED,
    HOOK_REVIEWED,
    INBOUND_RECEIVED,
    MEMORY_RECORDED,
    PLAN_FAILED,
    PLAN_SAVED,
    POLICY_CHANGED,
    RULE_VIOLATED,
    SHADOW_DECISION,
    SHARE_DECIDED,
    STEP_FINISHED,
    STEP_STARTED,
    TOOL_EXECUTED,
    TOOL_FAILED,
    Event,
)


@dataclass(frozen=True)
class CallEvent(Event):
    """What became of a tool call, as the event log keeps it (the audit row holds the rest)."""

    call_id: str
    agent_id: str
    tool_id: str
    decision: str
    code: str
    outcome: str
    duration_ms: int | None = None
    detail: str = ""
    r_tag: str | None = None
    o_tag: str | None = None
    vpol: str | None = None
    face: str = ""

    @classmethod
    def of(cls, call: ToolCall) -> CallEvent:
        return cls(
            call_id=str(call.id),
            agent_id=call.agent_id,
            tool_id=call.requested_tool_id,
            decision=call.decision,
            code=call.decision_code,
            outcome=call.outcome,
            duration_ms=call.duration_ms,
            detail=((call.error or call.decision_detail) or "")[:300],
            r_tag=str(call.r_tag_id) if call.r_tag_id else None,
            o_tag=str(call.o_tag_id) if call.o_tag_id else None,
            vpol=str(call.vpol_id) if call.vpol_id else None,
            face=call.face,
        )


@dataclass(frozen=True)
class ToolExecuted(CallEvent):
    """Seed 001: a call's handler ran and succeeded (its outcome is written)."""

    NAME: ClassVar[str] = TOOL_EXECUTED


@dataclass(frozen=True)
class ToolFailed(CallEvent):
    """A call's handler ran and failed, timed out, or was interrupted (``detail``: why)."""

    NAME: ClassVar[str] = TOOL_FAILED


@dataclass(frozen=True)
class CallBlocked(CallEvent):
    """Seed 002, "what was blocked and why": a call refused before it ran (not allowed, invalid
    arguments, an unknown tool, a threat, the gate) other than by a rule."""

    NAME: ClassVar[str] = CALL_BLOCKED


@dataclass(frozen=True)
class RuleViolated(CallEvent):
    """A call refused by a prime directive, a constitution rule or a V-Pol rule (``code``)."""

    NAME: ClassVar[str] = RULE_VIOLATED


@dataclass(frozen=True)
class ShadowDecision(Event):
    """A V-Pol rule in shadow mode (``mode: shadow``) matched a call: what it would have decided
    (``would``: its action) beside what was decided (``decided``). Nothing acted on it; it is
    written with the decision (docs/access.md, "Shadow mode")."""

    NAME: ClassVar[str] = SHADOW_DECISION
    call_id: str
    agent_id: str
    tool_id: str
    policy: str
    rule: str
    would: str
    decided: str
    reason: str = ""


@dataclass(frozen=True)
class ShareDecided(Event):
    """A read of something another agent owns, decided DAC → MAC → ABAC (``layer`` said it;
    docs/access.md, "Sharing"): every decision is kept, allowed or not."""

    NAME: ClassVar[str] = SHARE_DECIDED
    agent_id: str
    item: str
    owner: str
    allowed: bool
    layer: str
    reason: str
    person_id: str | None = None


@dataclass(frozen=True)
class ChainRefused(Event):
    """A call refused before it was decided because what the agent sent about its chain did not
    hold (docs/access.md, "Authority is derived"): a task, parent call or O-Tag that is not its
    own, or an origin that would replace its chain's. Nothing was run; no audit row was made."""

    NAME: ClassVar[str] = CHAIN_REFUSED
    agent_id: str
    tool_id: str
    code: str
    field: str
    detail: str
    face: str
    task_id: str | None = None
    parent_r_tag: str | None = None
    o_tag: str | None = None


#: Decision codes that name a rule (the rest of the refusals are ``CallBlocked``).
RULE_CODE_PREFIXES = ("directive:", "constitution:", "vpol")


def call_outcome_event(call: ToolCall, **outcome: Any) -> CallEvent:
    """The event of a call whose outcome was just written (``outcome``: the outcome's values
    when they are not yet on ``call``: ``outcome``, ``duration_ms``, ``error``)."""
    event = CallEvent.of(call)
    state = outcome.get("outcome", call.outcome)
    error = outcome.get("error", call.error) or ""
    cls = ToolExecuted if state == ToolCall.Outcome.SUCCEEDED else ToolFailed
    return cls(
        **{
            **event.__dict__,
            "outcome": state,
            "duration_ms": outcome.get("duration_ms", call.duration_ms),
            "detail": (error or call.decision_detail or "")[:300],
        }
    )


def call_refusal_event(call: ToolCall) -> CallEvent:
    """The event of a call refused at its decision."""
    code = call.decision_code or ""
    cls = RuleViolated if code.startswith(RULE_CODE_PREFIXES) else CallBlocked
    return cls.of(call)


@dataclass(frozen=True)
class Escalated(Event):
    """A human was called in at once: SAFETY_FIRST put a tool back to level 0, or a critical
    misalignment dropped an agent (or a tool) to level 0."""

    NAME: ClassVar[str] = ESCALATED
    subject_kind: str
    subject_id: str
    reason: str
    agent_id: str | None = None
    call_id: str | None = None


@dataclass(frozen=True)
class AlignmentSnapshotted(Event):
    """The nightly job took the day's alignment snapshots (``rows``: tools and agents): the days
    ``replay_events --view alignment`` recomputes."""

    NAME: ClassVar[str] = ALIGNMENT_SNAPSHOTTED
    day: str
    rows: int


@dataclass(frozen=True)
class PolicyChanged(Event):
    """A governing rule changed: a V-Pol, a prime directive or a constitution rule (``kind``),
    by a person (``by``) or by a council decision (``proposal_id``)."""

    NAME: ClassVar[str] = POLICY_CHANGED
    kind: str
    policy_id: str
    action: str
    by: str | None = None
    version: int | None = None
    proposal_id: str | None = None


@dataclass(frozen=True)
class PlanEvent(Event):
    """Seed 001's planner: an agent's plan (saved, a step started or finished, failed), as the
    agent reported it through the broker."""

    agent_id: str
    plan_id: str
    task_id: str | None = None
    goal: str = ""
    step: str | None = None
    tool_id: str | None = None
    status: str = ""
    detail: str = ""
    steps: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class PlanSaved(PlanEvent):
    NAME: ClassVar[str] = PLAN_SAVED


@dataclass(frozen=True)
class StepStarted(PlanEvent):
    NAME: ClassVar[str] = STEP_STARTED


@dataclass(frozen=True)
class StepFinished(PlanEvent):
    NAME: ClassVar[str] = STEP_FINISHED


@dataclass(frozen=True)
class PlanFailed(PlanEvent):
    NAME: ClassVar[str] = PLAN_FAILED


@dataclass(frozen=True)
class CoreEvent(Event):
    """Seed 001's Core, the orchestrator of an agent's runtime: where a request was routed
    (``target``: ``planner``, ``direct`` or ``agent:<id>``, the persona that answers and why),
    and what came back (``status``: done, asked, handed_over, failed), as the agent reported it
    through the broker."""

    agent_id: str
    task_id: str
    target: str
    reason: str = ""
    persona: str | None = None
    turn_id: str | None = None
    status: str = ""
    message: str = ""


@dataclass(frozen=True)
class CoreRoute(CoreEvent):
    NAME: ClassVar[str] = CORE_ROUTE


@dataclass(frozen=True)
class CoreResponse(CoreEvent):
    NAME: ClassVar[str] = CORE_RESPONSE


#: Core's events by the short name an agent reports (``POST /api/v1/core/events/``).
CORE_EVENTS: dict[str, type[CoreEvent]] = {"route": CoreRoute, "response": CoreResponse}


#: The planner's events by the short name an agent reports (``POST /api/v1/plans/events/``).
PLAN_EVENTS: dict[str, type[PlanEvent]] = {
    "plan_saved": PlanSaved,
    "step_started": StepStarted,
    "step_finished": StepFinished,
    "plan_failed": PlanFailed,
}


@dataclass(frozen=True)
class MemoryRecorded(Event):
    """Something entered an agent's memory in the control plane: a context-bucket entry or a
    note (``kind``), from ``source``."""

    NAME: ClassVar[str] = MEMORY_RECORDED
    kind: str
    entry_id: str
    agent_id: str | None = None
    bucket: str = ""
    source: str = ""


@dataclass(frozen=True)
class InboundReceived(Event):
    """An external event arrived (a Type 3 agent's webhook, an A2A message): its origin
    (``o_tag``; the text stays in the origin registry, not in the log), and the task it made."""

    NAME: ClassVar[str] = INBOUND_RECEIVED
    o_tag: str
    agent_id: str
    origin_type: str
    platform: str
    event_type: str
    assigned_to: str | None = None
    task_id: str | None = None
    blocked: bool = False


@dataclass(frozen=True)
class HookEvent(Event):
    """Something about a hook: proposed, reviewed, enabled, disabled, evaluated (a verdict was
    reached), fired (its effects), failed (an evaluation or effect went wrong)."""

    hook_id: str
    agent_id: str
    hook_name: str
    kind: str
    detail: str = ""
    event_ref: str = ""
    effects: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class HookProposed(HookEvent):
    NAME: ClassVar[str] = HOOK_PROPOSED


@dataclass(frozen=True)
class HookReviewed(HookEvent):
    NAME: ClassVar[str] = HOOK_REVIEWED


@dataclass(frozen=True)
class HookEnabled(HookEvent):
    NAME: ClassVar[str] = HOOK_ENABLED


@dataclass(frozen=True)
class HookDisabled(HookEvent):
    NAME: ClassVar[str] = HOOK_DISABLED


@dataclass(frozen=True)
class HookEvaluated(HookEvent):
    NAME: ClassVar[str] = HOOK_EVALUATED


@dataclass(frozen=True)
class HookFired(HookEvent):
    NAME: ClassVar[str] = HOOK_FIRED


@dataclass(frozen=True)
class HookFailed(HookEvent):
    NAME: ClassVar[str] = HOOK_FAILED
