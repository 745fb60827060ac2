"""What the homeserver pushes to us (docs/channels.md): the application service's transactions.

The homeserver sends every event of a room one of our users is in, in transactions it retries
until we answer 200 (``PUT /matrix/_matrix/app/v1/transactions/<txn>``). Here:

- an **invitation** of an agent's bot (someone opened a chat with Henry from their own client):
  the bot joins, when the agent has an active Matrix adapter, and the room is mapped to that
  agent (``MatrixRoom``);
- a **message** in a mapped room from a person (anyone but our bots: people with their own
  clients, staff posting from the board): the same path as every inbound message — ACL, the
  events ledger, the session's turn (``message_receive``), the room's session kept with it;
- a message from one of our bots (an agent's own post) is nobody's news: it wakes no agent and
  no hook (seed 004: notifications only for human-originated posts).

Every event is handled at most once whatever the homeserver resends (the ledger is idempotent on
the event id; joining twice changes nothing). A failure of our own store answers 500, so the
homeserver sends the transaction again; an event that can never be taken (no text) is skipped.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
from django.db import DatabaseError
from mautrix.errors import MatrixConnectionError, MatrixRequestError

from brainframe.models import Channel, ChannelAdapter, MatrixRoom
from brainframe.services.ledger.conversations import message_receive
from brainframe.services.ledger.ledgers import LedgerRefusal

from .matrix import (
    MatrixUnavailable,
    agent_of_bot,
    bot_user_id,
    ensure_user,
    is_bot,
    room_join,
    room_members,
)

log = logging.getLogger(__name__)

#: Message types people write (``m.notice`` is what bots write: not a person's message).
PERSON_MSGTYPES = frozenset({"m.text", "m.emote"})


class TransactionFailed(Exception):
    """Our side could not take the transaction now: answer 500, the homeserver resends it."""


def matrix_adapter(agent_id: str) -> ChannelAdapter | None:
    """The agent's active Matrix adapter (the first by name), if it has one."""
    return (
        ChannelAdapter.objects.select_related("agent")
        .filter(
            agent__agent_id__iexact=agent_id,
            channel=Channel.CHAT,
            send_via=ChannelAdapter.SendVia.MATRIX,
            active=True,
        )
        .order_by("name")
        .first()
    )


def _invited(event: dict[str, Any]) -> str:
    """The invited bot's agent, for an invitation of one of our bots."""
    content = event.get("content") or {}
    if event.get("type") != "m.room.member" or content.get("membership") != "invite":
        return ""
    return agent_of_bot(str(event.get("state_key") or "")) or ""


def _join(agent_id: str, room_id: str) -> None:
    adapter = matrix_adapter(agent_id)
    if adapter is None:
        return  # the agent takes no chat: the invitation stays unanswered
    room_join(bot_user_id(adapter.agent_id), room_id, displayname=adapter.agent.name)
    MatrixRoom.objects.get_or_create(
        room_id=room_id, defaults={"agent": adapter.agent, "adapter": adapter}
    )


def _message(event: dict[str, Any]) -> None:
    sender, room_id = str(event.get("sender") or ""), str(event.get("room_id") or "")
    content = event.get("content") or {}
    if is_bot(sender) or content.get("msgtype") not in PERSON_MSGTYPES:
        return  # an agent's own post, or a bot's notice: nobody's news
    room = MatrixRoom.objects.select_related("adapter", "agent").filter(room_id=room_id).first()
    if room is None or not room.adapter.active:
        return
    members = room_members(user_id=bot_user_id(room.agent_id), room_id=room_id)
    payload = {
        "message_id": str(event.get("event_id") or ""),
        "sender": sender,
        "text": str(content.get("body") or ""),
        # The room is the conversation: one session per room, a group when more than two.
        "chat_id": room_id,
        "is_group": len(members) > 2,
        "origin_server_ts": event.get("origin_server_ts"),
    }
    result = message_receive(room.adapter, payload)
    if result.session is not None and room.session_id != result.session.pk:
        MatrixRoom.objects.filter(pk=room.pk).update(session=result.session)


def transaction_handle(events: list[dict[str, Any]]) -> int:
    """Take one transaction's events; how many were messages or invitations for us. Raises
    TransactionFailed when the transaction should come again."""
    taken = 0
    for event in events:
        if not isinstance(event, dict):
            continue
        try:
            agent_id = _invited(event)
            if agent_id:
                _join(agent_id, str(event.get("room_id") or ""))
                taken += 1
            elif event.get("type") == "m.room.message":
                _message(event)
                taken += 1
        except (LedgerRefusal, MatrixRequestError) as refused:  # never to be taken: skip it
            log.warning("skipped Matrix event %s: %s", event.get("event_id"), refused)
        except (
            DatabaseError,
            MatrixUnavailable,
            MatrixConnectionError,
            aiohttp.ClientError,
            OSError,
        ) as exc:
            raise TransactionFailed(str(exc)) from exc
    return taken


def user_query(user_id: str) -> bool:
    """The homeserver asks whether one of our users exists (someone invited it): an agent's
    bot exists when the agent takes chat (it is registered now)."""
    agent_id = agent_of_bot(user_id)
    adapter = matrix_adapter(agent_id) if agent_id else None
    if adapter is None:
        return False
    ensure_user(bot_user_id(adapter.agent_id), adapter.agent.name)
    return True
