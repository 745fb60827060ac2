"""Answers going back (docs/channels.md): who may be answered and where, and the message as it
was sent.

Who may be answered is derived, never taken from the agent: a reply answers one turn of the
calling agent that a person's message opened (its session came by a channel adapter that has a
sender), in the chain that message started, on the channel and to the address it came from (a
phone number, an e-mail address, the Matrix room). An e-mail reply carries the original's subject
and threads under it (``In-Reply-To``, ``References``). A person whose ACL policy has
``personal_info: see`` may read personal information in their answers (the outbound PII filter
is not applied to them); anyone else's answers are filtered.

The message as sent (``OutboundMessage``) is written once per governed call; its delivery moves
in ``deliveries``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from email.utils import parseaddr

from django.conf import settings
from django.db import IntegrityError, transaction

from brainframe.events import DeliveryChanged, emit
from brainframe.models import (
    Agent,
    Channel,
    ChannelAdapter,
    LedgerEvent,
    MatrixRoom,
    Message,
    OutboundMessage,
    Session,
    Turn,
)
from brainframe.services.access.acl import acl_for

from .formatting import Composed

SendVia = ChannelAdapter.SendVia


class ReplyRefused(Exception):
    """A reply (or post) that may not be sent: ``code`` and the argument at fault."""

    def __init__(self, code: str, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.code, self.detail, self.field = code, detail, field


@dataclass(frozen=True)
class ReplyTarget:
    """Where a message goes, as the control plane worked it out."""

    adapter: ChannelAdapter
    channel: str
    address: str
    session: Session | None = None
    turn: Turn | None = None
    subject: str = ""
    in_reply_to: str = ""
    references: str = ""

    @property
    def thread_id(self) -> uuid.UUID | None:
        return self.session.thread_id if self.session is not None else None


def adapter_sends(adapter: ChannelAdapter | None) -> bool:
    """Whether answers can go back by ``adapter`` (active, with a sender for its channel)."""
    if adapter is None or not adapter.active:
        return False
    wanted: dict[str, str] = {
        Channel.SMS: SendVia.TWILIO,
        Channel.EMAIL: SendVia.SMTP,
        Channel.CHAT: SendVia.MATRIX,
    }
    return adapter.send_via == wanted.get(adapter.channel)


def _answered_event(turn: Turn) -> LedgerEvent | None:
    """The message the turn answers: the first one of the turn that came from outside."""
    first = (
        Message.objects.filter(turn=turn, event__isnull=False)
        .select_related("event")
        .order_by("seq")
        .first()
    )
    return first.event if first is not None else None


def _message_id(value: str) -> str:
    value = value.strip()
    return value if value.startswith("<") else f"<{value}>"


def _email_threading(turn: Turn) -> tuple[str, str, str]:
    """(subject, In-Reply-To, References) of an answer to the turn's e-mail."""
    event = _answered_event(turn)
    payload = event.payload if event is not None and isinstance(event.payload, dict) else {}
    subject = str(payload.get("subject") or "").strip()
    if not subject:
        subject = "Your message"
    if not subject.lower().startswith("re:"):
        subject = f"Re: {subject}"
    original = str(payload.get("message_id") or "")
    in_reply_to = _message_id(original) if original else ""
    earlier = str(payload.get("references") or payload.get("in_reply_to") or "").split()
    references = " ".join(dict.fromkeys([*earlier, in_reply_to] if in_reply_to else earlier))
    return subject[:300], in_reply_to, references


def _address(session: Session) -> str:
    """Where the session's messages came from, exactly (a room id keeps its case)."""
    if session.adapter is not None and session.adapter.send_via == SendVia.MATRIX:
        room = MatrixRoom.objects.filter(session=session).values_list("room_id", flat=True).first()
        return room or ""
    if session.channel == Channel.EMAIL:
        return parseaddr(session.address)[1] or session.address
    return session.address


def reply_target(turn: Turn) -> ReplyTarget | None:
    """Where an answer to ``turn`` goes, or None when it goes nowhere: the turn came from no
    person's message, its adapter sends nothing, or the person is no longer active."""
    session = turn.session
    if session is None or not adapter_sends(session.adapter):
        return None
    if session.person is not None and not session.person.active:
        return None
    address = _address(session)
    if not address:
        return None
    assert session.adapter is not None
    subject = in_reply_to = references = ""
    if session.channel == Channel.EMAIL:
        subject, in_reply_to, references = _email_threading(turn)
    return ReplyTarget(
        adapter=session.adapter,
        channel=session.channel,
        address=address,
        session=session,
        turn=turn,
        subject=subject,
        in_reply_to=in_reply_to,
        references=references,
    )


def _turn_of(agent: Agent, turn_id: str | uuid.UUID) -> Turn:
    try:
        pk = uuid.UUID(str(turn_id))
    except ValueError:
        raise ReplyRefused("unknown_turn", "turn_id is not a turn id", "turn_id") from None
    turn = (
        Turn.objects.select_related("session__adapter", "session__person")
        .filter(pk=pk, agent=agent)
        .first()
    )
    if turn is None:
        raise ReplyRefused("unknown_turn", "no such turn of yours", "turn_id")
    return turn


