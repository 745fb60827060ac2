"""The agent API (``/api/v1/``). Views translate HTTP to service calls and back."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import FileResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers as drf_serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brainframe.choices import ContextBucket
from brainframe.events import AgentStatusChanged, Heartbeat, emit, publish
from brainframe.models import Agent, AgentTask, Deliverable, ToolCall
from brainframe.queue import RECORD_OBSERVATION, enqueue
from brainframe.selectors import tools_for_agent
from brainframe.services.access.held import reading_principals
from brainframe.services.access.sharing import deliverable_read
from brainframe.services.hooks.lifecycle import (
    hook_messages_take,
)
from brainframe.services.ledger.inbound import InboundRefusal, inbound_event_record
from brainframe.services.llm.usage import usage_dict, usage_record
from brainframe.services.memory.context import agent_context
from brainframe.services.memory.observations import observation_record
from brainframe.services.work import tasks as task_services
from brainframe.services.work.deliverables import deliverable_store

from ..errors import BrokerRefusal
from ..pipeline.context import CallRequest
from ..services.calls import call_answer, tool_call_submit
from . import serializers as s
from .authentication import AgentSignatureAuthentication
from .fast import tool_call_fast
from .throttling import AgentRateThrottle


class AgentAPIView(APIView):
    """Base for agent endpoints: RABS-HMAC signed requests only."""

    authentication_classes = [AgentSignatureAuthentication]
    permission_classes = [IsAuthenticated]
    throttle_classes = [AgentRateThrottle]
    max_body_bytes = settings.RABS_MAX_BODY_BYTES
    #: Query parameters this endpoint reads; any other is refused, naming it.
    query_parameters: frozenset[str] = frozenset()

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        unknown = sorted(set(request.query_params) - self.query_parameters)
        if unknown:
            raise BrokerRefusal(400, "invalid_request", "unknown query parameter", field=unknown[0])

    @staticmethod
    def uuid_param(request: Request, name: str) -> uuid.UUID | None:
        value = request.query_params.get(name)
        if value is None:
            return None
        try:
            return uuid.UUID(value)
        except ValueError:
            raise BrokerRefusal(
                400, "invalid_request", f"{name} must be a UUID", field=name
            ) from None

    def agent(self, request: Request) -> Agent:
        agent = request.auth
        assert isinstance(agent, Agent)
        return agent

    def valid(self, serializer_class: type[drf_serializers.Serializer], data: Any) -> Any:
        if not isinstance(data, dict):
            raise BrokerRefusal(400, "invalid_request", "the body must be a JSON object")
        serializer = serializer_class(data=data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def own_task(self, request: Request, task_id: Any) -> AgentTask:
        task = AgentTask.objects.filter(pk=task_id, agent=self.agent(request)).first()
        if task is None:
            raise BrokerRefusal(404, "unknown_task", "no such task in your inbox", field="task_id")
        return task


class ToolsView(AgentAPIView):
    @extend_schema(responses=s.ToolSerializer(many=True), summary="Tools this agent may call")
    def get(self, request: Request) -> Response:
        tools = tools_for_agent(self.agent(request))
        return Response(s.ToolSerializer(tools, many=True).data)


class ToolCallsView(AgentAPIView):
    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        """POST takes the fast path (``broker.api.fast``), which hands back to DRF whatever it
        does not answer itself."""
        if request.method != "POST":
            return super().dispatch(request, *args, **kwargs)
        return tool_call_fast(
            request, fallback=lambda r: super(ToolCallsView, self).dispatch(r, *args, **kwargs)
        )

    @extend_schema(
        request=s.ToolCallRequestSerializer,
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER)],
        responses={
            200: s.ToolCallAnswerSerializer,
            202: s.ToolCallAnswerSerializer,
            # An audited answer (invalid arguments, denied, unknown tool) or a request refused
            # before it became a call (malformed, unknown task…).
            400: s.CALL_REFUSAL,
            403: s.CALL_REFUSAL,
            404: s.CALL_REFUSAL,
            409: s.ErrorSerializer,
            503: s.ErrorSerializer,
        },
        summary="Ask the broker to call a tool",
    )
    def post(self, request: Request) -> Response:
        data = self.valid(s.ToolCallRequestSerializer, request.data)
        key = request.headers.get("Idempotency-Key", "")
        if len(key) > 200:
            raise BrokerRefusal(
                400,
                "invalid_request",
                "Idempotency-Key is at most 200 characters",
                field="Idempotency-Key",
            )
        origin = data.get("origin")
        call_request = CallRequest(
            tool_id=data["tool_id"],
            arguments=data["arguments"],
            reason=data["reason"],
            confidence=data.get("confidence"),
            task_id=data.get("task_id"),
            parent_r_tag=data.get("parent_r_tag"),
            origin=dict(origin) if origin else None,
            o_tag=data.get("o_tag"),
            idempotency_key=key,
            request_hash=hashlib.sha256(
                json.dumps(request.data, sort_keys=True, default=str).encode()
            ).hexdigest(),
        )
        answer = tool_call_submit(
            agent=self.agent(request),
            request=call_request,
            registry_token=getattr(request.user, "registry_token", None),
        )
        return Response(answer.body, status=answer.status)


class ToolCallDetailView(AgentAPIView):
    @extend_schema(responses=s.ToolCallAnswerSerializer, summary="Status and result of a call")
    def get(self, request: Request, call_id: str) -> Response:
        call = ToolCall.objects.filter(pk=call_id, agent=self.agent(request)).first()
        if call is None:
            raise BrokerRefusal(404, "unknown_call", "no such call of yours")
        answer = call_answer(call)
        return Response(answer.body, status=200)


class TasksView(AgentAPIView):
    query_parameters = frozenset({"status"})

    @extend_schema(
        parameters=[OpenApiParameter("status", str, enum=AgentTask.Status.values)],
        responses=s.TaskSerializer(many=True),
        summary="Your inbox",
    )
    def get(self, request: Request) -> Response:
        status = request.query_params.get("status")
        if status is not None and status not in AgentTask.Status.values:
            raise BrokerRefusal(
                400,
                "invalid_request",
                f"status must be one of {AgentTask.Status.values}",
                field="status",
            )
        tasks = task_services.task_list(agent=self.agent(request), status=status)[:200]
        return Response(s.TaskSerializer(tasks, many=True).data)


class TaskActionView(AgentAPIView):
    action: str = ""

    @extend_schema(
        request=None,
        responses={200: s.TaskSerializer, 404: s.ErrorSerializer, 409: s.ErrorSerializer},
    )
    def post(self, request: Request, task_id: str) -> Response:
        task = self.own_task(request, task_id)
        agent = self.agent(request)
        if self.action == "claim":
            task = task_services.task_claim(agent=agent, task_id=task.pk)
        elif self.action == "progress":
            data = self.valid(s.TaskProgressSerializer, request.data)
            task = task_services.task_progress(agent=agent, task_id=task.pk, **data)
        elif self.action == "complete":
            data = self.valid(s.TaskCompleteSerializer, request.data)
            task = task_services.task_complete(agent=agent, task_id=task.pk, result=data["result"])
        else:
            data = self.valid(s.TaskFailSerializer, request.data)
            task = task_services.task_fail(agent=agent, task_id=task.pk, reason=data["reason"])
        return Response(s.TaskSerializer(task).data)


class TaskClaimView(TaskActionView):
    action = "claim"


class TaskProgressView(TaskActionView):
    action = "progress"

    @extend_schema(request=s.TaskProgressSerializer, responses=s.TaskSerializer)
    def post(self, request: Request, task_id: str) -> Response:
        return super().post(request, task_id)


class TaskCompleteView(TaskActionView):
    action = "complete"

    @extend_schema(request=s.TaskCompleteSerializer, responses=s.TaskSerializer)
    def post(self, request: Request, task_id: str) -> Response:
        return super().post(request, task_id)


class TaskFailView(TaskActionView):
    action = "fail"

    @extend_schema(request=s.TaskFailSerializer, responses=s.TaskSerializer)
    def post(self, request: Request, task_id: str) -> Response:
        return super().post(request, task_id)


class DeliverablesView(AgentAPIView):
    parser_classes = [MultiPartParser]
    max_body_bytes = settings.RABS_DELIVERABLE_MAX_BYTES + 64 * 1024  # the multipart envelope

    @extend_schema(
        request={"multipart/form-data": s.DeliverableUploadSerializer},
        responses={201: None, 413: s.ErrorSerializer, 415: s.ErrorSerializer},
        summary="Upload a file to your outbox",
    )
    def post(self, request: Request) -> Response:
        data = self.valid(
            s.DeliverableUploadSerializer,
            {**request.data.dict()} if hasattr(request.data, "dict") else request.data,
        )
        task = self.own_task(request, data["task_id"]) if data.get("task_id") else None
        item = deliverable_store(agent=self.agent(request), task=task, upload=data["file"])
        return Response(
            {
                "deliverable_id": str(item.id),
                "filename": item.filename,
                "size_bytes": item.size_bytes,
                "sha256": item.sha256,
            },
            status=201,
        )


class DeliverableView(AgentAPIView):
    """Read a deliverable: your own, or another agent's as its sharing allows (DAC → MAC →
    ABAC; docs/access.md, "Sharing"). In a person's chain (``task_id``) the person counts too.
    Every decision is kept in the event log."""

    query_parameters = frozenset({"task_id"})

    @extend_schema(
        parameters=[OpenApiParameter("task_id", OpenApiTypes.UUID, required=False)],
        responses={
            (200, "application/octet-stream"): OpenApiTypes.BINARY,
            403: s.ErrorSerializer,
            404: s.ErrorSerializer,
        },
        summary="Read a deliverable (yours, or shared with you)",
    )
    def get(self, request: Request, deliverable_id: uuid.UUID) -> Any:
        agent = self.agent(request)
        item = Deliverable.objects.filter(pk=deliverable_id).first()
        if item is None:
            raise BrokerRefusal(404, "unknown_deliverable", "no such deliverable")
        task = None
        if "task_id" in request.query_params:
            try:
                task_id = uuid.UUID(request.query_params["task_id"])
            except ValueError as exc:
                raise BrokerRefusal(400, "invalid_request", "not a UUID", field="task_id") from exc
            task = self.own_task(request, task_id)
        # The people the read is for: the named task's, else everyone whose work the agent holds
        # (MAC rules apply whatever the request names).
        principals = reading_principals(agent, task)
        decision = deliverable_read(agent=agent, principals=principals, item=item)
        if not decision.allowed:
            raise BrokerRefusal(403, "share_denied", f"{decision.layer}: {decision.reason}")
        return FileResponse(
            item.file.open("rb"), content_type=item.content_type, filename=item.filename
        )


class HeartbeatView(AgentAPIView):
    @extend_schema(request=s.HeartbeatSerializer, responses={200: None})
    def post(self, request: Request) -> Response:
        data = self.valid(s.HeartbeatSerializer, request.data)
        agent = self.agent(request)
        now = timezone.now()
        # A paused agent cannot get here (authentication refuses it), so this cannot unpause.
        # The status it had comes back with the update: a change is kept in the event log.
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE agents a SET status = %s, uptime_seconds = %s, last_heartbeat_at = %s"
                " FROM (SELECT status FROM agents WHERE agent_id = %s FOR UPDATE) old"
                " WHERE a.agent_id = %s AND a.status <> %s RETURNING old.status",
                [
                    data["status"],
                    data["uptime_seconds"],
                    now,
                    agent.agent_id,
                    agent.agent_id,
                    Agent.Status.PAUSED,
                ],
            )
            row = cursor.fetchone()
        if row is not None and row[0] != data["status"]:
            emit(
                AgentStatusChanged(agent_id=agent.agent_id, status=data["status"], previous=row[0])
            )
        publish(
            Heartbeat(
                agent_id=agent.agent_id,
                status=data["status"],
                uptime_seconds=data["uptime_seconds"],
                at=now.isoformat(),
            )
        )
        return Response({"status": data["status"], "received_at": now.isoformat()})


class ContextView(AgentAPIView):
    query_parameters = frozenset({"task_id", "bucket", "q", "limit"})

    @extend_schema(
        parameters=[
            OpenApiParameter("task_id", OpenApiTypes.UUID),
            OpenApiParameter("bucket", str, enum=ContextBucket.values),
            OpenApiParameter("q", str, description="What to find observations about"),
            OpenApiParameter(
                "limit", {"type": "integer", "minimum": 1, "maximum": 50}, description="default 10"
            ),
        ],
        responses={200: None},
        summary="Standing notes, directives preamble and relevant observations",
    )
    def get(self, request: Request) -> Response:
        task_id = self.uuid_param(request, "task_id")
        task = self.own_task(request, task_id) if task_id else None
        try:
            limit = int(request.query_params.get("limit", 10))
        except ValueError:
            limit = 0
        if not 1 <= limit <= 50:
            raise BrokerRefusal(
                400, "invalid_request", "limit must be a whole number from 1 to 50", field="limit"
            )
        bucket = request.query_params.get("bucket")
        if bucket is not None and bucket not in ContextBucket.values:
            raise BrokerRefusal(400, "invalid_request", "unknown context bucket", field="bucket")
        query = request.query_params.get("q", "")[:1000] or None
        agent = self.agent(request)
        context = agent_context(agent=agent, task=task, bucket=bucket, query=query, limit=limit)
        # What the agent's hooks queued for its next turn, handed over once.
        context["messages"] = hook_messages_take(agent)
        return Response(context)


class ObservationsView(AgentAPIView):
    @extend_schema(request=s.ObservationSerializer, responses={201: None, 200: None, 202: None})
    def post(self, request: Request) -> Response:
        data = self.valid(s.ObservationSerializer, request.data)
        agent = self.agent(request)
        if "bucket" not in data:
            try:
                queued = enqueue(RECORD_OBSERVATION, agent.agent_id, data)
            except Exception as exc:  # the queue is down: refuse rather than drop it
                raise BrokerRefusal(
                    503, "queue_unavailable", "observation not accepted: the task queue is down"
                ) from exc
            return Response({"status": "queued", "job_id": queued.id}, status=202)
        entry, created = observation_record(agent=agent, **data)
        return Response(
            {
                "id": str(entry.id),
                "created": created,
                "frequency": entry.frequency,
                "decay": entry.decay,
                "current_score": entry.current_score,
            },
            status=201 if created else 200,
        )


class InboundEventsView(AgentAPIView):
    @extend_schema(
        request=s.InboundEventSerializer,
        responses={201: None, 200: None},
        summary="Type 3 agents: register an external event as an O-Tag (and a task)",
    )
    def post(self, request: Request) -> Response:
        data = self.valid(s.InboundEventSerializer, request.data)
        try:
            result = inbound_event_record(agent=self.agent(request), event=data)
        except InboundRefusal as refusal:
            raise BrokerRefusal(
                refusal.status, refusal.code, refusal.detail, field=refusal.field
            ) from None
        return Response(
            {
                "o_tag": str(result.origin.id),
                "task_id": str(result.task.task_id) if result.task else None,
                "created": result.created,
                "blocked": result.blocked,
                "guardian": result.origin.metadata.get("guardian"),
            },
            status=201 if result.created else 200,
        )


class UsageView(AgentAPIView):
    @extend_schema(
        request=s.UsageSerializer,
        responses={201: None},
        summary="Record the tokens a query used; the cost comes from the price table",
    )
    def post(self, request: Request) -> Response:
        data = self.valid(s.UsageSerializer, request.data)
        task_id = data.pop("task_id", None)
        task = self.own_task(request, task_id) if task_id else None
        usage = usage_record(agent=self.agent(request), task=task, **data)
        return Response(usage_dict(usage), status=201)
