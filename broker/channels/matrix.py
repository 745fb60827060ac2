"""The Matrix homeserver, as the control plane's application service sees it (docs/channels.md),
through mautrix's client API.

Our users are the registration's exclusive namespace: an agent's bot ``@rabs_<agent>`` and a
staff member posting from the board ``@rabs.<username>``, registered on first use and acting
with the application service's token (``?user_id=``). Everyone else is a person with their own
account and client. Each function is synchronous (one short-lived event loop and HTTP session
per call) for the handlers, jobs and views that use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import aiohttp
from django.conf import settings
from mautrix.api import HTTPAPI, Method, Path
from mautrix.client import ClientAPI
from mautrix.errors import (
    MatrixConnectionError,
    MatrixRequestError,
    MForbidden,
    MLimitExceeded,
    MUserInUse,
)
from mautrix.types import (
    EventType,
    Format,
    MessageType,
    PaginationDirection,
    RoomID,
    TextMessageEventContent,
    UserID,
)

from .base import SendFailure

USER_PREFIX = "rabs"
_LOCALPART_UNSAFE = re.compile(r"[^a-z0-9._=/-]")
_T = TypeVar("_T")
_ensured: set[str] = set()


class MatrixUnavailable(Exception):
    """No homeserver is configured, or it could not be reached."""


def matrix_enabled() -> bool:
    return bool(settings.RABS_MATRIX_URL and settings.RABS_MATRIX_AS_TOKEN)


def _server() -> str:
    return str(settings.RABS_MATRIX_SERVER_NAME)


def bot_user_id(agent_id: str) -> str:
    """The agent's bot account."""
    return f"@{USER_PREFIX}_{_LOCALPART_UNSAFE.sub('_', agent_id.lower())}:{_server()}"


def staff_user_id(username: str) -> str:
    """The account a staff member posts with from the board."""
    return f"@{USER_PREFIX}.{_LOCALPART_UNSAFE.sub('_', username.lower())}:{_server()}"


def is_bot(user_id: str) -> bool:
    return user_id.startswith(f"@{USER_PREFIX}_") and user_id.endswith(f":{_server()}")


def agent_of_bot(user_id: str) -> str | None:
    """The agent id a bot account stands for (lower case), or None."""
    if not is_bot(user_id):
        return None
    return user_id[len(USER_PREFIX) + 2 : -len(_server()) - 1]


def _run(make: Callable[[aiohttp.ClientSession], Awaitable[_T]]) -> _T:
    """Run one exchange with the homeserver on an event loop of its own."""
    if not matrix_enabled():
        raise MatrixUnavailable("no Matrix homeserver is configured (RABS_MATRIX_URL)")

    async def main() -> _T:
        timeout = aiohttp.ClientTimeout(total=float(settings.RABS_REPLY_SEND_TIMEOUT_SECONDS))
        async with aiohttp.ClientSession(timeout=timeout) as session:
            return await make(session)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    with ThreadPoolExecutor(max_workers=1) as pool:  # called from a running loop's thread
        return pool.submit(asyncio.run, main()).result()


def _client(session: aiohttp.ClientSession, user_id: str) -> ClientAPI:
    api = HTTPAPI(
        settings.RABS_MATRIX_URL,
        token=settings.RABS_MATRIX_AS_TOKEN,
        client_session=session,
        as_user_id=UserID(user_id),
    )
    return ClientAPI(UserID(user_id), api=api)


async def _ensure(client: ClientAPI, user_id: str, displayname: str) -> None:
    if user_id in _ensured:
        return
    localpart = user_id[1:].split(":", 1)[0]
    service = HTTPAPI(
        settings.RABS_MATRIX_URL,
        token=settings.RABS_MATRIX_AS_TOKEN,
        client_session=client.api.session,
    )
    with contextlib.suppress(MUserInUse):  # registered before
        await service.request(
            Method.POST,
            Path.v3.register,
            {"type": "m.login.application_service", "username": localpart},
        )
    if displayname:
        await client.set_displayname(displayname)
    _ensured.add(user_id)