def reply_target_checked(
    *,
    agent: Agent,
    turn_id: str | uuid.UUID | None,
    o_tag_id: uuid.UUID | None,
    task_id: uuid.UUID | None,
) -> ReplyTarget:
    """Where a ``channel.reply`` call's answer goes: the turn it names (else its task's), which
    must be the agent's, opened by a person's message, in the call's own chain."""
    if turn_id is None:
        if task_id is None:
            raise ReplyRefused(
                "no_turn", "name the turn you answer (turn_id) or call in its task", "turn_id"
            )
        turn_id = (
            Turn.objects.filter(task_id=task_id, agent=agent).values_list("pk", flat=True).first()
        )
        if turn_id is None:
            raise ReplyRefused("no_turn", "the call's task has no turn to answer", "turn_id")
    turn = _turn_of(agent, turn_id)
    if turn.session is None:
        raise ReplyRefused(
            "not_from_a_person", "the turn was not opened by a person's message", "turn_id"
        )
    if turn.origin_id is None or turn.origin_id != o_tag_id:
        raise ReplyRefused(
            "chain_conflict",
            "a reply goes out in the chain of the message it answers: call it in that turn's "
            "task (or with its O-Tag)",
            "turn_id",
        )
    target = reply_target(turn)
    if target is None:
        raise ReplyRefused(
            "channel_cannot_send",
            f"nothing can be sent on the {turn.session.channel} channel this turn came by "
            "(its adapter has no sender, or the person is no longer active)",
            "turn_id",
        )
    return target


def post_target(*, agent: Agent, room_id: str | None, o_tag_id: uuid.UUID | None) -> ReplyTarget:
    """Where a ``chat.assistant.post`` goes: the room it names, which must be one of the agent's
    own rooms, else the room of the chain's session."""
    room: MatrixRoom | None = None
    if room_id:
        room = (
            MatrixRoom.objects.select_related("adapter", "session")
            .filter(room_id=room_id, agent=agent)
            .first()
        )
        if room is None:
            raise ReplyRefused("unknown_room", "not a room your bot account is in", "room_id")
    elif o_tag_id is not None:
        room = (
            MatrixRoom.objects.select_related("adapter", "session")
            .filter(agent=agent, session__turns__origin_id=o_tag_id)
            .first()
        )
    if room is None:
        raise ReplyRefused(
            "unknown_room", "name a room (room_id): this chain did not start in one", "room_id"
        )
    if not adapter_sends(room.adapter):
        raise ReplyRefused("channel_cannot_send", "the room's adapter sends nothing", "room_id")
    return ReplyTarget(
        adapter=room.adapter, channel=Channel.CHAT, address=room.room_id, session=room.session
    )


def personal_info_visible(principal: dict[str, object] | None) -> str:
    """Why the person a chain acts for may read personal information in their answers (their
    ACL policy in force says ``personal_info: see``), or "" when the PII filter applies."""
    if not principal or not principal.get("known"):
        return ""
    decision = acl_for(dict(principal))
    if decision.allows and decision.scopes.get("personal_info") == "see":
        return f"{principal.get('name') or 'the recipient'} may see it ({decision.label()})"
    return ""


def _email_domain(adapter: ChannelAdapter) -> str:
    sender = parseaddr(adapter.send_from or settings.RABS_NOTIFY_FROM_EMAIL)[1]
    return sender.rpartition("@")[2] or "rabs.local"


def outbound_record(
    *,
    call_id: uuid.UUID,
    kind: str,
    agent: Agent,
    target: ReplyTarget,
    composed: Composed,
    pii: str,
) -> tuple[OutboundMessage, bool]:
    """The message as it will be sent, written once per call (a second run of the same call
    finds the first): (the row, whether it was written now)."""
    found = OutboundMessage.objects.filter(call_id=call_id).first()
    if found is not None:
        return found, False
    outbound = OutboundMessage(
        call_id=call_id,
        kind=kind,
        agent=agent,
        adapter=target.adapter,
        session=target.session,
        turn=target.turn,
        channel=target.channel,
        address=target.address,
        subject=target.subject,
        in_reply_to=target.in_reply_to,
        references=target.references,
        body=composed.body,
        html=composed.html,
        segments=composed.segments,
        truncated=composed.truncated,
        pii=pii[:300],
        history=[],
    )
    if target.channel == Channel.EMAIL:
        outbound.message_id = f"<{outbound.id}@{_email_domain(target.adapter)}>"
    elif target.channel == Channel.CHAT:
        outbound.message_id = f"rabs-{outbound.id}"  # the homeserver's transaction id
    try:
        with transaction.atomic():
            outbound.save(force_insert=True)
            emit(delivery_event(outbound))
    except IntegrityError:  # the same call, run twice at once: the first write stands
        return OutboundMessage.objects.get(call_id=call_id), False
    return outbound, True


def delivery_event(outbound: OutboundMessage, detail: str = "") -> DeliveryChanged:
    thread = outbound.session.thread_id if outbound.session_id and outbound.session else None
    return DeliveryChanged(
        outbound_id=str(outbound.pk),
        agent_id=outbound.agent_id,
        channel=outbound.channel,
        state=outbound.state,
        attempts=outbound.attempts,
        thread_id=str(thread) if thread else None,
        turn_id=str(outbound.turn_id) if outbound.turn_id else None,
        call_id=str(outbound.call_id),
        provider_id=outbound.provider_id,
        detail=detail[:500],
    )
