"""The broker's MCP server (the official SDK's low-level ``Server``): tools/list, tools/call,
resources, for the agent the gateway authenticated on each HTTP request.

Handlers are thin: they take the agent from the request (never from the MCP session, so a
session id cannot carry one agent's identity into another's request), run the synchronous work of
``face`` on a worker thread, and shape the answer. A call that needs a reviewer is held open for
up to ``RABS_MCP_APPROVAL_WAIT_SECONDS``; a decision within that time is answered with its real
outcome.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import mcp_types as types
from django.conf import settings
from mcp.server import Server, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from brainframe.models import Agent
from brainframe.services.access.credentials import TokenRefused

from ..errors import BrokerRefusal
from ..services.loop import loop_traffic, yield_finished, yield_started
from . import face, holding, loop_tools, names, resources, results, sessions

#: The ASGI scope key under which the gateway leaves the request's ``face.Caller``.
AGENT_SCOPE_KEY = "rabs.agent"
NOT_AUTHENTICATED = -32001
INVALID_REQUEST = -32600
POLL_SECONDS = 0.25
YIELD_POLL_SECONDS = 0.5

_threads = ThreadPoolExecutor(max_workers=settings.RABS_MCP_THREADS, thread_name_prefix="mcp")


async def _run(fn: Any, *args: Any) -> Any:
    try:
        return await asyncio.get_running_loop().run_in_executor(_threads, fn, *args)
    except TokenRefused as refused:  # the gateway turns this answer into its 401
        raise MCPError(NOT_AUTHENTICATED, refused.detail) from None


def _caller(ctx: ServerRequestContext[Any, Any]) -> face.Caller:
    request = ctx.request
    caller = getattr(request, "scope", {}).get(AGENT_SCOPE_KEY) if request is not None else None
    if not isinstance(caller, face.Caller):  # the gateway admits nothing unauthenticated
        raise MCPError(NOT_AUTHENTICATED, "not authenticated")
    return caller


async def _agent(ctx: ServerRequestContext[Any, Any]) -> Agent:
    """The caller's agent as read for this request (on a worker thread if it must be read)."""
    caller = _caller(ctx)
    if caller.bearer.remembered:
        return await _run(face.on_worker_thread(caller.agent))
    return caller.bearer.agent


async def list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    tools = await _run(face.tools_list, await _agent(ctx))
    try:
        shown, after = names.page(
            tools, params.cursor if params else None, settings.RABS_MCP_TOOLS_PAGE_SIZE
        )
    except names.BadCursor:
        raise MCPError(face.INVALID_PARAMS, "Invalid cursor") from None
    return types.ListToolsResult(tools=shown, next_cursor=after)


async def _wait(
    agent: Agent,
    approval_id: str,
    seconds: float,
    progress: Callable[[float], Awaitable[None]] | None = None,
) -> face.CallAnswer | None:
    """The call's answer once a reviewer's decision has run its course, or its last state when
    ``seconds`` pass first. ``progress``: told the seconds waited so far, every
    ``RABS_MCP_PROGRESS_SECONDS`` (the client asked for progress: its timeout may restart on
    each)."""
    start = time.monotonic()
    deadline = start + seconds
    every = float(settings.RABS_MCP_PROGRESS_SECONDS)
    told = start
    while True:
        answer = await _run(face.approval_answer, agent, approval_id)
        now = time.monotonic()
        if answer is None or face.settled(answer) or now >= deadline:
            return answer
        if progress is not None and now - told >= every:
            told = now
            await progress(now - start)
        await asyncio.sleep(min(POLL_SECONDS, max(0.0, deadline - now)))


async def call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    started = time.monotonic()  # a hold counts from here: the client's timeout does
    caller = _caller(ctx)
    arguments = params.arguments or {}
    builtin = face.BUILTINS.resolve(params.name)
    if builtin in face.FOLLOW_UP_NAMES:
        return await _follow_up(ctx, await _agent(ctx), builtin, arguments, started)
    if builtin == loop_tools.YIELD_TURN:
        return await _yield(await _agent(ctx), arguments)
    if builtin in loop_tools.NAMES:
        return await _run(loop_tools.call, await _agent(ctx), builtin, arguments)
    meta: dict[str, Any] = dict(params.meta) if params.meta else {}
    token = meta.pop("progress_token", None)
    return await registry_call(
        caller,
        params.name,
        arguments,
        meta,
        started=started,
        ctx=ctx if token is not None else None,
        session_id=_session_id(ctx),
    )


