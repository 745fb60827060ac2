"""Conversation events: a message arrived, a turn started or ended, a thread was compacted, an
agent delegated work, a reply's delivery moved, someone posted in a chat from the board; and the
agent's loop: it yielded its turn, or the latch stopped it. The text itself stays in the ledgers,
not in the event log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import (
    CHAT_POSTED,
    COMPACTED,
    DELEGATED,
    DELIVERY_CHANGED,
    LOOP_LATCHED,
    MESSAGE_RECEIVED,
    TURN_ENDED,
    TURN_STARTED,
    TURN_YIELDED,
    Event,
)


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


@dataclass(frozen=True)
class DeliveryChanged(Event):
    """A message the control plane sends on a channel (``ledger_outbound``) moved: ``queued``,
    ``sent`` (the provider took it: ``provider_id``), ``delivered``, or ``failed`` (``detail``
    says why); ``attempts`` so far."""

    NAME: ClassVar[str] = DELIVERY_CHANGED
    outbound_id: str
    agent_id: str
    channel: str
    state: str
    attempts: int = 0
    thread_id: str | None = None
    turn_id: str | None = None
    call_id: str | None = None
    provider_id: str = ""
    detail: str = ""


@dataclass(frozen=True)
class ChatPosted(Event):
    """A staff member posted in a conversation's chat room from the board (``chat.human.post``);
    the message itself comes back from the homeserver like anyone's."""

    NAME: ClassVar[str] = CHAT_POSTED
    room_id: str
    by: str
    agent_id: str
    matrix_event_id: str
    thread_id: str | None = None


@dataclass(frozen=True)
class TurnYielded(Event):
    """An agent yielded its turn (``loop.yield_turn``) and slept until new traffic (``woke``) or
    until its time ran out; ``traffic`` says what woke it."""

    NAME: ClassVar[str] = TURN_YIELDED
    agent_id: str
    woke: bool
    waited_ms: int
    traffic: str = ""


@dataclass(frozen=True)
class LoopLatched(Event):
    """The loop latch stopped an agent that kept calling tools with no new input: ``calls``
    since its last input, the limit; the turn it was in ended there (a turn boundary)."""

    NAME: ClassVar[str] = LOOP_LATCHED
    agent_id: str
    calls: int
    limit: int
    call_id: str | None = None
    turn_id: str | None = None
    thread_id: str | None = None
