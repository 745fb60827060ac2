"""The ``/mcp`` endpoint as an ASGI app: bearer-token authentication, then the SDK's Streamable
HTTP transport, whose session manager is running before the first request is handed to it.

The SDK's transport needs ``session_manager.run()`` entered (a task group that lives as long as
the server) before it serves anything, and says to enter it from the ASGI lifespan. Daphne sends
no lifespan events, and Django's ASGI handler refuses them, so this app starts the manager
itself: on the lifespan's ``startup`` when the server sends one, otherwise on the first request,
which waits until it runs. It is started once per event loop (one per daphne process).

Requests are stateless: every request stands on its own, so any web process behind the
agents' entry can answer any request, and identity comes from each request's token. A session
(``Mcp-Session-Id``, given at ``initialize``, kept in Redis: ``sessions.py``) only says where the
agent's notifications go: ``GET /mcp`` with it is that stream (``streams.py``), ``DELETE`` ends
it. A plain ``tools/call`` is answered by ``fast.py``; one that asked for progress is answered as
an event stream (the SDK's second manager), everything else as JSON.
"""

from __future__ import annotations

import asyncio
import json
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from brainframe.services.access.credentials import (
    Bearer,
    TokenRefused,
    agent_token_bearer,
    agent_token_remembered,
)

from . import fast, sessions, streams
from .face import AUTH_UNAVAILABLE, Caller
from .holding import SESSION_SCOPE_KEY
from .server import AGENT_SCOPE_KEY, build_server

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
_auth_threads = ThreadPoolExecutor(max_workers=2, thread_name_prefix="mcp-auth")


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin1"))
    return ""


async def _json(send: Any, status: int, body: dict[str, Any], **headers: str) -> None:
    payload = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})


def _authenticate(token: str) -> Bearer:
    try:
        return agent_token_bearer(token=token)
    finally:
        close_old_connections()


async def _refuse(send: Any, refused: TokenRefused) -> None:
    if refused.code == AUTH_UNAVAILABLE:
        body = {"code": refused.code, "detail": refused.detail}
        await _json(send, 503, body, **{"retry-after": "2"})
        return
    await _json(
        send,
        401,
        {"code": refused.code, "detail": refused.detail},
        **{"www-authenticate": f'Bearer realm="rabs", error="{refused.code}"'},
    )


async def _buffered(receive: Any, limit: int) -> tuple[bytes | None, Any]:
    """The request's body (None past ``limit`` bytes, or when the client went away), and a
    ``receive`` that hands the transport everything read here, then the rest."""
    read: list[dict[str, Any]] = []
    chunks: list[bytes] = []
    size, more = 0, True
    while more and size <= limit:
        message = await receive()
        read.append(message)
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        more = message.get("more_body", False)

    async def replay() -> Any:
        return read.pop(0) if read else await receive()

    return (b"".join(chunks) if not more and size <= limit else None), replay


@dataclass(frozen=True)
class _Request:
    """What the gateway reads of a POSTed JSON-RPC message: its method, and whether it asked
    for progress (then it is answered as a stream, to carry the progress)."""

    method: str | None = None
    progress: bool = False
    message: Any = None


def _read(body: bytes | None) -> _Request:
    if not body:
        return _Request()
    try:
        message = json.loads(body)
    except ValueError:
        return _Request()
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return _Request()
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return _Request(
        method=message["method"],
        progress=isinstance(meta, dict) and meta.get("progressToken") is not None,
        message=message,
    )


def _refusing(send: Any, caller: Caller) -> Any:
    """``send``, unless reading the token for this request refused it: then the 401 the gateway
    gives a refused token, in place of the transport's answer."""

    async def sending(message: dict[str, Any]) -> None:
        if caller.refused is None:
            await send(message)
        elif message["type"] == "http.response.start":
            await _refuse(send, caller.refused)

    return sending


class _Running:
    """One server and its two transports (JSON answers, and event streams for a call that asked
    for progress), running on one event loop."""

    def __init__(self) -> None:
        self.server = build_server()
        common: dict[str, Any] = {
            "app": self.server,
            "stateless": True,
            "max_request_body_size": settings.RABS_MAX_BODY_BYTES,
            # Hosts are checked against DJANGO_ALLOWED_HOSTS before this app sees a request.
            "security_settings": TransportSecuritySettings(enable_dns_rebinding_protection=False),
        }
        # Plain JSON answers unless the request needs a stream: proxies need not know SSE.
        self.json = StreamableHTTPSessionManager(json_response=True, **common)
        self.streaming = StreamableHTTPSessionManager(json_response=False, **common)
        self.ready = asyncio.Event()
        self.stop = asyncio.Event()
        self.failed: BaseException | None = None
        self.task = asyncio.get_running_loop().create_task(self._run(), name="mcp-sessions")

    async def _run(self) -> None:
        try:
            async with self.json.run(), self.streaming.run():
                self.ready.set()
                await self.stop.wait()
        except BaseException as exc:
            self.failed = exc
            self.ready.set()
            raise