async def registry_call(
    caller: face.Caller,
    name: str,
    arguments: dict[str, Any],
    meta: dict[str, Any],
    *,
    started: float,
    ctx: ServerRequestContext[Any, Any] | None = None,
    session_id: str | None = None,
) -> types.CallToolResult:
    """A call of a registry tool: decided, held for a reviewer while the client's patience
    allows, answered. ``ctx``: the request asked for progress (its stream carries it)."""
    try:
        hold = holding.hold_seconds(meta, progress=ctx is not None)
        submitted = await _run(face.tools_call, caller, name, arguments, meta)
    except face.UnknownTool:
        raise MCPError(face.INVALID_PARAMS, f"Unknown tool: {name}") from None
    except BrokerRefusal as refusal:
        return results.refusal_result(refusal)
    answer = submitted.answer
    if submitted.approval_id is not None and not face.settled(answer):
        agent = caller.bearer.agent  # as the decision's statement checked it, or read anew
        # Told on this request's own stream when it is one (it asked for progress) and the
        # client has no session: a session's stream tells of the agent's approvals itself.
        told = ctx is not None and session_id is None
        if told and ctx is not None:
            await holding.log(ctx, "notice", holding.held_message(answer, name, hold))
        progress = None
        if ctx is not None:
            request_ctx, approval_id = ctx, submitted.approval_id

            async def progress(waited: float) -> None:
                await request_ctx.session.report_progress(
                    waited, hold, f"waiting for a reviewer (approval {approval_id})"
                )

        left = max(0.0, hold - (time.monotonic() - started))
        waited = await _wait(agent, submitted.approval_id, left, progress)
        answer = waited or answer
        if told and ctx is not None and face.settled(answer):
            await holding.log(ctx, *holding.settled_message(answer, name))
    return face.tool_result(answer)


