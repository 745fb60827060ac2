"""Connections to upstream MCP servers, kept open per process and used from any thread.

Each upstream gets one connection (the official client over Streamable HTTP, or a stdio child
process) held by a task of its own on one background event loop: the SDK's client must be
entered and left in the same task. Handlers call ``upstream_call`` / ``upstream_tools`` from
worker threads and wait for the answer with a timeout. A connection that fails is dropped and the
next use connects again; a changed registration (URL, command, headers) reconnects too.

Each connection listens for the upstream's ``notifications/tools/list_changed`` (sent as it is on
a 2025-era session; on a 2026-07-28 one, through a ``subscriptions/listen`` stream opened for
it). A notice marks the upstream stale in this process and has its tools listed again in the
background (the relister ``broker.services.upstreams`` registers); until a listing is recorded,
``upstream_current`` lists them before the next call of one of its tools is decided.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, cast

import anyio
import httpx2
import mcp_types as types
from django.db import close_old_connections
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.exceptions import MCPError

from brainframe.models import MCPUpstream

from .upstream_http import NotLean, Timeout, Unavailable, lean_session

log = logging.getLogger(__name__)


class UpstreamUnavailable(Exception):
    """The upstream could not be reached, or dropped the connection."""


class UpstreamTimeout(Exception):
    pass


@dataclass(frozen=True)
class UpstreamSpec:
    """What a connection is made from; a change of any of it means a new connection."""

    name: str
    transport: str
    url: str
    command: tuple[str, ...]
    headers: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, upstream: MCPUpstream) -> UpstreamSpec:
        return cls(
            name=upstream.name,
            transport=upstream.transport,
            url=upstream.url,
            command=tuple(str(part) for part in upstream.command or ()),
            headers=tuple(sorted((str(k), str(v)) for k, v in (upstream.headers or {}).items())),
        )

    def client(self, on_message: Any = None) -> Client:
        if self.transport == MCPUpstream.Transport.STDIO:
            command, *args = self.command
            return Client(
                StdioServerParameters(command=command, args=args), message_handler=on_message
            )
        http = httpx2.AsyncClient(headers=dict(self.headers), timeout=60)
        return Client(
            streamable_http_client(self.url, http_client=http), message_handler=on_message
        )


class _Connection:
    def __init__(self, spec: UpstreamSpec) -> None:
        self.spec = spec
        self.client: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self.stop = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._hold(), name=f"mcp-{spec.name}")

    async def _message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            tools_changed(self.spec.name)

    async def _listen(self, client: Client) -> None:
        """A 2026-07-28 session hears of a changed tool list only through a listen stream (the
        notice reaches ``_message`` too); an older one sends it unasked."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    pass
        except (ListenNotSupportedError, MCPError, SubscriptionLost, TimeoutError) as exc:
            log.info("upstream %s: no tools/list_changed stream (%s)", self.spec.name, exc)
        except Exception:  # the stream, not the connection: calls go on; the job still lists
            log.warning("upstream %s: the tools/list_changed stream failed", self.spec.name)

    async def _hold(self) -> None:
        try:
            async with (
                self.spec.client(self._message) as client,
                anyio.create_task_group() as group,
            ):
                group.start_soon(self._listen, client)
                self.client.set_result(client)
                await self.stop.wait()
                group.cancel_scope.cancel()
        except BaseException as exc:
            if not self.client.done():
                self.client.set_exception(UpstreamUnavailable(f"{type(exc).__name__}: {exc}"))
            log.info("connection to upstream %s ended: %s", self.spec.name, exc)


