"""The ``/mcp`` endpoint as an ASGI app: bearer-token authentication, then the SDK's Streamable
HTTP transport, whose session manager is running before the first request is handed to it.

The SDK's transport needs ``session_manager.run()`` entered (a task group that lives as long as
the server) before it serves anything, and says to enter it from the ASGI lifespan. Daphne sends
no lifespan events, and Django's ASGI handler refuses them, so this app starts the manager
itself: on the lifespan's ``startup`` when the server sends one, otherwise on the first request,
which waits until it runs. It is started once per event loop (one per daphne process).

Transport mode is stateless: every request stands on its own, so any web process behind the
agents' entry can answer any request, and identity comes from each request's token.
"""

from __future__ import annotations

import asyncio
import json
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from mcp.server.transport_security import TransportSecuritySettings

from brainframe.services.access.credentials import (
    Bearer,
    TokenRefused,
    agent_token_bearer,
    agent_token_remembered,
)

from .face import AUTH_UNAVAILABLE, Caller
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


def _is_tool_call(body: bytes | None) -> bool:
    """A single JSON-RPC ``tools/call`` (what the decision's statement checks the agent for)."""
    if not body:
        return False
    try:
        message = json.loads(body)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("method") == "tools/call"


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
    """One server and its session manager, running on one event loop."""

    def __init__(self) -> None:
        self.server = build_server()
        self.app = self.server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            # Plain JSON answers: nothing here streams, and proxies need not know SSE.
            json_response=True,
            max_request_body_size=settings.RABS_MAX_BODY_BYTES,
            # Hosts are checked against DJANGO_ALLOWED_HOSTS before this app sees a request.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.ready = asyncio.Event()
        self.stop = asyncio.Event()
        self.failed: BaseException | None = None
        self.task = asyncio.get_running_loop().create_task(self._run(), name="mcp-sessions")

    async def _run(self) -> None:
        try:
            async with self.server.session_manager.run():
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
        # A tool call may go on a token this process admitted lately, unread: the statement
        # that records its decision checks the agent's generation (a revoked token or a paused
        # agent changes it), and any other answer reads the token first (``face.Caller``).
        bearer = agent_token_remembered(token=token)
        if bearer is not None:
            body, receive = await _buffered(receive, settings.RABS_MAX_BODY_BYTES)
            if not _is_tool_call(body):
                bearer = None
        if bearer is None:
            loop = asyncio.get_running_loop()
            try:
                bearer = await loop.run_in_executor(_auth_threads, _authenticate, token)
            except TokenRefused as refused:
                await _refuse(send, refused)
                return
            except Exception:
                log.exception("MCP authentication failed")
                await _refuse(send, TokenRefused(AUTH_UNAVAILABLE, "could not check the token"))
                return
        caller = Caller(token, bearer)
        running = await self._started()
        await running.app({**scope, AGENT_SCOPE_KEY: caller}, receive, _refusing(send, caller))