async def _yield(agent: Agent, arguments: dict[str, Any]) -> types.CallToolResult:
    """``loop.yield_turn``: sleep (on this event loop, no thread held) until new traffic for the
    agent or the timeout; a turn boundary either way."""
    ceiling = float(settings.RABS_LOOP_YIELD_MAX_SECONDS)
    timeout = arguments.get("timeout_s", ceiling)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0:
        return results.refusal_result(
            BrokerRefusal(400, "invalid_arguments", "timeout_s is a number of seconds",
                          field="timeout_s")
        )  # fmt: skip
    since = yield_started(agent.agent_id)
    deadline = time.monotonic() + min(float(timeout), ceiling)
    while True:
        look = partial(loop_traffic, agent_id=agent.agent_id, since=since)
        traffic = await _run(face.on_worker_thread(look))
        if traffic or time.monotonic() >= deadline:
            break
        await asyncio.sleep(min(YIELD_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
    done = partial(yield_finished, agent.agent_id, since=since, traffic=traffic)
    await _run(face.on_worker_thread(done))
    body = {"woke": bool(traffic), "traffic": traffic}
    return types.CallToolResult(
        content=[types.TextContent(text=results.json_text(body))], structured_content=body
    )


async def _follow_up(
    ctx: ServerRequestContext[Any, Any],
    agent: Agent,
    name: str,
    arguments: dict[str, Any],
    started: float,
) -> types.CallToolResult:
    """``rabs_approval_status``, and ``rabs_approval_wait``: by default as long as a call is
    held (the client's patience: short without a progressToken), else ``timeout_s``."""
    approval_id = arguments.get("approval_id")
    asked_progress = bool(ctx.meta and ctx.meta.get("progress_token") is not None)
    timeout = arguments.get("timeout_s")
    if timeout is None:
        timeout = holding.hold_seconds({}, progress=asked_progress)
    if not isinstance(approval_id, str) or (
        name == face.APPROVAL_WAIT
        and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 <= timeout <= face.MAX_WAIT_SECONDS
        )
    ):
        return results.refusal_result(
            BrokerRefusal(
                400,
                "invalid_arguments",
                f"approval_id (a UUID) is required; timeout_s is 0-{face.MAX_WAIT_SECONDS:g}",
            )
        )
    if name == face.APPROVAL_WAIT:

        async def progress(waited: float) -> None:
            await ctx.session.report_progress(
                waited, float(timeout), f"waiting for a reviewer (approval {approval_id})"
            )

        left = max(0.0, float(timeout) - (time.monotonic() - started))
        answer = await _wait(agent, approval_id, left, progress if asked_progress else None)
    else:
        answer = await _run(face.approval_answer, agent, approval_id)
    if answer is None:
        return results.refusal_result(
            BrokerRefusal(404, "unknown_approval", "no such approval of yours")
        )
    return face.tool_result(answer)


async def list_resources(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    await _agent(ctx)
    return types.ListResourcesResult(resources=resources.resources_list())


async def list_resource_templates(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    await _agent(ctx)
    return types.ListResourceTemplatesResult(resource_templates=resources.resource_templates())


async def read_resource(
    ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    agent, uri = await _agent(ctx), str(params.uri)
    try:
        mime, text = await _run(resources.resource_read, agent, uri)
    except resources.UnknownResource:
        raise MCPError(face.RESOURCE_NOT_FOUND, f"Resource not found: {uri}") from None
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)]
    )


def _session_id(ctx: ServerRequestContext[Any, Any]) -> str | None:
    request = ctx.request
    found = getattr(request, "scope", {}).get(holding.SESSION_SCOPE_KEY) if request else None
    return found if isinstance(found, str) else None


async def _session(ctx: ServerRequestContext[Any, Any], agent: Agent) -> sessions.Session | None:
    session_id = _session_id(ctx)
    if session_id is None:
        return None
    return await _run(_session_read, session_id, agent.agent_id)


def _session_read(session_id: str, agent_id: str) -> sessions.Session | None:
    return sessions.session_read(session_id=session_id, agent_id=agent_id)


async def _own_session(ctx: ServerRequestContext[Any, Any]) -> sessions.Session:
    session = await _session(ctx, await _agent(ctx))
    if session is None:
        raise MCPError(
            INVALID_REQUEST,
            "this needs a session: send the Mcp-Session-Id header initialize answered with",
        )
    return session


async def set_logging_level(
    ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
) -> types.EmptyResult:
    """The lowest level of the ``notifications/message`` entries this session receives."""
    session = await _session(ctx, await _agent(ctx))
    if session is not None:
        await _run(_set_level, session, str(params.level))
    return types.EmptyResult()


def _set_level(session: sessions.Session, level: str) -> None:
    sessions.session_set_level(session=session, level=level)


async def subscribe_resource(
    ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
) -> types.EmptyResult:
    """``rabs://approvals`` and ``rabs://calls/{call_id}`` (the agent's own) can be subscribed
    to: ``notifications/resources/updated`` on the session's stream when they change."""
    uri = str(params.uri)
    session = await _own_session(ctx)
    if uri != "rabs://approvals":
        try:
            await _run(resources.resource_read, await _agent(ctx), uri)
        except resources.UnknownResource:
            raise MCPError(face.RESOURCE_NOT_FOUND, f"Resource not found: {uri}") from None
        if not uri.startswith("rabs://calls/"):
            raise MCPError(face.INVALID_PARAMS, f"Not a resource that changes: {uri}")
    await _run(_subscribe, session, uri, True)
    return types.EmptyResult()


async def unsubscribe_resource(
    ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
) -> types.EmptyResult:
    session = await _own_session(ctx)
    await _run(_subscribe, session, str(params.uri), False)
    return types.EmptyResult()


def _subscribe(session: sessions.Session, uri: str, subscribed: bool) -> None:
    sessions.session_subscribe(session=session, uri=uri, subscribed=subscribed)


class _Server(Server[Any]):
    def create_initialization_options(self, *args: Any, **kwargs: Any) -> Any:
        """Announces ``tools.listChanged`` (sent on the session's stream)."""
        if not args and "notification_options" not in kwargs:
            kwargs["notification_options"] = NotificationOptions(tools_changed=True)
        return super().create_initialization_options(*args, **kwargs)


def build_server() -> Server[Any]:
    with warnings.catch_warnings():  # logging is deprecated in 2026-07-28, current before it
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return _build_server()


def _build_server() -> Server[Any]:
    return _Server(
        "rabs-brainframe",
        version="1",
        title="RABS Brainframe tools broker",
        instructions=(
            "Every tool call is validated, decided (run now, wait for a human reviewer, or "
            "deny) and audited. Say why you call a tool in _meta['rabs/reason']. A call waiting "
            "for a reviewer answers with an approval_id: follow it with rabs_approval_wait."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe_resource,
        on_unsubscribe_resource=unsubscribe_resource,
        on_set_logging_level=set_logging_level,
    )