class _Pool:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._connections: dict[str, _Connection] = {}

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="mcp-upstreams", daemon=True).start()
                self._loop = loop
            return self._loop

    async def _client(self, spec: UpstreamSpec) -> Client:
        connection = self._connections.get(spec.name)
        if connection is not None and (connection.spec != spec or connection.task.done()):
            connection.stop.set()
            connection = None
        if connection is None:
            connection = self._connections[spec.name] = _Connection(spec)
        try:
            return await connection.client
        except UpstreamUnavailable:
            self._connections.pop(spec.name, None)
            raise

    async def _call(
        self, spec: UpstreamSpec, tool: str, arguments: dict[str, Any], meta: dict[str, Any]
    ) -> types.CallToolResult:
        client = await self._client(spec)
        try:
            return await client.call_tool(
                tool, arguments, meta=cast(types.RequestParamsMeta, meta) if meta else None
            )
        except Exception as exc:
            if _protocol_answer(exc):
                raise
            self._drop(spec)
            raise UpstreamUnavailable(f"{type(exc).__name__}: {exc}") from exc

    async def _tools(self, spec: UpstreamSpec) -> tuple[list[types.Tool], dict[str, Any]]:
        client = await self._client(spec)
        try:
            # Never the client's cached answer: what the upstream lists now.
            listed = await client.list_tools(cache_mode="refresh")
        except Exception as exc:
            self._drop(spec)
            raise UpstreamUnavailable(f"{type(exc).__name__}: {exc}") from exc
        info = client.session.server_info if hasattr(client.session, "server_info") else None
        described = info.model_dump(mode="json", exclude_none=True) if info is not None else {}
        return list(listed.tools), described

    def _drop(self, spec: UpstreamSpec) -> None:
        connection = self._connections.pop(spec.name, None)
        if connection is not None:
            connection.stop.set()

    def run(self, coroutine: Any, timeout: float) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine, self._running_loop())
        try:
            return future.result(timeout=timeout)
        except FutureTimeout:
            future.cancel()
            raise UpstreamTimeout(f"no answer within {timeout:g}s") from None


def _protocol_answer(exc: Exception) -> bool:
    """An error the upstream answered with (a JSON-RPC error): the connection is fine."""
    return isinstance(exc, MCPError)


_pool = _Pool()


def upstream_call(
    upstream: MCPUpstream,
    tool: str,
    arguments: dict[str, Any],
    *,
    timeout: float,
    meta: dict[str, Any] | None = None,
) -> types.CallToolResult:
    """Call ``tool`` on ``upstream``. Raises UpstreamUnavailable, UpstreamTimeout, or the
    upstream's JSON-RPC error (MCPError). Over Streamable HTTP the call is sent from this thread
    (``upstream_http``) unless the upstream is one for the SDK's client."""
    spec = UpstreamSpec.of(upstream)
    if spec.transport == MCPUpstream.Transport.HTTP:
        session = lean_session(
            spec.name, spec, spec.url, dict(spec.headers), lambda: tools_changed(spec.name)
        )
        if session is not None:
            try:
                return session.call(tool, arguments, meta or {}, timeout)
            except NotLean as exc:  # nothing was sent for the call: the SDK's client sends it
                log.info("upstream %s: calls go through the SDK's client (%s)", spec.name, exc)
            except Timeout as exc:
                raise UpstreamTimeout(str(exc)) from None
            except Unavailable as exc:
                raise UpstreamUnavailable(str(exc)) from exc
    return _pool.run(_pool._call(spec, tool, arguments, meta or {}), timeout)


def upstream_tools(
    upstream: MCPUpstream, *, timeout: float = 30.0
) -> tuple[list[types.Tool], dict[str, Any]]:
    """The tools ``upstream`` offers now, and what it says about itself."""
    return _pool.run(_pool._tools(UpstreamSpec.of(upstream)), timeout)


# --- a changed tool list --------------------------------------------------------------------------

_stale: set[str] = set()
_relister: Callable[[str], Any] | None = None
_relisting = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-relist")


def relister_register(relist: Callable[[str], Any]) -> None:
    """What lists an upstream's tools again and records them (by the upstream's name)."""
    global _relister
    _relister = relist


def tools_changed(name: str) -> None:
    """The upstream said its tool list changed: stale here until listed again, and listed again
    in the background now."""
    _stale.add(name)
    if _relister is not None:
        _relisting.submit(_relist_in_background, name)


def _relist_in_background(name: str) -> None:
    try:
        if _relister is not None:
            _relister(name)
    except Exception:  # the next call lists it itself, and the periodic job does
        log.warning("upstream %s: listing its tools again failed", name, exc_info=True)
    finally:
        close_old_connections()


def upstream_stale(name: str) -> bool:
    """This process heard ``name`` change its tool list and has not recorded a listing since."""
    return name in _stale


def upstream_listed(name: str) -> None:
    """A listing of ``name`` was recorded: no longer stale here."""
    _stale.discard(name)


def upstream_current(upstream: MCPUpstream) -> MCPUpstream:
    """``upstream`` with a listing no older than its last change notice: as it is (the common
    case: a set lookup), or listed again now when this process heard of a change since, or it
    was never listed. Raises what reaching the upstream raises."""
    if upstream.name not in _stale and upstream.listed_at is not None:
        return upstream
    if _relister is None:
        return upstream
    fresh = _relister(upstream.name)
    return fresh if fresh is not None else upstream
