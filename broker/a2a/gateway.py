"""The A2A face as an ASGI app (the official ``a2a-sdk``): the agent cards, public, and the
JSON-RPC endpoint (``SendMessage``, ``GetTask``, ``CancelTask``) for callers with a bearer token
of one of the registry's Type 3 (external) agents."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_routes import create_jsonrpc_routes
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    SendMessageRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from a2a.utils.errors import (
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from brainframe.models import Agent
from brainframe.services.access.credentials import TokenRefused, agent_token_authenticate

from . import face

AGENT_SCOPE_KEY = "rabs.agent"
#: How long a SendStreamingMessage stream follows its task, and how often it looks.
STREAM_SECONDS = 120.0
STREAM_POLL_SECONDS = 0.5
#: States after which a stream ends: the task ended, or waits on someone.
STREAM_ENDS = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
        TaskState.TASK_STATE_INPUT_REQUIRED,
        TaskState.TASK_STATE_AUTH_REQUIRED,
    }
)
_threads = ThreadPoolExecutor(max_workers=2, thread_name_prefix="a2a")


async def _run(fn: Any, *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(_threads, fn, *args)


def _caller(context: ServerCallContext) -> Agent:
    agent = context.state.get(AGENT_SCOPE_KEY)
    if not isinstance(agent, Agent):
        raise InvalidParamsError(message="not authenticated")
    return agent


class BrokerRequestHandler(RequestHandler):
    """A2A methods over the broker's task inbox; what A2A has and this product does not
    (listing tasks or push configurations, resubscribing) is unsupported."""

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task:
        try:
            task: Task = await _run(face.send_message, _caller(context), params.message)
        except face.A2ARefusal as refused:
            raise InvalidParamsError(message=f"{refused.code}: {refused.detail}") from refused
        return task

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        task: Task | None = await _run(face.get_task, _caller(context), params.id)
        if task is None:
            raise TaskNotFoundError
        return task

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        try:
            task: Task | None = await _run(face.cancel_task, _caller(context), params.id)
        except face.A2ARefusal as refused:
            raise TaskNotCancelableError(message=refused.detail) from refused
        if task is None:
            raise TaskNotFoundError
        return task

    async def on_list_tasks(self, params: Any, context: ServerCallContext) -> Any:
        raise UnsupportedOperationError

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Any]:
        """``SendStreamingMessage``: the task as made, then each change of its state until it
        ends, stops for a reviewer or a decision, or ``STREAM_SECONDS`` pass (``GetTask`` then
        follows it)."""
        caller = _caller(context)
        task = await self.on_message_send(params, context)
        yield task
        deadline = time.monotonic() + STREAM_SECONDS
        state = task.status.state
        while state not in STREAM_ENDS and time.monotonic() < deadline:
            await asyncio.sleep(STREAM_POLL_SECONDS)
            now: Task | None = await _run(face.get_task, caller, task.id)
            if now is None:
                return
            if now.status.state != state:
                state = now.status.state
                yield TaskStatusUpdateEvent(
                    task_id=now.id, context_id=now.context_id, status=now.status
                )

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Push notifications of a task the caller handed us: a signed webhook to its URL on
        each change of the task's state (``brainframe/services/eventlog/webhooks.py``)."""
        try:
            made = await _run(
                face.push_subscribe, _caller(context), params.task_id, params.url, params.token
            )
        except face.A2ARefusal as refused:
            raise InvalidParamsError(message=f"{refused.code}: {refused.detail}") from refused
        if made is None:
            raise TaskNotFoundError
        answer = TaskPushNotificationConfig()
        answer.CopyFrom(params)
        answer.id = made
        return answer

    async def on_get_task_push_notification_config(
        self, params: Any, context: ServerCallContext
    ) -> Any:
        raise UnsupportedOperationError

    async def on_subscribe_to_task(
        self, params: Any, context: ServerCallContext
    ) -> AsyncGenerator[Any]:
        raise UnsupportedOperationError
        yield

    async def on_list_task_push_notification_configs(
        self, params: Any, context: ServerCallContext
    ) -> Any:
        raise UnsupportedOperationError

    async def on_delete_task_push_notification_config(
        self, params: Any, context: ServerCallContext
    ) -> Any:
        raise UnsupportedOperationError

    async def on_get_extended_agent_card(self, params: Any, context: ServerCallContext) -> Any:
        raise UnsupportedOperationError


class _Context(DefaultServerCallContextBuilder):
    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[AGENT_SCOPE_KEY] = request.scope.get(AGENT_SCOPE_KEY)
        return context


def _card(card: AgentCard | None) -> Response:
    if card is None:
        return JSONResponse({"code": "not_found", "detail": "no such agent card"}, status_code=404)
    return JSONResponse(agent_card_to_dict(card))


async def control_plane_card(request: Request) -> Response:
    return _card(await _run(face.control_plane_card))


async def external_agent_card(request: Request) -> Response:
    return _card(await _run(face.external_agent_card, request.path_params["agent_id"]))


def _authenticate(token: str) -> Agent:
    try:
        return agent_token_authenticate(token=token)
    finally:
        close_old_connections()


class A2AGateway:
    """The cards (public) and the JSON-RPC endpoint (bearer token of an external agent)."""

    def __init__(self) -> None:
        self.app = Starlette(
            routes=[
                Route(AGENT_CARD_WELL_KNOWN_PATH, control_plane_card, methods=["GET"]),
                Route(
                    f"{face.A2A_PATH}/agents/{{agent_id}}/agent-card.json",
                    external_agent_card,
                    methods=["GET"],
                ),
                *create_jsonrpc_routes(
                    BrokerRequestHandler(), face.A2A_PATH, context_builder=_Context()
                ),
            ]
        )

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = {k.decode("latin1").lower(): v.decode("latin1") for k, v in scope["headers"]}
        domain, _port = split_domain_port(headers.get("host", ""))
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            await _send(send, 400, {"code": "bad_host", "detail": "host not allowed"})
            return
        if scope["method"] == "POST":
            scheme, _, token = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                await _send(send, 401, {"code": "auth_missing", "detail": "a bearer token"})
                return
            try:
                agent = await _run(_authenticate, token.strip())
            except TokenRefused as refused:
                await _send(send, 401, {"code": refused.code, "detail": refused.detail})
                return
            if agent.type != Agent.Type.EXTERNAL:
                await _send(
                    send,
                    403,
                    {"code": "external_agents_only", "detail": "A2A is for Type 3 agents"},
                )
                return
            scope = {**scope, AGENT_SCOPE_KEY: agent}
        await self.app(scope, receive, send)


async def _send(send: Any, status: int, body: dict[str, Any]) -> None:
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json")]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="rabs"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def serves(path: str) -> bool:
    """Whether ``path`` belongs to the A2A face."""
    return (
        path == AGENT_CARD_WELL_KNOWN_PATH
        or path == face.A2A_PATH
        or path.startswith(f"{face.A2A_PATH}/")
    )
