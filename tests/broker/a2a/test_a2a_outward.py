"""Type 3 outward: RABS hands work to an external agent over A2A. The agent is a server built
in the test with ``a2a-sdk``'s own server classes (its card with a skill and a bearer security
scheme, a request handler, a task store, an executor), served over real HTTP; the broker reaches
it with the SDK's client through a registry tool of handler type ``a2a``, audited like any."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from a2a.helpers.proto_helpers import new_task, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    Part,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    TaskState,
)
from django.core.management import call_command
from django.core.management.base import CommandError
from starlette.applications import Starlette
from starlette.responses import JSONResponse

from brainframe.models import Tool, ToolCall
from brainframe.services.registry.tools import tool_set_enabled
from rabs.stack.devstack import free_port
from tests.signing import SignedClient

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SECRET = "acme-a2a-secret"


class Scheduler(AgentExecutor):
    """Books what it is asked to; asks back when the message says "which day"."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        metadata = dict(context.message.metadata) if context.message else {}
        self.seen.append((text, metadata))
        assert context.task_id and context.context_id
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if context.current_task is None:
            await event_queue.enqueue_event(
                new_task(context.task_id, context.context_id, TaskState.TASK_STATE_SUBMITTED)
            )
        await updater.start_work()
        if "which day" in text:
            await updater.requires_input(
                new_text_message("Which day?", context.context_id, context.task_id)
            )
            return
        await updater.add_artifact([Part(text=f"booked: {text}")], name="booking")
        await updater.complete(new_text_message("Done.", context.context_id, context.task_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def _card(base: str) -> AgentCard:
    return AgentCard(
        name="Acme scheduler",
        description="Books community transport.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"{base}/a2a", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=False, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="book_van",
                name="Book a van",
                description="Books an accessible van for a date",
                tags=["transport"],
            )
        ],
        security_schemes={
            "acmeBearer": SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="bearer")
            )
        },
        security_requirements=[SecurityRequirement(schemes={"acmeBearer": StringList(list=[])})],
    )


@pytest.fixture
def acme() -> Iterator[dict[str, Any]]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    card = _card(base)
    executor = Scheduler()
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(
        routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/a2a")]
    )
    authorized: list[str] = []

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        """The card is public; the endpoint wants the bearer token the card's scheme names."""
        if scope["type"] == "http" and scope["path"] == "/a2a":
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {SECRET}".encode():
                await JSONResponse({"error": "unauthorized"}, status_code=401)(scope, receive, send)
                return
            authorized.append(scope["path"])
        await app(scope, receive, send)

    server = uvicorn.Server(uvicorn.Config(guarded, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield {
        "card_url": f"{base}/.well-known/agent-card.json",
        "executor": executor,
        "authorized": authorized,
    }
    server.should_exit = True
    thread.join(10)


def _call(henry: SignedClient, arguments: dict[str, Any]) -> dict[str, Any]:
    response = henry.post(
        "/api/v1/tool-calls/",
        {"tool_id": "a2a.acme", "arguments": arguments, "reason": "book the outing's van"},
    )
    body: dict[str, Any] = response.json()
    return body


def test_work_handed_to_an_external_agent_is_audited_and_followed_up(
    henry: SignedClient, acme: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its card requires a bearer credential: registering without one is refused.
    with pytest.raises(CommandError, match="acmeBearer"):
        call_command("a2a_agent", "acme", acme["card_url"])
    call_command("a2a_agent", "acme", acme["card_url"], "--credential", "acmeBearer=ACME_TOKEN")
    tool = Tool.objects.get(pk="a2a.acme")
    assert not tool.enabled and tool.handler_type == "a2a"
    assert "book_van: Book a van" in tool.description
    assert tool.handler_config["skills"][0]["id"] == "book_van"
    assert tool.input_schema["properties"]["skill"]["enum"] == ["book_van"]
    tool_set_enabled(tools=[tool], enabled=True)
    Tool.objects.filter(pk="a2a.acme").update(agent_access=["henry"], execution_mode="auto")

    # The credential is not in the environment: nothing is sent, the call fails saying why.
    monkeypatch.delenv("ACME_TOKEN", raising=False)
    refused = _call(henry, {"message": "a van on Monday", "skill": "book_van"})
    assert refused["outcome"] == "failed" and "acmeBearer" in refused["error"]
    assert acme["authorized"] == []

    monkeypatch.setenv("ACME_TOKEN", SECRET)
    booked = _call(henry, {"message": "a van on Monday for P-1042", "skill": "book_van"})
    assert booked["outcome"] == "succeeded", booked
    result = booked["result"]
    assert result["state"] == "TASK_STATE_COMPLETED" and result["status_text"] == "Done."
    assert result["artifacts"] == [
        {"name": "booking", "text": "booked: a van on Monday for P-1042"}
    ]
    _, metadata = acme["executor"].seen[-1]
    assert metadata["skill"] == "book_van" and metadata["rabs/call_id"] == booked["call_id"]
    call = ToolCall.objects.get(pk=booked["call_id"])
    assert call.requested_tool_id == "a2a.acme" and call.output["task_id"] == result["task_id"]

    # A task that waits for input: its state is the outcome; GetTask follows it up, and a
    # message continues it.
    asked = _call(henry, {"message": "a van, which day suits?"})["result"]
    assert asked["state"] == "TASK_STATE_INPUT_REQUIRED" and asked["status_text"] == "Which day?"
    followed = _call(henry, {"task_id": asked["task_id"]})["result"]
    assert followed["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert followed["task_id"] == asked["task_id"]
    done = _call(henry, {"task_id": asked["task_id"], "message": "Tuesday"})["result"]
    assert done["state"] == "TASK_STATE_COMPLETED" and done["task_id"] == asked["task_id"]
    assert ToolCall.objects.filter(requested_tool_id="a2a.acme", agent_id="henry").count() == 5
