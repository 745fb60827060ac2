"""What the A2A face does, in plain synchronous functions: the agent cards, and handing a task to
one of our agents (``SendMessage``), reading it back (``GetTask``), cancelling it (``CancelTask``).

An A2A caller is a Type 3 (external) agent of the registry, identified by its bearer token. Its
message becomes an inbound event: an O-Tag whose origin is the A2A message, the text assessed by
the Guardian as untrusted, and, unless blocked, an ``AgentTask`` for the agent the message names
(``metadata["rabs/assign_to"]``, else the first Type 2 agent). States map back to A2A's:
To Do → submitted, In Progress → working, waiting for a reviewer → input required, Done →
completed, Failed → failed (rejected when a reviewer or the broker refused a call of it),
Cancelled → canceled; a message the Guardian blocks → rejected.
"""

from __future__ import annotations

import uuid
from typing import Any

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    Message,
    Part,
    Role,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    Task,
    TaskState,
    TaskStatus,
)
from django.conf import settings
from django.db import close_old_connections
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Struct

from brainframe.models import (
    Agent,
    AgentTask,
    ApprovalRequest,
    OriginRegistry,
    ToolCall,
    WebhookSubscription,
)
from brainframe.services.eventlog.webhooks import webhook_subscribe
from brainframe.services.ledger.inbound import InboundRefusal, inbound_event_record
from brainframe.services.work.tasks import task_announce

VERSION = "1.0"
ASSIGN_KEY = "rabs/assign_to"
A2A_PATH = "/a2a"


class A2ARefusal(Exception):
    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code, self.detail = code, detail


def on_worker_thread(fn: Any) -> Any:
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        finally:
            close_old_connections()

    return run


def _base_url() -> str:
    return str(settings.RABS_PUBLIC_URL).rstrip("/")


def _security() -> tuple[dict[str, SecurityScheme], list[SecurityRequirement]]:
    schemes = {
        "bearer": SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(
                scheme="bearer",
                description="An agent token: manage.py agent_key <agent_id> --mcp",
            )
        )
    }
    return schemes, [SecurityRequirement(schemes={"bearer": StringList(list=[])})]