def ensure_user(user_id: str, displayname: str = "") -> None:
    """Register one of our users (once) and give it a display name."""

    async def go(session: aiohttp.ClientSession) -> None:
        await _ensure(_client(session, user_id), user_id, displayname)

    _run(go)


def room_join(user_id: str, room_id: str, displayname: str = "") -> None:
    async def go(session: aiohttp.ClientSession) -> None:
        client = _client(session, user_id)
        await _ensure(client, user_id, displayname)
        await client.join_room_by_id(RoomID(room_id))

    _run(go)


def room_create(*, user_id: str, name: str, invite: list[str], displayname: str = "") -> str:
    """A private room made by one of our users, the others invited."""

    async def go(session: aiohttp.ClientSession) -> str:
        client = _client(session, user_id)
        await _ensure(client, user_id, displayname)
        room = await client.create_room(
            name=name, invitees=[UserID(u) for u in invite], is_direct=len(invite) == 1
        )
        return str(room)

    return _run(go)


def room_invite(*, inviter: str, room_id: str, invitee: str) -> None:
    """``inviter`` (one of our users in the room) invites ``invitee``; already there is fine."""

    async def go(session: aiohttp.ClientSession) -> None:
        with contextlib.suppress(MForbidden):  # already invited or joined
            await _client(session, inviter).invite_user(RoomID(room_id), UserID(invitee))

    _run(go)


def room_members(*, user_id: str, room_id: str) -> list[str]:
    """Who is joined to the room (as ``user_id`` sees it)."""

    async def go(session: aiohttp.ClientSession) -> list[str]:
        members = await _client(session, user_id).get_joined_members(RoomID(room_id))
        return [str(m) for m in members]

    return _run(go)


def room_post(*, user_id: str, room_id: str, body: str, html: str, txn_id: str) -> str:
    """Post a message as ``user_id``; its event id. ``txn_id`` makes a repeat the same post
    (the homeserver answers it with the first event). Raises SendFailure."""
    content = TextMessageEventContent(msgtype=MessageType.TEXT, body=body)
    if html:
        content.format, content.formatted_body = Format.HTML, html

    async def go(session: aiohttp.ClientSession) -> str:
        client = _client(session, user_id)
        event = await client.send_message_event(
            RoomID(room_id), EventType.ROOM_MESSAGE, content, txn_id=txn_id
        )
        return str(event)

    try:
        return _run(go)
    except MatrixUnavailable as exc:
        raise SendFailure(str(exc), True) from exc
    except MLimitExceeded as exc:
        raise SendFailure(f"the homeserver asked to slow down: {exc}", True) from exc
    except MatrixRequestError as exc:
        status = getattr(exc, "http_status", 0) or 0
        raise SendFailure(
            f"the homeserver refused it ({status} {getattr(exc, 'errcode', '')}: {exc})",
            status >= 500,
        ) from exc
    except (MatrixConnectionError, aiohttp.ClientError, TimeoutError, OSError) as exc:
        # The transaction id makes a second try the same post: safe to retry.
        raise SendFailure(f"could not reach the homeserver: {exc}", True) from exc


@dataclass(frozen=True)
class ChatLine:
    """One message of a room, as the board shows it."""

    event_id: str
    sender: str
    body: str
    html: str
    at_ms: int
    ours: bool  # posted by one of our bots (an agent)


def room_messages(*, user_id: str, room_id: str, limit: int = 50) -> list[ChatLine]:
    """The room's latest messages, oldest first, read from the homeserver."""

    async def go(session: aiohttp.ClientSession) -> list[ChatLine]:
        page = await _client(session, user_id).get_messages(
            RoomID(room_id), PaginationDirection.BACKWARD, limit=limit
        )
        lines = []
        for event in page.events:  # type: ignore[attr-defined]  # a functional NamedTuple
            if event.type != EventType.ROOM_MESSAGE:
                continue
            content = event.content
            lines.append(
                ChatLine(
                    event_id=str(event.event_id),
                    sender=str(event.sender),
                    body=str(getattr(content, "body", "") or ""),
                    html=str(getattr(content, "formatted_body", "") or ""),
                    at_ms=int(event.timestamp or 0),
                    ours=is_bot(str(event.sender)),
                )
            )
        return list(reversed(lines))

    return _run(go)
