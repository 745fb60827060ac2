"""``a2a`` handlers: a registry tool that hands work to an external agent over A2A (seed 000 §2
Type 3, seed 002), with the official ``a2a-sdk`` client.

The call has been through the whole pipeline by now (schema, Guardian on the arguments,
directives, V-Pol, gate, audit, outbound PII filter). ``{"message": …}`` sends the message
(``SendMessage``; with ``task_id`` it continues that task); ``{"task_id": …}`` alone follows a
task up (``GetTask``). The outcome is the remote task as it stands: its id, state, the text of
its status message and artifacts. A task the agent failed, rejected or cancelled is a failed
call saying so; the remote agent's words are read by the Guardian as untrusted text. The card
is read from ``card_url`` (kept a few minutes per process); its security schemes are honoured
with the credentials ``credential_env`` names — a card that requires a scheme this deployment
has no credential for is refused before anything is sent.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid
from typing import Any

import httpx
from a2a.client import (
    A2ACardResolver,
    A2AClientError,
    A2AClientTimeoutError,
    AuthInterceptor,
    ClientCallContext,
    ClientConfig,
    ClientFactory,
    CredentialService,
)
from a2a.helpers.proto_helpers import get_artifact_text, get_message_text
from a2a.types import (
    AgentCard,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
)
from google.protobuf.struct_pb2 import Struct

from brainframe.models import Tool
from brainframe.safety.guardian.core import assess

from .base import HandlerFailure, HandlerTimeout

CARD_SECONDS = 300.0
FAILED_STATES = {
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_REJECTED: "rejected",
    TaskState.TASK_STATE_CANCELED: "cancelled",
}

_cards: dict[str, tuple[float, AgentCard]] = {}
_lock = threading.Lock()


def card_split(card_url: str) -> tuple[str, str]:
    """(base URL, path) of a card's address, as the SDK's resolver takes them."""
    scheme, _, rest = card_url.partition("://")
    host, _, path = rest.partition("/")
    return f"{scheme}://{host}", "/" + path


async def card_read(card_url: str, *, timeout: float = 10.0) -> AgentCard:
    base, path = card_split(card_url)
    async with httpx.AsyncClient(timeout=timeout) as http:
        return await A2ACardResolver(http, base, path).get_agent_card()


def _card(card_url: str, timeout: float) -> AgentCard:
    with _lock:
        kept = _cards.get(card_url)
    if kept is not None and time.monotonic() - kept[0] < CARD_SECONDS:
        return kept[1]
    card = asyncio.run(card_read(card_url, timeout=timeout))
    with _lock:
        _cards[card_url] = (time.monotonic(), card)
    return card


class _Credentials(CredentialService):
    """This deployment's credential for each of the card's schemes, from the environment."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    async def get_credentials(self, security_scheme_name: str, context: Any) -> str | None:
        name = self.names.get(security_scheme_name)
        return os.environ.get(name) or None if name else None


def missing_credentials(card: AgentCard, names: dict[str, str]) -> list[str]:
    """The schemes of the card's requirements none of which this deployment can meet (empty:
    a requirement can be met, or the card requires none)."""
    requirements = list(card.security_requirements)
    if not requirements:
        return []
    unmet: list[str] = []
    for requirement in requirements:
        lacking = [s for s in requirement.schemes if not os.environ.get(names.get(s, ""), "")]
        if not lacking:
            return []
        unmet += [s for s in lacking if s not in unmet]
    return unmet


def task_outcome(task: Task) -> dict[str, Any]:
    """The remote task as a call's output."""
    status_text = get_message_text(task.status.message) if task.status.HasField("message") else ""
    return {
        "task_id": task.id,
        "context_id": task.context_id,
        "state": TaskState.Name(task.status.state),
        "status_text": status_text,
        "artifacts": [{"name": a.name, "text": get_artifact_text(a)} for a in task.artifacts],
    }


async def _exchange(
    card: AgentCard, names: dict[str, str], arguments: dict[str, Any], call_id: uuid.UUID,
    timeout: float,
) -> dict[str, Any]:  # fmt: skip
    async with httpx.AsyncClient(timeout=timeout) as http:
        config = ClientConfig(streaming=False, httpx_client=http)
        client = ClientFactory(config).create(card, [AuthInterceptor(_Credentials(names))])
        context = ClientCallContext()
        try:
            message_text = arguments.get("message")
            task_id = arguments.get("task_id") or ""
            if message_text is None:
                task = await client.get_task(GetTaskRequest(id=task_id), context=context)
                return task_outcome(task)
            metadata = Struct()
            metadata.update({"rabs/call_id": str(call_id), "skill": arguments.get("skill", "")})
            message = Message(
                message_id=str(call_id),
                role=Role.ROLE_USER,
                parts=[Part(text=str(message_text))],
                metadata=metadata,
                task_id=task_id,
            )
            last: Any = None
            async for response in client.send_message(
                SendMessageRequest(message=message), context=context
            ):
                last = response
            if last is None:
                raise HandlerFailure("the agent answered nothing")
            if last.HasField("task"):
                return task_outcome(last.task)
            if last.HasField("message"):
                reply = last.message
                return {
                    "task_id": reply.task_id,
                    "context_id": reply.context_id,
                    "state": "MESSAGE",
                    "status_text": get_message_text(reply),
                    "artifacts": [],
                }
            raise HandlerFailure("the agent's answer was neither a task nor a message")
        finally:
            await client.close()


def run(*, tool: Tool, arguments: dict[str, Any], call_id: uuid.UUID, timeout: float) -> Any:
    config = tool.handler_config
    names = dict(config.get("credential_env") or {})
    try:
        card = _card(config["card_url"], timeout)
    except Exception as exc:
        raise HandlerFailure(f"the agent's card could not be read: {exc}") from exc
    unmet = missing_credentials(card, names)
    if unmet:
        raise HandlerFailure(
            f"the agent requires {', '.join(unmet)}: no credential for it here (credential_env)"
        )
    try:
        output = asyncio.run(_exchange(card, names, arguments, call_id, timeout))
    except A2AClientTimeoutError:
        raise HandlerTimeout(f"the agent did not answer within {timeout:g}s") from None
    except A2AClientError as exc:
        raise HandlerFailure(f"the agent refused or failed: {exc}") from exc
    except httpx.HTTPError as exc:
        raise HandlerFailure(f"the agent could not be reached: {exc}") from exc
    words = "\n".join([output["status_text"], *(a["text"] for a in output["artifacts"])])
    verdict = assess(words, "untrusted")
    if verdict.action == "block":
        raise HandlerFailure(
            "the agent's answer was withheld: the Guardian blocks it "
            f"({', '.join(verdict.patterns)})"
        )
    state = TaskState.Value(output["state"]) if output["state"] != "MESSAGE" else None
    if state in FAILED_STATES:
        raise HandlerFailure(
            f"the agent {FAILED_STATES[state]} task {output['task_id']}: "
            f"{output['status_text'][:1000] or 'no reason given'}"
        )
    return output
