"""Event names (the only place they are spelled), the base of every payload, and how a kept
event is hashed."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from django.utils import timezone

from brainframe.canonical import canonical_json
from brainframe.models import SYSTEM_STREAM

#: The Channels group every open board joins.
BOARD_GROUP = "board"


def agent_group(agent_id: str) -> str:
    """The Channels group that hears the events about one agent's calls (its approvals): its
    open MCP sessions join it. Group names allow ASCII letters, digits, ``-_.`` only."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in agent_id)
    return f"agent.{safe}"[:99]


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
AGENT_STATUS_CHANGED = "agent:status_changed"
GUARDIAN_ASSESSMENT_COMPLETE = "guardian:assessment_complete"
SECURITY_THREAT_DETECTED = "security:threat_detected"
CHAIN_REFUSED = "security:chain_refused"
MODEL_TOOL_CALL_FLAGGED = "guardian:model_tool_call_flagged"
COUNCIL_CHANGED = "governance:council_changed"
TOOL_EXECUTED = "executor:tool_executed"
TOOL_FAILED = "executor:tool_failed"
CALL_BLOCKED = "governance:call_blocked"
RULE_VIOLATED = "governance:rule_violated"
ESCALATED = "governance:escalated"
POLICY_CHANGED = "governance:policy_changed"
SHADOW_DECISION = "governance:shadow_decision"
SHARE_DECIDED = "governance:share_decided"
PLAN_SAVED = "planner:plan_saved"
STEP_STARTED = "planner:step_started"
STEP_FINISHED = "planner:step_finished"
PLAN_FAILED = "planner:plan_failed"
CORE_ROUTE = "core:route"
CORE_RESPONSE = "core:response"
MEMORY_RECORDED = "memory:recorded"
ALIGNMENT_SNAPSHOTTED = "governance:alignment_snapshotted"
INBOUND_RECEIVED = "inbound:received"
HOOK_PROPOSED = "hook:proposed"
HOOK_REVIEWED = "hook:reviewed"
HOOK_ENABLED = "hook:enabled"
HOOK_DISABLED = "hook:disabled"
HOOK_EVALUATED = "hook:evaluated"
HOOK_FIRED = "hook:fired"
HOOK_FAILED = "hook:failed"
MESSAGE_RECEIVED = "conversation:message_received"
TURN_STARTED = "conversation:turn_started"
TURN_ENDED = "conversation:turn_ended"
COMPACTED = "conversation:compacted"
DELEGATED = "conversation:delegated"
DELIVERY_CHANGED = "conversation:delivery_changed"
CHAT_POSTED = "conversation:chat_posted"
TURN_YIELDED = "loop:turn_yielded"
LOOP_LATCHED = "loop:latched"

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
    "hook_id",
    "turn_id",
    "delegation_id",
    "outbound_id",
    "event_id",
    "o_tag",
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


#: What an event's content hash covers (its chain position enters in the database).
CONTENT_FIELDS = ("stream", "name", "agent_id", "subject", "payload", "at")


def event_content_hash(row: dict[str, Any]) -> str:
    """sha256 of an event row's canonical content (``at`` as UTC ISO 8601 text)."""
    content = {k: row[k] for k in CONTENT_FIELDS}
    if isinstance(content["at"], datetime):
        content["at"] = _utc_iso(content["at"])
    return hashlib.sha256(canonical_json(content)).hexdigest()


def event_row_hash(prev_hash: str, seq: int, content_hash: str) -> str:
    return hashlib.sha256(f"{prev_hash}:{seq}:{content_hash}".encode()).hexdigest()
