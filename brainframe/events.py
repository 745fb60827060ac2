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
import logging
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, ClassVar

from channels.layers import get_channel_layer
from django.db import transaction

from brainframe.models import ApprovalRequest, MonitoringLevelChange, ToolCall

log = logging.getLogger(__name__)

#: The Channels group every open board joins.
BOARD_GROUP = "board"

# --- Event names (the only place they are spelled) ---------------------------------------------
TOOL_CALL = "tool_call"
APPROVAL_CREATED = "approval_created"
APPROVAL_DECIDED = "approval_decided"
APPROVAL_ESCALATED = "approval_escalated"
APPROVAL_EXPIRED = "approval_expired"
TASK_CHANGED = "task_changed"
HEARTBEAT = "heartbeat"
LEVEL_CHANGED = "level_changed"
AGENT_CHANGED = "agent_changed"
GUARDIAN_ASSESSMENT_COMPLETE = "guardian:assessment_complete"
SECURITY_THREAT_DETECTED = "security:threat_detected"
MODEL_TOOL_CALL_FLAGGED = "guardian:model_tool_call_flagged"
COUNCIL_CHANGED = "governance:council_changed"


@dataclass(frozen=True)
class Event:
    """An event's payload. Subclasses name the event in ``NAME``."""

    NAME: ClassVar[str]

    def wire(self) -> dict[str, Any]:
        """The event as it travels on the channel layer (plain JSON; payload fields are plain
        values, so a shallow copy is the payload — ``dataclasses.asdict`` would copy deeply, and
        cost more than the rest of publishing)."""
        return {"event": self.NAME, "payload": dict(self.__dict__)}


@dataclass(frozen=True)
class ToolCallChanged(Event):
    """A tool call was decided or its outcome written: the board's log row, carrying all the
    row shows so the board renders it without a database read."""

    NAME: ClassVar[str] = TOOL_CALL
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
    )
}


def event_from_wire(item: dict[str, Any]) -> Event | None:
    """The typed event of one item of a channel-layer message (None: a name nobody defines, or
    a payload that does not fit it; such an item is logged and skipped)."""
    cls = EVENT_TYPES.get(item.get("event", ""))
    if cls is None:
        log.warning("unknown event %r", item.get("event"))
        return None
    payload = dict(item.get("payload") or {})
    for name in ("patterns",):  # JSON has no tuples
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


def publish_tool_call(call: ToolCall, *, after: tuple[Event, ...] = ()) -> Future[Any] | None:
    """The call's row on the board, published with the events ``after`` in front of it."""
    return publish(*after, ToolCallChanged.of(call))