@on_worker_thread
def control_plane_card() -> AgentCard:
    """What the control plane offers other agents: handing a task to one of ours."""
    schemes, requirements = _security()
    workers = Agent.objects.filter(type=Agent.Type.SANDBOXED).order_by("name")
    return AgentCard(
        name="RABS Brainframe",
        description=(
            "The control plane of a business's agents. Hand a task to one of them; every "
            "action it takes goes through the tools broker (validated, decided, audited)."
        ),
        version=VERSION,
        supported_interfaces=[
            AgentInterface(
                url=f"{_base_url()}{A2A_PATH}", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=[
            AgentSkill(
                id=f"task.{agent.agent_id}",
                name=f"Give {agent.name} a task",
                description=f"{agent.name} ({agent.role or 'agent'}) takes the message as a "
                f"task. Name it with metadata {ASSIGN_KEY!r}: {agent.agent_id!r}.",
                tags=["task", agent.role or "agent"],
            )
            for agent in workers
        ],
        security_schemes=schemes,
        security_requirements=requirements,
    )


@on_worker_thread
def external_agent_card(agent_id: str) -> AgentCard | None:
    """A card describing one of the registry's Type 3 (external) agents."""
    agent = Agent.objects.filter(pk=agent_id, type=Agent.Type.EXTERNAL).first()
    if agent is None:
        return None
    schemes, requirements = _security()
    platform = (agent.config or {}).get("platform", "an external platform")
    return AgentCard(
        name=agent.name,
        description=f"{agent.role or 'External agent'}, on {platform}. It reaches the business "
        "only through RABS Brainframe's broker, under its own identity.",
        version=VERSION,
        supported_interfaces=[
            AgentInterface(
                url=f"{_base_url()}{A2A_PATH}", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        capabilities=AgentCapabilities(streaming=False, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id=f"agent.{agent.agent_id}",
                name=agent.name,
                description=agent.role or agent.name,
                tags=["external", str(platform)],
            )
        ],
        security_schemes=schemes,
        security_requirements=requirements,
    )


def _text(message: Message) -> str:
    return "\n".join(part.text for part in message.parts if part.text)


def _metadata(message: Message) -> dict[str, Any]:
    return MessageToDict(message.metadata) if message.HasField("metadata") else {}


def _first_worker() -> Agent | None:
    return Agent.objects.filter(type=Agent.Type.SANDBOXED).order_by("name").first()


@on_worker_thread
def send_message(caller: Agent, message: Message) -> Task:
    """Hand the message to one of our agents as a task (idempotent on the message id)."""
    text = _text(message)
    if not text.strip():
        raise A2ARefusal("invalid_params", "the message has no text part")
    assignee = _metadata(message).get(ASSIGN_KEY)
    if not assignee:
        first = _first_worker()
        if first is None:
            raise A2ARefusal("no_agent", "no agent here takes tasks")
        assignee = first.agent_id
    try:
        result = inbound_event_record(
            agent=caller,
            trust="untrusted",  # another organisation's agent wrote it
            event={
                "event_id": message.message_id or str(uuid.uuid4()),
                "event_type": "a2a.message",
                "platform": "a2a",
                "origin_type": OriginRegistry.OriginType.A2A,
                "source_ref": f"a2a:{caller.agent_id}:{message.message_id}",
                "text": text,
                "metadata": {"context_id": message.context_id} if message.context_id else {},
                "task": {
                    "title": text.splitlines()[0][:200],
                    "assign_to": str(assignee),
                    "payload": {"query": text, "channel": "a2a"},
                },
            },
        )
    except InboundRefusal as refused:
        raise A2ARefusal(refused.code, refused.detail) from refused
    if result.task is None:  # the Guardian blocked the message: no task was made
        return Task(
            id=str(result.origin.id),
            context_id=str(result.origin.id),
            status=TaskStatus(
                state=TaskState.TASK_STATE_REJECTED,
                message=_agent_message("Refused: the message was blocked by the threat check."),
            ),
        )
    return _task(result.task)


def _agent_message(text: str) -> Message:
    return Message(message_id=str(uuid.uuid4()), role=Role.ROLE_AGENT, parts=[Part(text=text)])


def _state(task: AgentTask) -> tuple[Any, str]:
    status = AgentTask.Status
    if task.status == status.CANCELLED:
        return TaskState.TASK_STATE_CANCELED, "cancelled"
    if task.status == status.DONE:
        return TaskState.TASK_STATE_COMPLETED, "done"
    waiting = ApprovalRequest.objects.filter(
        task=task, status__in=[ApprovalRequest.Status.PENDING, ApprovalRequest.Status.ESCALATED]
    ).exists()
    if waiting or task.status == status.REVIEW:
        return TaskState.TASK_STATE_INPUT_REQUIRED, "waiting for a human reviewer"
    if task.status == status.FAILED:
        refused = ToolCall.objects.filter(task=task, decision=ToolCall.Decision.DENIED).exists()
        refused = (
            refused
            or ApprovalRequest.objects.filter(
                task=task, status=ApprovalRequest.Status.REJECTED
            ).exists()
        )
        state = TaskState.TASK_STATE_REJECTED if refused else TaskState.TASK_STATE_FAILED
        return state, task.failure_reason or "failed"
    if task.status == status.IN_PROGRESS:
        return TaskState.TASK_STATE_WORKING, "working on it"
    return TaskState.TASK_STATE_SUBMITTED, "queued"


def _task(task: AgentTask) -> Task:
    state, said = _state(task)
    data = Struct()
    data.update({"agent": task.agent_id, "rabs_status": task.status})
    if isinstance(task.result, dict):
        data.update({"result": task.result})
    return Task(
        id=str(task.task_id),
        context_id=str(task.o_tag_id),
        status=TaskStatus(state=state, message=_agent_message(said)),
        metadata=data,
    )


def a2a_task(task: AgentTask) -> Task:
    """A task of ours as A2A shows it (its state mapped, what our agent said)."""
    return _task(task)


def a2a_push_payload(subscription: WebhookSubscription) -> dict[str, Any]:
    """An A2A push notification: the task as it stands now (a StreamResponse's ``task``)."""
    task = AgentTask.objects.get(push_subscriptions=subscription)
    return {"task": MessageToDict(_task(task))}


def _own_task(caller: Agent, task_id: str) -> AgentTask | None:
    try:
        pk = uuid.UUID(task_id)
    except ValueError:
        return None
    return (
        AgentTask.objects.filter(pk=pk, o_tag__registered_by=caller).select_related("o_tag").first()
    )


@on_worker_thread
def get_task(caller: Agent, task_id: str) -> Task | None:
    """One of the tasks the caller handed over (None: not one of its)."""
    task = _own_task(caller, task_id)
    return _task(task) if task is not None else None


@on_worker_thread
def push_subscribe(caller: Agent, task_id: str, url: str, token: str) -> str | None:
    """Push notifications of one of the caller's tasks to ``url`` (a signed webhook on each
    change of its state); the subscription's id, or None: not one of its tasks."""
    task = _own_task(caller, task_id)
    if task is None:
        return None
    try:
        subscription, _ = webhook_subscribe(agent=caller, url=url, task=task, token=token)
    except ValueError as exc:
        raise A2ARefusal("invalid_params", str(exc)) from exc
    return str(subscription.pk)


@on_worker_thread
def cancel_task(caller: Agent, task_id: str) -> Task | None:
    """Cancel a task the caller handed over, unless it has finished."""
    task = _own_task(caller, task_id)
    if task is None:
        return None
    finished = (AgentTask.Status.DONE, AgentTask.Status.FAILED, AgentTask.Status.CANCELLED)
    if task.status in finished:
        raise A2ARefusal("not_cancelable", f"the task is already {task.status}")
    AgentTask.objects.filter(pk=task.pk).exclude(status__in=finished).update(
        status=AgentTask.Status.CANCELLED, failure_reason="cancelled by the A2A caller"
    )
    task.refresh_from_db()
    task_announce(task)
    return _task(task)
