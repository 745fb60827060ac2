"""Where a sent message's delivery stands (docs/channels.md): ``queued`` → ``sending`` (claimed
by one process) → ``sent`` (the provider took it) → ``delivered`` (the provider says it
arrived), or back to ``queued`` for a retry with back-off, or ``failed`` with the reason.

Exactly once: a message is sent only by the process that claimed it (a conditional ``UPDATE``
from ``queued``, checked by its row count); it goes back to ``queued`` only when the provider
certainly did not take it (refused the connection, answered "try again"); a claim that never
reported back (its process died mid-send) is sealed ``failed`` rather than sent again, because
it may have left. Each move is appended to the row's ``history`` and announced to the board.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.db.models.expressions import RawSQL
from django.utils import timezone

from brainframe.events import emit
from brainframe.models import OutboundMessage

from .replies import delivery_event

State = OutboundMessage.State
#: A claim older than this never reported back: its process is gone.
CLAIM_LEASE = timedelta(minutes=5)
#: Provider statuses (Twilio's ``MessageStatus``) and what they make of a message.
PROVIDER_STATES = {
    "accepted": State.SENT,
    "queued": State.SENT,
    "sending": State.SENT,
    "sent": State.SENT,
    "delivered": State.DELIVERED,
    "read": State.DELIVERED,
    "undelivered": State.FAILED,
    "failed": State.FAILED,
}
_RANK = {State.QUEUED: 0, State.SENDING: 1, State.SENT: 2, State.DELIVERED: 3, State.FAILED: 4}


def _noted(state: str, detail: str, at: datetime) -> RawSQL:
    entry = [{"at": at.isoformat(), "state": state, "detail": detail[:500]}]
    return RawSQL("history || %s::jsonb", [json.dumps(entry)])


def _move(
    pk: uuid.UUID, *, states: tuple[str, ...], to: str, detail: str = "", **fields: Any
) -> OutboundMessage | None:
    """Move the message from one of ``states`` to ``to`` (with ``fields``), noting it; None
    when it was not in one of them (another process moved it first)."""
    now = timezone.now()
    with transaction.atomic():
        moved = OutboundMessage.objects.filter(pk=pk, state__in=states).update(
            state=to, history=_noted(to, detail, now), **fields
        )
        if not moved:
            return None
        outbound = OutboundMessage.objects.select_related("session").get(pk=pk)
        emit(delivery_event(outbound, detail))
    return outbound


def outbound_claim(pk: uuid.UUID, *, now: datetime | None = None) -> OutboundMessage | None:
    """Take a queued message that is due, for one attempt (None: not queued, not due, or
    another process has it)."""
    now = now or timezone.now()
    claimed = (
        OutboundMessage.objects.filter(pk=pk, state=State.QUEUED)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .update(
            state=State.SENDING,
            claimed_at=now,
            attempts=RawSQL("attempts + 1", []),
            history=_noted(State.SENDING, "", now),
        )
    )
    if not claimed:
        return None
    return OutboundMessage.objects.select_related("adapter", "session", "agent").get(pk=pk)


def outbound_sent(
    outbound: OutboundMessage, *, provider_id: str, delivered: bool = False
) -> OutboundMessage | None:
    """The provider took it (``delivered``: and it is where it was going, e.g. in the room)."""
    now = timezone.now()
    fields: dict[str, Any] = {"provider_id": provider_id[:300], "sent_at": now, "last_error": ""}
    if delivered:
        fields["delivered_at"] = now
    moved = _move(
        outbound.pk,
        states=(State.SENDING,),
        to=State.DELIVERED if delivered else State.SENT,
        detail=provider_id,
        **fields,
    )
    if moved is None:  # the provider's callback was first: keep what it said, add the id
        OutboundMessage.objects.filter(pk=outbound.pk, provider_id="").update(
            provider_id=provider_id[:300], sent_at=now
        )
    return moved


def retry_delay(attempts: int) -> timedelta:
    """After the ``attempts``-th failure: ``RABS_REPLY_RETRY_SECONDS``, doubling, at most 1 h."""
    first = float(settings.RABS_REPLY_RETRY_SECONDS)
    return timedelta(seconds=min(3600.0, first * 2 ** max(0, attempts - 1)))


def outbound_retry(outbound: OutboundMessage, *, reason: str) -> OutboundMessage | None:
    """The provider certainly did not take it: try again later, or give up after
    ``RABS_REPLY_MAX_ATTEMPTS`` with the reason."""
    attempts = OutboundMessage.objects.filter(pk=outbound.pk).values_list("attempts", flat=True)
    done = attempts.first() or outbound.attempts
    if done >= int(settings.RABS_REPLY_MAX_ATTEMPTS):
        return outbound_failed(outbound, reason=f"gave up after {done} attempts: {reason}")
    return _move(
        outbound.pk,
        states=(State.SENDING,),
        to=State.QUEUED,
        detail=reason,
        next_attempt_at=timezone.now() + retry_delay(done),
        last_error=reason[:2000],
    )


def outbound_failed(outbound: OutboundMessage, *, reason: str) -> OutboundMessage | None:
    return _move(
        outbound.pk,
        states=(State.QUEUED, State.SENDING),
        to=State.FAILED,
        detail=reason,
        failed_at=timezone.now(),
        last_error=reason[:2000],
    )


def outbound_provider_status(
    pk: uuid.UUID, *, provider_id: str, status: str, error: str = ""
) -> OutboundMessage | None:
    """What the provider's status callback says of a message (forward moves only: a late
    ``sent`` never undoes ``delivered``). None: nothing to change."""
    to = PROVIDER_STATES.get(status)
    outbound = OutboundMessage.objects.filter(pk=pk).first()
    if to is None or outbound is None:
        return None
    if outbound.provider_id and provider_id and outbound.provider_id != provider_id:
        return None
    if _RANK[State(outbound.state)] >= _RANK[to] or outbound.state == State.FAILED:
        return None
    now = timezone.now()
    fields: dict[str, Any] = {"provider_id": provider_id[:300] or outbound.provider_id}
    if to == State.DELIVERED:
        fields["delivered_at"] = now
    elif to == State.FAILED:
        fields.update(failed_at=now, last_error=(error or f"the provider said {status}")[:2000])
    elif outbound.sent_at is None:
        fields["sent_at"] = now
    earlier = tuple(s for s, rank in _RANK.items() if rank < _RANK[to] and s != State.FAILED)
    detail = f"provider: {status}" + (f" ({error})" if error else "")
    return _move(pk, states=earlier, to=to, detail=detail, **fields)


def outbound_due(*, now: datetime | None = None, limit: int = 100) -> list[uuid.UUID]:
    """Queued messages whose next attempt is due (oldest first)."""
    now = now or timezone.now()
    return list(
        OutboundMessage.objects.filter(state=State.QUEUED)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .order_by("created_at")
        .values_list("pk", flat=True)[:limit]
    )


INTERRUPTED = (
    "interrupted: the process sending it was lost before it reported back; it may or may not "
    "have left, so it is not sent again (at most once)"
)


def outbound_interrupted_seal(*, now: datetime | None = None) -> list[str]:
    """Seal messages claimed longer than ``CLAIM_LEASE`` ago that never reported back."""
    now = now or timezone.now()
    stale = OutboundMessage.objects.filter(
        state=State.SENDING, claimed_at__lte=now - CLAIM_LEASE
    ).values_list("pk", flat=True)
    sealed = []
    for pk in list(stale[:100]):
        if _move(pk, states=(State.SENDING,), to=State.FAILED, detail=INTERRUPTED,
                 failed_at=now, last_error=INTERRUPTED):  # fmt: skip
            sealed.append(str(pk))
    return sealed
