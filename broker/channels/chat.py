"""``chat.human.post``: a staff member posts in a conversation's room from the board's chat box.

Staff post as themselves (their own account in our namespace, ``@rabs.<username>``), invited by
the room's bot the first time. The post is a person's message like any other: it comes back from
the homeserver and goes through the ACL, the ledger and the session's turn (it wakes the agent).
That the board posted it, and who, is kept in the event log (``conversation:chat_posted``). An
agent has no way to post as a person: this is not one of the broker's tools.
"""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AbstractBaseUser

from brainframe.events import ChatPosted, emit
from brainframe.models import MatrixRoom

from .matrix import bot_user_id, ensure_user, room_invite, room_join, room_post, staff_user_id


def chat_human_post(*, user: AbstractBaseUser, room: MatrixRoom, text: str) -> str:
    """Post ``text`` in ``room`` as ``user``; the homeserver's event id. Raises SendFailure."""
    username = user.get_username()
    me = staff_user_id(username)
    name = getattr(user, "get_full_name", lambda: "")() or username
    ensure_user(me, name)  # the invitation must find the account
    room_invite(inviter=bot_user_id(room.agent_id), room_id=room.room_id, invitee=me)
    room_join(me, room.room_id, displayname=name)
    event_id = room_post(
        user_id=me, room_id=room.room_id, body=text, html="", txn_id=f"board-{uuid.uuid4()}"
    )
    thread = room.session.thread_id if room.session_id and room.session else None
    emit(
        ChatPosted(
            room_id=room.room_id,
            by=username,
            agent_id=room.agent_id,
            matrix_event_id=event_id,
            thread_id=str(thread) if thread else None,
        )
    )
    return event_id
