"""The product's named events, one typed payload each, and the bus that carries them.

Every event the code emits is defined here, once: its name (seed 001's ``guardian:…`` and
``security:…`` names, and the board's own) and a frozen dataclass for its payload. Publishers
build the dataclass; listeners (the board's websocket) get it back with ``event_from_wire``.

Publishing is best effort and off the caller's path: events go to one long-lived event loop in a
background thread, which keeps its Redis connections open, so a tool call neither waits for nor
fails because of a notification. A board that misses an event catches up on its next load.

This module sits below ``broker`` and ``dashboard``: it imports only the schema.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from channels.layers import get_channel_layer
from django.db import connection, transaction
from django.utils import timezone

from brainframe.telemetry import events_observed
from brainframe.models import SYSTEM_STREAM, ApprovalRequest, MonitoringLevelChange, ToolCall

log = logging.getLogger(__name__)

#: The Channels group every open board joins.
BOARD_GROUP = "board"

# --- Event names (the only place they are spelled) ---------------------------------------------
# ``family:name``; the family (before the colon) is what the board's feed and the sinks filter on.
TOOL_CALL = "tool_call"  # the board's row of a call (not kept: the executor/governance events are)
APPROVAL_CREATED = "approval:created"
APPROVAL_DECIDED = "approval:decided"
APPROVAL_ESCALATED = "approval:escalated"
APPROVAL_EXPIRED = "approval:expired"
TASK_CHANGED = "task:changed"
HEARTBEAT = "agent:heartbeat"
LEVEL_CHANGED = "governance:level_changed"
AGENT_CHANGED = "agent:changed"
GUARDIAN_ASSESSMENT_COMPLETE = "guardian:assessment_complete"
SECURITY_THREAT_DETECTED = "security:threat_detected"
MODEL_TOOL_CALL_FLAGGED = "guardian:model_tool_call_flagged"
COUNCIL_CHANGED = "governance:council_changed"
TOOL_EXECUTED = "executor:tool_executed"
TOOL_FAILED = "executor:tool_failed"
CALL_BLOCKED = "governance:call_blocked"
RULE_VIOLATED = "governance:rule_violated"
ESCALATED = "governance:escalated"
POLICY_CHANGED = "governance:policy_changed"
PLAN_SAVED = "planner:plan_saved"
STEP_STARTED = "planner:step_started"
STEP_FINISHED = "planner:step_finished"
PLAN_FAILED = "planner:plan_failed"
MEMORY_RECORDED = "memory:recorded"

#: The payload fields that name what an event is about, in order of preference.
_SUBJECT_FIELDS = (
    "approval_id",
    "call_id",
    "task_id",
    "plan_id",
    "proposal_id",
    "entry_id",
    "policy_id",
    "subject_id",
)


@dataclass(frozen=True)
class Event:
    """An event's payload. Subclasses name the event in ``NAME``; ``LOGGED``: kept in the event
    log (all but the board's own refresh events)."""

    NAME: ClassVar[str]
    LOGGED: ClassVar[bool] = True

    def wire(self) -> dict[str, Any]:
        """The event as it travels on the channel layer (plain JSON; payload fields are plain
        values, so a shallow copy is the payload — ``dataclasses.asdict`` would copy deeply, and
        cost more than the rest of publishing)."""
        return {"event": self.NAME, "payload": dict(self.__dict__)}

    @classmethod
    def family(cls) -> str:
        return cls.NAME.partition(":")[0]

    def about(self) -> str:
        for name in _SUBJECT_FIELDS:
            value = self.__dict__.get(name)
            if value:
                return str(value)[:100]
        return ""

    def log_row(self, at: datetime | None = None) -> dict[str, Any]:
        """The event as ``brainframe_append_events`` appends it, with its content hash."""
        agent_id = self.__dict__.get("agent_id") or None
        row = {
            "stream": agent_id or SYSTEM_STREAM,
            "name": self.NAME,
            "family": self.family(),
            "agent_id": agent_id,
            "subject": self.about(),
            "payload": dict(self.__dict__),
            "at": _utc_iso(at or timezone.now()),
        }
        row["content_hash"] = event_content_hash(row)
        return row


def _utc_iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat()


def _canonical(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    ).encode()


#: What an event's content hash covers (its chain position enters in the database).
CONTENT_FIELDS = ("stream", "name", "agent_id", "subject", "payload", "at")


def event_content_hash(row: dict[str, Any]) -> str:
    """sha256 of an event row's canonical content (``at`` as UTC ISO 8601 text)."""
    content = {k: row[k] for k in CONTENT_FIELDS}
    if isinstance(content["at"], datetime):
        content["at"] = _utc_iso(content["at"])
    return hashlib.sha256(_canonical(content)).hexdigest()


def event_row_hash(prev_hash: str, seq: int, content_hash: str) -> str:
    return hashlib.sha256(f"{prev_hash}:{seq}:{content_hash}".encode()).hexdigest()


@dataclass(frozen=True)
class ToolCallChanged(Event):
    """A tool call was decided or its outcome written: the board's log row, carrying all the
    row shows so the board renders it without a database read."""

    NAME: ClassVar[str] = TOOL_CALL
    LOGGED: ClassVar[bool] = False
    call_id: str
    agent_id: str
    agent_name: str
    tool_id: str
    decision: str
    code: str
    outcome: str
    duration_ms: int | None
    timestamp: str
    o_tag: str | None = None

    @classmethod
    def of(cls, call: ToolCall) -> ToolCallChanged:
        return cls(
            call_id=str(call.id),
            agent_id=call.agent_id,
            agent_name=call.agent.name,
            tool_id=call.requested_tool_id,
            decision=call.decision,
            code=call.decision_code,
            outcome=call.outcome,
            duration_ms=call.duration_ms,
            timestamp=call.timestamp.isoformat(),
            o_tag=str(call.o_tag_id) if call.o_tag_id else None,
        )


@dataclass(frozen=True)
class ApprovalEvent(Event):
    """An approval request as the board and notifications need it."""

    approval_id: str
    call_id: str | None
    agent_id: str
    tool_id: str
    status: str
    kind: str
    decided_by: str | None
    timeout_at: str

    @classmethod
    def of(cls, approval: ApprovalRequest) -> ApprovalEvent:
        return cls(
            approval_id=str(approval.id),
            call_id=str(approval.tool_call_id) if approval.tool_call_id else None,
            agent_id=approval.agent_id,
            tool_id=approval.tool_id,
            status=approval.status,
            kind=approval.kind,
            decided_by=approval.decided_by.get_username() if approval.decided_by else None,
            timeout_at=approval.timeout_at.isoformat(),
        )


@dataclass(frozen=True)
class ApprovalCreated(ApprovalEvent):
    NAME: ClassVar[str] = APPROVAL_CREATED


@dataclass(frozen=True)
class ApprovalDecided(ApprovalEvent):
    NAME: ClassVar[str] = APPROVAL_DECIDED


@dataclass(frozen=True)
class ApprovalEscalated(ApprovalEvent):
    NAME: ClassVar[str] = APPROVAL_ESCALATED


@dataclass(frozen=True)
class ApprovalExpired(ApprovalEvent):
    NAME: ClassVar[str] = APPROVAL_EXPIRED


@dataclass(frozen=True)
class TaskChanged(Event):
    """A task was created, moved or reassigned; ``agent_id`` is a Kanban that shows the change
    (the task's agent, or the one it was moved away from)."""

    NAME: ClassVar[str] = TASK_CHANGED
    agent_id: str
    task_id: str
    status: str


@dataclass(frozen=True)
class Heartbeat(Event):
    NAME: ClassVar[str] = HEARTBEAT
    LOGGED: ClassVar[bool] = False  # the agent's row keeps the last one
    agent_id: str
    status: str
    uptime_seconds: int
    at: str


@dataclass(frozen=True)
class LevelChanged(Event):
    """A monitoring level moved (or SAFETY_FIRST re-affirmed level 0). ``agent_id`` is set when
    the subject is an agent (its status card shows it); a tool's change shows in the log."""

    NAME: ClassVar[str] = LEVEL_CHANGED
    change_id: int | None
    subject: str
    agent_id: str | None
    from_level: int
    to_level: int
    rule: str

    @classmethod
    def of(cls, change: MonitoringLevelChange) -> LevelChanged:
        return cls(
            change_id=change.pk,
            subject=str(change.agent_id or change.tool_id),
            agent_id=change.agent_id,
            from_level=change.from_level,
            to_level=change.to_level,
            rule=change.rule,
        )


@dataclass(frozen=True)
class AgentChanged(Event):
    """Staff changed an agent (pause, resume, an edit in the admin)."""

    NAME: ClassVar[str] = AGENT_CHANGED
    agent_id: str


@dataclass(frozen=True)
class GuardianAssessmentComplete(Event):
    """Seed 001: every Guardian assessment, of a call's arguments (``call_id``) or of an
    inbound event's text (``o_tag``)."""

    NAME: ClassVar[str] = GUARDIAN_ASSESSMENT_COMPLETE
    risk: float
    action: str
    call_id: str | None = None
    o_tag: str | None = None
    agent_id: str | None = None
    patterns: tuple[str, ...] = ()
    trust: str | None = None


@dataclass(frozen=True)
class SecurityThreatDetected(Event):
    """Seed 001: an assessment that matched threat patterns (``blocked`` when it refused)."""

    NAME: ClassVar[str] = SECURITY_THREAT_DETECTED
    risk: float
    action: str
    patterns: tuple[str, ...]
    blocked: bool
    call_id: str | None = None
    o_tag: str | None = None
    agent_id: str | None = None
    trust: str | None = None


@dataclass(frozen=True)
class ModelToolCallFlagged(Event):
    """The Guardian flagged (or would block) the arguments of a tool call a model proposed to an
    agent through the model gateway (``request_id``: the gateway's record), before the agent
    acts on it."""

    NAME: ClassVar[str] = MODEL_TOOL_CALL_FLAGGED
    agent_id: str
    request_id: int
    tool: str
    risk: float
    action: str
    patterns: tuple[str, ...]
    at: str


@dataclass(frozen=True)
class CouncilChanged(Event):
    """A council proposal opened, got a vote or closed: its live tally."""

    NAME: ClassVar[str] = COUNCIL_CHANGED
    proposal_id: str
    status: str
    yes: int
    no: int
    abstain: int
    members: int
    yes_needed: int
    quorum: int

    @classmethod
    def of(cls, proposal: Any, tally: Any) -> CouncilChanged:
        return cls(
            proposal_id=str(proposal.pk),
            status=proposal.status,
            yes=tally.yes,
            no=tally.no,
            abstain=tally.abstain,
            members=tally.members,
            yes_needed=tally.yes_needed,
            quorum=tally.quorum,
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
    goal: str = ""
    step: int | None = None
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


#: Every event type by name: the one list of what the product emits.
EVENT_TYPES: dict[str, type[Event]] = {
    cls.NAME: cls
    for cls in (
        ToolCallChanged,
        ApprovalCreated,
        ApprovalDecided,
        ApprovalEscalated,
        ApprovalExpired,
        TaskChanged,
        Heartbeat,
        LevelChanged,
        AgentChanged,
        GuardianAssessmentComplete,
        SecurityThreatDetected,
        ModelToolCallFlagged,
        CouncilChanged,
        ToolExecuted,
        ToolFailed,
        CallBlocked,
        RuleViolated,
        Escalated,
        PolicyChanged,
        PlanSaved,
        StepStarted,
        StepFinished,
        PlanFailed,
        MemoryRecorded,
    )
}

#: The families, as the board's feed and the sinks offer them.
EVENT_FAMILIES: tuple[str, ...] = tuple(
    sorted({cls.family() for cls in EVENT_TYPES.values() if cls.LOGGED})
)


def event_from_wire(item: dict[str, Any]) -> Event | None:
    """The typed event of one item of a channel-layer message (None: a name nobody defines, or
    a payload that does not fit it; such an item is logged and skipped)."""
    cls = EVENT_TYPES.get(item.get("event", ""))
    if cls is None:
        log.warning("unknown event %r", item.get("event"))
        return None
    payload = dict(item.get("payload") or {})
    for name in ("patterns", "steps"):  # JSON has no tuples
        if isinstance(payload.get(name), list):
            payload[name] = tuple(payload[name])
    try:
        return cls(**payload)
    except TypeError as exc:
        log.warning("event %s with a payload that does not fit it: %s", cls.NAME, exc)
        return None


# --- The bus ---------------------------------------------------------------------------------
_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _publisher_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="board-events", daemon=True).start()
            _loop = loop
        return _loop


def _log_failure(future: Future[Any]) -> None:
    exc = future.exception()
    if exc is not None:
        log.warning("could not publish a board event: %s", exc)


def publish(*events: Event) -> Future[Any] | None:
    """Queue ``events``, in order, for every open board, as one message (a tool call's Guardian
    assessment with its row: each message costs the channel layer a few Redis commands,
    whatever it carries). Returns the pending send (tests may wait on it)."""
    events_observed(events)
    layer = get_channel_layer()
    if layer is None or not events:
        return None
    message = {"type": "board.events", "events": [event.wire() for event in events]}
    try:
        future = asyncio.run_coroutine_threadsafe(
            layer.group_send(BOARD_GROUP, message), _publisher_loop()
        )
    except RuntimeError:  # interpreter shutting down
        return None
    future.add_done_callback(_log_failure)
    return future


def publish_after_commit(*events: Event) -> None:
    """``publish`` once the current transaction commits (at once outside one): for events
    whose rows the board reads to show them."""
    transaction.on_commit(lambda: publish(*events))


def emit(*events: Event) -> None:
    """Keep ``events`` in the event log (those it keeps: ``LOGGED``) and publish them.

    The log rows are written by one statement in the caller's transaction (its own outside
    one): they exist if and only if what they describe was committed. They are published once
    it commits. A failure to write them is the caller's failure (the log is not best effort)."""
    append_events(events)
    publish_after_commit(*events)


def append_events(events: tuple[Event, ...] | list[Event], at: datetime | None = None) -> int:
    """Append the logged ones of ``events`` to the event log, in order; returns how many."""
    rows = event_log_rows(events, at)
    if not rows:
        return 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT brainframe_append_events(%s::jsonb)", [json.dumps(rows, default=str)])
    return len(rows)


def event_log_rows(
    events: tuple[Event, ...] | list[Event], at: datetime | None = None
) -> list[dict[str, Any]]:
    """The rows ``brainframe_append_events`` appends for ``events`` (the ones it keeps)."""
    at = at or timezone.now()
    return [event.log_row(at) for event in events if event.LOGGED]


def publish_tool_call(call: ToolCall, *, after: tuple[Event, ...] = ()) -> Future[Any] | None:
    """The call's row on the board, published with the events ``after`` in front of it."""
    return publish(*after, ToolCallChanged.of(call))
