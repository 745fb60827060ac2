"""People on the test homeserver, with their own accounts and a real Matrix client (mautrix's):
registered with the homeserver's shared secret (its admin API), logged in with a password."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import aiohttp
import httpx
from mautrix.api import HTTPAPI
from mautrix.client import ClientAPI
from mautrix.types import EventType, PaginationDirection, RoomID, UserID

from rabs.stack.matrix import Homeserver

_T = TypeVar("_T")


def register(server: Homeserver, localpart: str, password: str) -> str:
    """A new account (the shared-secret registration of Synapse's admin API); its user id."""
    url = f"{server.url}/_synapse/admin/v1/register"
    nonce = httpx.get(url, timeout=10).json()["nonce"]
    mac = hmac.new(
        server.registration_secret.encode(),
        b"\x00".join([nonce.encode(), localpart.encode(), password.encode(), b"notadmin"]),
        hashlib.sha1,
    ).hexdigest()
    body = {"nonce": nonce, "username": localpart, "password": password, "mac": mac}
    answer = httpx.post(url, json=body, timeout=10)
    answer.raise_for_status()
    return str(answer.json()["user_id"])


class MatrixPerson:
    """Someone with their own account, using a Matrix client."""

    def __init__(self, server: Homeserver, name: str) -> None:
        self.server = server
        # Accounts outlive a test run (the homeserver's data is kept): a new one each time.
        self.localpart = f"{name}-{uuid.uuid4().hex[:8]}"
        self.user_id = register(server, self.localpart, "pw-" + self.localpart)
        self.token = ""
        self.token = self._run(self._login)

    async def _login(self, client: ClientAPI) -> str:
        answer = await client.login(UserID(self.user_id), password="pw-" + self.localpart)
        return str(answer.access_token)

    def _run(self, fn: Callable[[ClientAPI], Awaitable[_T]]) -> _T:
        async def main() -> _T:
            async with aiohttp.ClientSession() as session:
                api = HTTPAPI(self.server.url, token=self.token, client_session=session)
                return await fn(ClientAPI(UserID(self.user_id), api=api))

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(main())
        with ThreadPoolExecutor(max_workers=1) as pool:  # beside Playwright's loop
            return pool.submit(asyncio.run, main()).result()

    def open_room(self, *, invite: list[str], name: str = "Chat") -> str:
        async def go(client: ClientAPI) -> str:
            return str(await client.create_room(name=name, invitees=[UserID(u) for u in invite]))

        return self._run(go)

    def join(self, room_id: str) -> None:
        async def go(client: ClientAPI) -> None:
            await client.join_room_by_id(RoomID(room_id))

        self._run(go)

    def say(self, room_id: str, text: str) -> str:
        async def go(client: ClientAPI) -> str:
            return str(await client.send_text(RoomID(room_id), text))

        return self._run(go)

    def messages(self, room_id: str) -> list[dict[str, Any]]:
        """The room's messages, oldest first: sender, body, formatted body."""

        async def go(client: ClientAPI) -> list[dict[str, Any]]:
            page = await client.get_messages(
                RoomID(room_id), PaginationDirection.BACKWARD, limit=50
            )
            return [
                {
                    "sender": str(e.sender),
                    "body": getattr(e.content, "body", ""),
                    "html": getattr(e.content, "formatted_body", None),
                }
                for e in reversed(page.events)  # type: ignore[attr-defined]
                if e.type == EventType.ROOM_MESSAGE
            ]

        return self._run(go)

    def members(self, room_id: str) -> list[str]:
        async def go(client: ClientAPI) -> list[str]:
            return [str(m) for m in await client.get_joined_members(RoomID(room_id))]

        return self._run(go)

    def wait_for(
        self, room_id: str, check: Callable[[list[dict[str, Any]]], bool], timeout: float = 20
    ) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            seen = self.messages(room_id)
            if check(seen) or time.monotonic() > deadline:
                return seen
            time.sleep(0.2)
