"""Answers and chat as governed calls (docs/channels.md).

When a turn a person's message opened ends with an answer, ``reply_submit`` submits it as the
agent's call of ``channel.reply`` in the turn's chain, through the one pipeline every call takes
(schema, Guardian, directives, V-Pol, gate, audit): it may run at once, wait for a reviewer, or
be denied, like any outbound message. Its idempotency key is the turn's, so the answer is
submitted once however often completion is retried; the sweep (``replies_sweep``) submits any
answer whose submission was lost.

The handlers (``CALLABLES``) run when such a call executes: they work out where it goes from
the broker's own records (never from the agent), apply the channel's rules, write the message as
sent and queue its delivery. The outbound PII filter runs before them, except for a recipient
whose ACL policy lets them see personal information (``reply_consent``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from datetime import timedelta
from typing import Any

from django.db.models import Exists, OuterRef, TextField, Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from brainframe.models import OriginRegistry, OutboundMessage, ToolCall, Turn
from brainframe.services.ledger.formatting import compose
from brainframe.services.ledger.replies import (
    ReplyRefused,
    ReplyTarget,
    adapter_sends,
    outbound_record,
    personal_info_visible,
    post_target,
    reply_target,
    reply_target_checked,
)

from ..errors import BrokerRefusal
from ..handlers.base import HandlerFailure
from ..handlers.function import ToolFunction
from ..pipeline.context import CallRequest
from ..services.calls import CallAnswer, tool_call_submit
from .delivery import outbound_enqueue
from .matrix import MatrixUnavailable, bot_user_id, room_messages

log = logging.getLogger(__name__)

REPLY_TOOL = "channel.reply"
POST_TOOL = "chat.assistant.post"
READ_TOOL = "chat.room.read"


def reply_key(turn_id: uuid.UUID | str) -> str:
    return f"{REPLY_TOOL}:{turn_id}"


def reply_submit(turn_id: uuid.UUID) -> CallAnswer | None:
    """The turn's answer, sent back to the person as a governed ``channel.reply`` of the turn's
    agent in the turn's chain; None when there is nothing to send (no answer, no person's
    channel to send it on). Never raises: a submission that fails is logged and the sweep
    makes it later."""
    turn = (
        Turn.objects.select_related("agent", "session__adapter", "session__person")
        .filter(pk=turn_id, status=Turn.Status.COMPLETED)
        .first()
    )
    if turn is None or not turn.answer.strip() or reply_target(turn) is None:
        return None
    assert turn.session is not None
    who = turn.session.person.name if turn.session.person else turn.session.address
    arguments = {"turn_id": str(turn.pk), "text": turn.answer}
    request = CallRequest(
        tool_id=REPLY_TOOL,
        arguments=arguments,
        reason=f"answer {who} on {turn.session.channel}: the answer of turn {turn.seq}",
        task_id=turn.task_id,
        o_tag=None if turn.task_id else turn.origin_id,
        idempotency_key=reply_key(turn.pk),
        request_hash=hashlib.sha256(
            json.dumps([REPLY_TOOL, arguments], sort_keys=True).encode()
        ).hexdigest(),
        face=ToolCall.Face.SYSTEM,
    )
    try:
        return tool_call_submit(agent=turn.agent, request=request)
    except BrokerRefusal as refusal:
        log.warning("the answer of turn %s was not submitted: %s", turn.pk, refusal.detail)
    except Exception:
        log.exception("the answer of turn %s was not submitted", turn.pk)
    return None


def replies_sweep(*, within: timedelta = timedelta(days=1)) -> int:
    """Submit the answers of recent turns whose ``channel.reply`` was never recorded (the
    process that completed the turn died first). Returns how many were submitted."""
    submitted = Exists(
        ToolCall.objects.filter(
            agent_id=OuterRef("agent_id"),
            idempotency_key=Concat(
                Value(f"{REPLY_TOOL}:"), Cast(OuterRef("pk"), TextField()), output_field=TextField()
            ),
        )
    )
    due = (
        Turn.objects.filter(
            status=Turn.Status.COMPLETED,
            completed_at__gte=timezone.now() - within,
            completed_at__lte=timezone.now() - timedelta(seconds=30),
            session__adapter__active=True,
        )
        .exclude(session__adapter__send_via="none")
        .exclude(answer="")
        .exclude(submitted)
        .values_list("pk", flat=True)[:100]
    )
    return sum(1 for pk in list(due) if reply_submit(pk) is not None)


# --- the handlers ---------------------------------------------------------------------------


def _call(call_id: uuid.UUID) -> ToolCall:
    return ToolCall.objects.select_related("agent").get(pk=call_id)


def _principal(call: ToolCall) -> dict[str, Any] | None:
    if call.o_tag_id is None:
        return None
    principal = (
        OriginRegistry.objects.filter(pk=call.o_tag_id).values_list("principal", flat=True).first()
    )
    return principal if isinstance(principal, dict) else None


def reply_consent(call_id: uuid.UUID) -> str:
    """Why the outbound PII filter is not applied to this reply ("": it is): the person the
    reply goes to may see personal information, and nobody else reads it (not a group chat)."""
    principal = _principal(_call(call_id))
    if principal is None or principal.get("is_group"):
        return ""
    return personal_info_visible(principal)


def _send_out(call: ToolCall, kind: str, target: ReplyTarget, text: str) -> dict[str, Any]:
    composed = compose(target.channel, text, max_length=target.adapter.max_length)
    consent = reply_consent(call.pk) if kind == OutboundMessage.Kind.REPLY else ""
    pii = f"not filtered: {consent}" if consent else "the outbound PII filter ran (see the call)"
    outbound, created = outbound_record(
        call_id=call.pk, kind=kind, agent=call.agent, target=target, composed=composed, pii=pii
    )
    if created:
        outbound_enqueue(outbound.pk)
    result: dict[str, Any] = {
        "outbound_id": str(outbound.pk),
        "channel": outbound.channel,
        "to": outbound.address,
        "state": outbound.state,
        "segments": outbound.segments,
        "truncated": outbound.truncated,
    }
    if outbound.subject:
        result["subject"] = outbound.subject
    return result


def channel_reply(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    """An executed ``channel.reply``: the answer, by the rules of the channel it goes on."""
    call = _call(call_id)
    try:
        target = reply_target_checked(
            agent=call.agent,
            turn_id=args.get("turn_id"),
            o_tag_id=call.o_tag_id,
            task_id=call.task_id,
        )
    except ReplyRefused as exc:
        raise HandlerFailure(f"{exc.code}: {exc.detail}") from exc
    return _send_out(call, OutboundMessage.Kind.REPLY, target, str(args["text"]))


def chat_assistant_post(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    """An executed ``chat.assistant.post``: a post as the agent's bot account."""
    call = _call(call_id)
    try:
        target = post_target(agent=call.agent, room_id=args.get("room_id"), o_tag_id=call.o_tag_id)
    except ReplyRefused as exc:
        raise HandlerFailure(f"{exc.code}: {exc.detail}") from exc
    return _send_out(call, OutboundMessage.Kind.POST, target, str(args["text"]))


def chat_room_read(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    """An executed ``chat.room.read``: the room's latest messages, from the homeserver."""
    call = _call(call_id)
    try:
        target = post_target(agent=call.agent, room_id=args.get("room_id"), o_tag_id=call.o_tag_id)
    except ReplyRefused as exc:
        raise HandlerFailure(f"{exc.code}: {exc.detail}") from exc
    try:
        lines = room_messages(
            user_id=bot_user_id(call.agent_id),
            room_id=target.address,
            limit=int(args.get("limit") or 20),
        )
    except MatrixUnavailable as exc:
        raise HandlerFailure(str(exc)) from exc
    return {
        "room_id": target.address,
        "messages": [
            {"sender": line.sender, "text": line.body, "at_ms": line.at_ms, "agent": line.ours}
            for line in lines
        ],
    }


#: The callables by the name tools give in ``handler_config["callable"]``.
CALLABLES: dict[str, ToolFunction] = {
    "rabs.channel_reply": channel_reply,
    "rabs.chat_assistant_post": chat_assistant_post,
    "rabs.chat_room_read": chat_room_read,
}

__all__ = ["CALLABLES", "adapter_sends", "replies_sweep", "reply_consent", "reply_submit"]
