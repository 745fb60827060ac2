"""``GET /mcp``: a session's stream of notifications (Server-Sent Events), served by whichever
web process the client reached.

- ``notifications/tools/list_changed`` when the agent's tool list changes (a grant approved or
  withdrawn, a tool enabled, disabled or changed, an allowlist edited): every change to the
  registry renews its generation token (a trigger); one watcher per process reads the token
  every ``WATCH_SECONDS`` while any stream is open, and each stream then compares its agent's
  list with the one it last announced.
- ``notifications/message`` (logger ``rabs.approvals``, at or above the session's
  ``logging/setLevel``) when one of the agent's calls is held for a reviewer, approved,
  denied, escalated or expires, and ``notifications/resources/updated`` for ``rabs://approvals``
  and ``rabs://calls/{call_id}`` when the session subscribed to them: from the agent's
  Channels group (``brainframe.events.base.agent_group``), which the event bus sends those
  events to from whichever process decided them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from typing import Any

from channels.layers import get_channel_layer
from django.db import close_old_connections

from brainframe.events.base import agent_group
from brainframe.models import Agent
from brainframe.services.access.credentials import TokenRefused, agent_token_bearer

from ..registry import registry_token
from . import face
from .holding import LOGGER, level_allows
from .sessions import Session, session_read

log = logging.getLogger(__name__)

WATCH_SECONDS = 1.0
KEEPALIVE_SECONDS = 15.0
#: How often an open stream reads its token again (a revoked token, a paused agent: it ends).
RECHECK_SECONDS = 30.0

_EVENT_WORDS = {
    "approval:created": ("held", "notice"),
    "approval:escalated": ("escalated", "notice"),
    "approval:expired": ("expired", "warning"),
}


def _sync(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    finally:
        close_old_connections()


async def _thread(fn: Any, *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(None, _sync, fn, *args)


class RegistryWatcher:
    """One per event loop: the registry's generation as last read, and an event set when it
    changes. Runs only while streams are open."""

    def __init__(self) -> None:
        self.changed = asyncio.Event()
        self.streams = 0
        self.task: asyncio.Task[None] | None = None

    def join(self) -> None:
        self.streams += 1
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._watch(), name="mcp-registry")

    def leave(self) -> None:
        self.streams -= 1

    async def _watch(self) -> None:
        token = await _thread(registry_token)
        while self.streams > 0:
            await asyncio.sleep(WATCH_SECONDS)
            try:
                now = await _thread(registry_token)
            except Exception:  # the database away a moment: try again next time
                log.debug("could not read the registry's generation", exc_info=True)
                continue
            if now != token:
                token = now
                changed, self.changed = self.changed, asyncio.Event()
                changed.set()


_watchers: dict[int, RegistryWatcher] = {}


def _watcher() -> RegistryWatcher:
    loop = asyncio.get_running_loop()
    watcher = _watchers.get(id(loop))
    if watcher is None:
        watcher = _watchers[id(loop)] = RegistryWatcher()
    return watcher


def _tools_fingerprint(agent: Agent) -> str:
    listed = face.tools_list(agent)
    text = json.dumps([t.model_dump(mode="json", by_alias=True) for t in listed], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _frame(method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return f"event: message\ndata: {json.dumps(message, default=str)}\n\n".encode()


def approval_frames(session: Session, item: dict[str, Any]) -> list[bytes]:
    """What a session is told of one approval event about its agent."""
    payload = item.get("payload") or {}
    if payload.get("agent_id") != session.agent_id:
        return []
    name = item.get("event", "")
    status = str(payload.get("status", ""))
    if name == "approval:decided":
        event, level = ("denied", "warning") if status == "rejected" else ("approved", "info")
    else:
        event, level = _EVENT_WORDS.get(name, (status, "info"))
    frames = []
    if level_allows(session.level, level):
        data = {
            "event": event,
            "tool": payload.get("tool_id"),
            "call_id": payload.get("call_id"),
            "approval_id": payload.get("approval_id"),
            "status": status,
            "decided_by": payload.get("decided_by"),
        }
        frames.append(
            _frame("notifications/message", {"level": level, "logger": LOGGER, "data": data})
        )
    uris = ["rabs://approvals"]
    if payload.get("call_id"):
        uris.append(f"rabs://calls/{payload['call_id']}")
    for uri in uris:
        if uri in session.subscriptions:
            frames.append(_frame("notifications/resources/updated", {"uri": uri}))
    return frames


async def serve(send: Any, receive: Any, *, token: str, agent: Agent, session: Session) -> None:
    """The session's stream until the client goes away, its token is refused, or the process
    stops."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/event-stream"),
                (b"cache-control", b"no-cache, no-transform"),
                (b"mcp-session-id", session.session_id.encode()),
            ],
        }
    )
    layer = get_channel_layer()
    channel = await layer.new_channel() if layer is not None else None
    group = agent_group(agent.agent_id)
    if channel is not None:
        await layer.group_add(group, channel)
    watcher = _watcher()
    watcher.join()
    announced = await _thread(_tools_fingerprint, agent)
    loop = asyncio.get_running_loop()
    checked = loop.time()

    async def write(chunk: bytes) -> None:
        await send({"type": "http.response.body", "body": chunk, "more_body": True})

    gone = loop.create_task(_disconnected(receive))
    try:
        await write(b": stream open\n\n")
        while not gone.done():
            changed = loop.create_task(watcher.changed.wait())
            waits: set[asyncio.Future[Any]] = {gone, changed}
            heard = loop.create_task(layer.receive(channel)) if channel is not None else None
            if heard is not None:
                waits.add(heard)
            done, pending = await asyncio.wait(
                waits, timeout=KEEPALIVE_SECONDS, return_when=asyncio.FIRST_COMPLETED
            )
            for task in pending:
                if task is not gone:
                    task.cancel()
            if gone in done:
                break
            if not done:
                await write(b": keep-alive\n\n")
            if loop.time() - checked >= RECHECK_SECONDS:
                checked = loop.time()
                try:
                    agent = (await _thread(_bearer, token)).agent
                except TokenRefused:
                    break
            if heard is not None and heard in done:
                message = heard.result()
                fresh = await _thread(_session, session.session_id, agent.agent_id)
                if fresh is None:  # ended (DELETE) from another process
                    break
                session = fresh
                for item in message.get("events", []):
                    for frame in approval_frames(session, item):
                        await write(frame)
            if changed in done:
                now = await _thread(_tools_fingerprint, agent)
                if now != announced:
                    announced = now
                    await write(_frame("notifications/tools/list_changed"))
    except OSError:  # the client went away mid-write
        pass
    finally:
        gone.cancel()
        watcher.leave()
        if channel is not None:
            await layer.group_discard(group, channel)
        with contextlib.suppress(Exception):  # the client is gone already
            await send({"type": "http.response.body", "body": b"", "more_body": False})


def _bearer(token: str) -> Any:
    return agent_token_bearer(token=token)


def _session(session_id: str, agent_id: str) -> Session | None:
    return session_read(session_id=session_id, agent_id=agent_id)


async def _disconnected(receive: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
