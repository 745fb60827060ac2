"""Delivering what was sent (docs/channels.md): one attempt claims the message, hands it to its
channel's sender and records what happened; the sweep (``deliver_replies``, every 15 s) makes
the attempts that are due and seals claims that never reported back.

An attempt is made at once after the message is written (after its transaction commits), then
by the sweep with back-off. A message goes back to the queue only when the provider certainly
did not take it; otherwise it fails with the provider's reason (``brainframe.services.ledger.
deliveries``).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.db import transaction

from brainframe.models import Channel, MatrixRoom, OutboundMessage
from brainframe.services.ledger.deliveries import (
    outbound_claim,
    outbound_due,
    outbound_failed,
    outbound_interrupted_seal,
    outbound_retry,
    outbound_sent,
)

from ..queue import DELIVER_OUTBOUND, enqueue
from .base import SendFailure
from .mail import mail_send
from .matrix import (
    MatrixUnavailable,
    bot_user_id,
    ensure_user,
    room_invite,
    room_join,
    room_post,
)
from .sms import sms_send

log = logging.getLogger(__name__)


def _send(outbound: OutboundMessage) -> tuple[str, bool]:
    """(provider id, whether it is already where it was going)."""
    if outbound.channel == Channel.SMS:
        return sms_send(outbound), False
    if outbound.channel == Channel.EMAIL:
        return mail_send(outbound), False
    if outbound.channel == Channel.CHAT:
        _bring_in(outbound)
        event_id = room_post(
            user_id=bot_user_id(outbound.agent_id),
            room_id=outbound.address,
            body=outbound.body,
            html=outbound.html,
            txn_id=outbound.message_id or str(outbound.pk),
        )
        return event_id, True  # the homeserver keeps it in the room: delivered
    raise SendFailure(f"no sender for the {outbound.channel} channel", False)


def _bring_in(outbound: OutboundMessage) -> None:
    """An answer from an agent other than the room's (the ACL routed the message to it): the
    room's bot invites it, and it joins, before it posts (once; joining again changes nothing)."""
    room = MatrixRoom.objects.filter(room_id=outbound.address).first()
    if room is None or room.agent_id == outbound.agent_id:
        return
    me = bot_user_id(outbound.agent_id)
    try:
        ensure_user(me, outbound.agent.name)  # the invitation must find the account
        room_invite(inviter=bot_user_id(room.agent_id), room_id=room.room_id, invitee=me)
        room_join(me, room.room_id, displayname=outbound.agent.name)
    except MatrixUnavailable as exc:
        raise SendFailure(str(exc), True) from exc
    except Exception as exc:  # refused: the post itself will say why
        log.warning("could not bring %s into %s: %s", me, room.room_id, exc)


def outbound_attempt(pk: uuid.UUID | str) -> str:
    """One attempt at a message, if it is due and nobody else has it. Returns its state after
    the attempt (or ``not_due``)."""
    outbound = outbound_claim(uuid.UUID(str(pk)))
    if outbound is None:
        return "not_due"
    try:
        provider_id, delivered = _send(outbound)
    except SendFailure as failure:
        moved = (outbound_retry if failure.retry else outbound_failed)(
            outbound, reason=failure.reason
        )
        return moved.state if moved is not None else "moved"
    except Exception as exc:  # a bug in a sender is a failure to record, not a lost claim
        log.exception("sending %s failed", outbound.pk)
        moved = outbound_failed(outbound, reason=f"{type(exc).__name__}: {exc}")
        return moved.state if moved is not None else "moved"
    moved = outbound_sent(outbound, provider_id=provider_id, delivered=delivered)
    return moved.state if moved is not None else "moved"


def outbound_enqueue(pk: uuid.UUID) -> None:
    """Attempt the message once the current transaction commits (on a worker; the sweep makes
    the attempt if the queue cannot take it)."""

    def go() -> None:
        try:
            enqueue(DELIVER_OUTBOUND, str(pk))
        except Exception:
            log.warning("could not enqueue delivery of %s; the sweep sends it", pk, exc_info=True)

    transaction.on_commit(go)


def deliveries_run() -> dict[str, Any]:
    """The sweep: due attempts, and claims that never reported back."""
    sealed = outbound_interrupted_seal()
    states: dict[str, int] = {}
    for pk in outbound_due():
        state = outbound_attempt(pk)
        states[state] = states.get(state, 0) + 1
    return {"attempted": states, "sealed": len(sealed)}