class MCPGateway:
    """ASGI app for ``/mcp`` (and the lifespan, when the server sends one)."""

    def __init__(self) -> None:
        self._running: dict[int, _Running] = {}

    async def _started(self) -> _Running:
        loop = asyncio.get_running_loop()
        running = self._running.get(id(loop))
        if running is None or running.task.done():
            running = self._running[id(loop)] = _Running()
        await running.ready.wait()
        if running.failed is not None:
            raise RuntimeError("the MCP session manager did not start") from running.failed
        return running

    async def lifespan(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self._started()
                except Exception as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                for running in self._running.values():
                    running.stop.set()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.lifespan(scope, receive, send)
            return
        domain, _port = split_domain_port(_header(scope, b"host"))
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            await _json(send, 400, {"code": "bad_host", "detail": "host not allowed"})
            return
        authorization = _header(scope, b"authorization")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            await _json(
                send,
                401,
                {"code": "auth_missing", "detail": "send Authorization: Bearer <token>"},
                **{"www-authenticate": 'Bearer realm="rabs"'},
            )
            return
        token = token.strip()
        if scope.get("method") in ("GET", "DELETE"):
            await self._session_request(scope, receive, send, token)
            return
        body, receive = await _buffered(receive, settings.RABS_MAX_BODY_BYTES)
        request = _read(body)
        # A tool call may go on a token this process admitted lately, unread: the statement
        # that records its decision checks the agent's generation (a revoked token or a paused
        # agent changes it), and any other answer reads the token first (``face.Caller``).
        bearer = agent_token_remembered(token=token) if request.method == "tools/call" else None
        if bearer is None:
            bearer = await self._authenticated(send, token)
            if bearer is None:
                return
        caller = Caller(token, bearer)
        session_id = _header(scope, b"mcp-session-id") or None
        if request.method == "initialize":
            session = await asyncio.get_running_loop().run_in_executor(
                _auth_threads, _session_open, bearer.agent.agent_id
            )
            session_id = session.session_id
            send = _with_session(send, session_id)
        plain = fast.plain_call(request.message, dict(scope.get("headers", [])))
        if plain is not None:
            await fast.answer(_refusing(send, caller), caller, plain, session_id)
            return
        running = await self._started()
        manager = running.streaming if request.progress else running.json
        await manager.handle_request(
            {**scope, AGENT_SCOPE_KEY: caller, SESSION_SCOPE_KEY: session_id},
            receive,
            _refusing(send, caller),
        )

    async def _authenticated(self, send: Any, token: str) -> Bearer | None:
        """The token's bearer as read now; None once the refusal is answered."""
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(_auth_threads, _authenticate, token)
        except TokenRefused as refused:
            await _refuse(send, refused)
        except Exception:
            log.exception("MCP authentication failed")
            await _refuse(send, TokenRefused(AUTH_UNAVAILABLE, "could not check the token"))
        return None

    async def _session_request(
        self, scope: dict[str, Any], receive: Any, send: Any, token: str
    ) -> None:
        """``GET /mcp``: the session's notification stream; ``DELETE /mcp``: the session ends."""
        session_id = _header(scope, b"mcp-session-id")
        if not session_id:
            await _json(
                send,
                405,
                {"code": "session_required", "detail": "send the Mcp-Session-Id from initialize"},
                allow="POST",
            )
            return
        bearer = await self._authenticated(send, token)
        if bearer is None:
            return
        loop = asyncio.get_running_loop()
        session = await loop.run_in_executor(
            _auth_threads, _session_read, session_id, bearer.agent.agent_id
        )
        if session is None:  # unknown, ended, or another agent's: initialize again
            await _json(send, 404, {"code": "unknown_session", "detail": "no such session"})
            return
        if scope["method"] == "DELETE":
            await loop.run_in_executor(_auth_threads, _session_close, session)
            await _json(send, 200, {})
            return
        await streams.serve(send, receive, token=token, agent=bearer.agent, session=session)


def _session_open(agent_id: str) -> sessions.Session:
    return sessions.session_open(agent_id=agent_id)


def _session_read(session_id: str, agent_id: str) -> sessions.Session | None:
    return sessions.session_read(session_id=session_id, agent_id=agent_id)


def _session_close(session: sessions.Session) -> None:
    sessions.session_close(session=session)


def _with_session(send: Any, session_id: str) -> Any:
    """``send``, with the session's id on the answer's headers (``initialize``)."""

    async def sending(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = [*message.get("headers", []), (b"mcp-session-id", session_id.encode())]
            message = {**message, "headers": headers}
        await send(message)

    return sending
