"""Conversation events: a message arrived, a turn started or ended, a thread was compacted, an
agent delegated work. The text itself stays in the ledgers, not in the event log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import COMPACTED, DELEGATED, MESSAGE_RECEIVED, TURN_ENDED, TURN_STARTED, Event


@dataclass(frozen=True)
class MessageReceived(Event):
    """A message from a person reached the events ledger (``event_id``) and was handed to its
    agent's session: ``handled`` says how (``turn``, ``steer``, ``followup``, ``collect``,
    ``interrupt``, ``blocked`` by the Guardian, ``acl_denied``: kept, no agent told);
    ``acl_policy`` is the ACL policy that decided (None: none matched)."""

    NAME: ClassVar[str] = MESSAGE_RECEIVED
    event_id: str
    channel: str
    agent_id: str
    session_id: str
    handled: str
    known_sender: bool = False
    person_id: str | None = None
    turn_id: str | None = None
    thread_id: str | None = None
    o_tag: str | None = None
    acl_policy: str | None = None


@dataclass(frozen=True)
class TurnEvent(Event):
    turn_id: str
    thread_id: str
    agent_id: str
    seq: int
    turn_type: str = "normal"
    status: str = "open"
    session_id: str | None = None
    o_tag: str | None = None
    tool_calls: int = 0


@dataclass(frozen=True)
class TurnStarted(TurnEvent):
    NAME: ClassVar[str] = TURN_STARTED


@dataclass(frozen=True)
class TurnEnded(TurnEvent):
    """Completed or interrupted (``status``)."""

    NAME: ClassVar[str] = TURN_ENDED


@dataclass(frozen=True)
class Compacted(TurnEvent):
    NAME: ClassVar[str] = COMPACTED


@dataclass(frozen=True)
class Delegated(Event):
    """A manager handed work to a worker (``agents.delegate``)."""

    NAME: ClassVar[str] = DELEGATED
    delegation_id: str
    agent_id: str  # the manager
    worker_id: str
    depth: int
    task_id: str
    thread_id: str
    call_id: str
