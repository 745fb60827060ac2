"""The events the board shows (its own refresh events among them), and seed 001's Guardian
events."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from brainframe.models import ApprovalRequest, MonitoringLevelChange, ToolCall

from .base import (
    AGENT_CHANGED,
    AGENT_STATUS_CHANGED,
    APPROVAL_CREATED,
    APPROVAL_DECIDED,
    APPROVAL_ESCALATED,
    APPROVAL_EXPIRED,
    COUNCIL_CHANGED,
    GUARDIAN_ASSESSMENT_COMPLETE,
    HEARTBEAT,
    LEVEL_CHANGED,
    MODEL_TOOL_CALL_FLAGGED,
    SECURITY_THREAT_DETECTED,
    TASK_CHANGED,
    TOOL_CALL,
    Event,
)


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
    owner: str = ""  # the task's agent now ("": agent_id)
    title: str = ""
    priority: int = 50
    progress: int = 0
    created_at: str = ""


@dataclass(frozen=True)
class Heartbeat(Event):
    """An agent reported in (its status and uptime), for its status card; not kept (the agent's
    row holds the last one)."""

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
class AgentStatusChanged(Event):
    """An agent's status moved: reported by its heartbeat (idle, active, error) or set by staff
    (paused, and back to idle)."""

    NAME: ClassVar[str] = AGENT_STATUS_CHANGED
    agent_id: str
    status: str
    previous: str
    by: str = "heartbeat"


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
