"""Conversations on the record (docs/ledgers.md): the agent writes its turns here, reads the turn
in progress (steering messages arrive in it), completes it with its answer and tool calls, and
compacts its threads; channel providers post inbound messages to their adapter's endpoint."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from brainframe.models import ChannelAdapter, Thread, Turn
from brainframe.services.ledger.channels import adapter_authenticate
from brainframe.services.ledger.conversations import (
    compact,
    message_receive,
    turn_append,
    turn_begin,
    turn_finish,
)
from brainframe.services.ledger.ledgers import LedgerRefusal
from brainframe.services.ledger.transcripts import thread_context, turn_as_dict
from brainframe.services.ledger.turns import MessageSpec, message_add

from ..channels.replies import reply_submit
from ..channels.sms import signature_valid
from ..errors import BrokerRefusal
from . import serializers as s
from .views import AgentAPIView


def _turn(turn_id: uuid.UUID, agent: Any) -> Turn:
    turn = Turn.objects.filter(pk=turn_id, agent=agent).prefetch_related("messages").first()
    if turn is None:
        raise BrokerRefusal(404, "unknown_turn", "no such turn of yours", field="turn_id")
    return turn


class TurnsView(AgentAPIView):
    @extend_schema(
        request=s.TurnOpenSerializer,
        responses={201: s.TurnAnswerSerializer},
        summary="Start a turn of your own (a task, a scheduled job) with its query",
    )
    def post(self, request: Request) -> Response:
        data = self.valid(s.TurnOpenSerializer, request.data)
        agent = self.agent(request)
        turn = turn_begin(
            agent=agent,
            text=data["text"],
            thread_id=data.get("thread"),
            title=data.get("title", ""),
            task_id=data.get("task_id"),
            channel=data.get("channel", ""),
        )
        return Response(turn_as_dict(_turn(turn.pk, agent)), status=201)


class TurnRecordView(AgentAPIView):
    @extend_schema(
        request=s.TurnRecordSerializer,
        responses={201: s.TurnAnswerSerializer},
        summary="Record a whole turn once it is over: query, notes, tool calls, answer",
    )
    def post(self, request: Request) -> Response:
        data = self.valid(s.TurnRecordSerializer, request.data)
        agent = self.agent(request)
        turn = turn_append(
            agent=agent,
            text=data["text"],
            answer=data["answer"],
            tool_calls=list(data.get("tool_calls") or []),
            notes=list(data.get("notes") or []),
            thread_id=data.get("thread"),
            title=data.get("title", ""),
            task_id=data.get("task_id"),
            channel=data.get("channel", ""),
        )
        return Response(turn_as_dict(_turn(turn.pk, agent)), status=201)


class TurnDetailView(AgentAPIView):
    @extend_schema(
        responses={200: s.TurnAnswerSerializer},
        summary="A turn of yours with its messages (steering messages arrive here mid-turn)",
    )
    def get(self, request: Request, turn_id: uuid.UUID) -> Response:
        return Response(turn_as_dict(_turn(turn_id, self.agent(request))))


class TurnMessagesView(AgentAPIView):
    @extend_schema(
        request=s.TurnMessageSerializer,
        responses={201: s.TurnAnswerSerializer},
        summary="Add what you say or note during an open turn",
    )
    def post(self, request: Request, turn_id: uuid.UUID) -> Response:
        data = self.valid(s.TurnMessageSerializer, request.data)
        agent = self.agent(request)
        message_add(
            turn_id=turn_id,
            agent=agent,
            spec=MessageSpec("agent", data["content"], author=f"agent:{agent.agent_id}"),
        )
        return Response(turn_as_dict(_turn(turn_id, agent)), status=201)


class TurnCompleteView(AgentAPIView):
    @extend_schema(
        request=s.TurnCompleteSerializer,
        responses={200: s.TurnAnswerSerializer},
        summary="Complete an open turn with your answer and the tool calls it made",
    )
    def post(self, request: Request, turn_id: uuid.UUID) -> Response:
        data = self.valid(s.TurnCompleteSerializer, request.data)
        agent = self.agent(request)
        turn_finish(
            turn_id=turn_id,
            agent=agent,
            answer=data["answer"],
            tool_calls=list(data.get("tool_calls") or []),
        )
        reply_submit(turn_id)  # the answer back to the person, as a governed call
        return Response(turn_as_dict(_turn(turn_id, agent)))


class ThreadCompactView(AgentAPIView):
    @extend_schema(
        request=s.CompactSerializer,
        responses={201: s.TurnAnswerSerializer},
        summary="Compact a thread of yours: your model's summary becomes a compaction turn",
    )
    def post(self, request: Request, thread_id: uuid.UUID) -> Response:
        data = self.valid(s.CompactSerializer, request.data)
        agent = self.agent(request)
        turn = compact(
            thread_id=thread_id,
            agent=agent,
            summary=data["summary"],
            summarised_through=data["summarised_through"],
            first_kept=data.get("first_kept"),
        )
        return Response(turn_as_dict(_turn(turn.pk, agent)), status=201)


class ThreadContextView(AgentAPIView):
    @extend_schema(
        responses={200: s.ThreadContextSerializer},
        summary="What your model sees of a thread: the last summary and the turns kept",
    )
    def get(self, request: Request, thread_id: uuid.UUID) -> Response:
        thread = Thread.objects.filter(pk=thread_id, agent=self.agent(request)).first()
        if thread is None:
            raise BrokerRefusal(404, "unknown_thread", "no such thread of yours", field="thread_id")
        return Response(thread_context(thread))


def _error(status: int, code: str, detail: str, field: str | None = None) -> JsonResponse:
    body: dict[str, Any] = {"code": code, "detail": detail}
    if field:
        body["field"] = field
    return JsonResponse(body, status=status)


@csrf_exempt
@transaction.non_atomic_requests
def channel_inbound(request: HttpRequest, name: str) -> JsonResponse:
    """``POST /api/v1/channels/<name>/``: a provider's webhook (bearer token of the adapter),
    one message per request, JSON. 201 with what became of it; 200 for a redelivery."""
    if request.method != "POST":
        return _error(405, "method_not_allowed", "POST one message as JSON")
    header = request.headers.get("Authorization", "")
    token = header[7:] if header.startswith("Bearer ") else ""
    try:
        if not token and "X-Twilio-Signature" in request.headers:
            adapter, payload = _twilio_inbound(request, name)
        else:
            adapter = adapter_authenticate(name, token)
            try:
                payload = json.loads(request.body or b"null")
            except (ValueError, UnicodeDecodeError):
                return _error(400, "invalid_json", "the body is not JSON")
        result = message_receive(adapter, payload)
    except LedgerRefusal as exc:
        return _error(exc.status, exc.code, exc.detail, exc.field)
    return JsonResponse(
        {
            "event_id": str(result.event.pk),
            "seq": result.event.seq,
            "o_tag": str(result.event.origin_id) if result.event.origin_id else None,
            "handled": result.handled,
            "known_sender": result.person is not None,
            "session": result.session.key if result.session else None,
            "turn_id": str(result.turn.pk) if result.turn else None,
        },
        status=201 if result.created else 200,
    )


def _twilio_inbound(request: HttpRequest, name: str) -> tuple[ChannelAdapter, dict[str, Any]]:
    """An SMS provider speaking Twilio's webhook (docs/channels.md): its form fields, signed
    with the adapter's auth token for this URL, instead of JSON and a bearer token."""
    adapter = (
        ChannelAdapter.objects.select_related("agent")
        .filter(name=name, active=True, send_via=ChannelAdapter.SendVia.TWILIO)
        .first()
    )
    if adapter is None:
        raise LedgerRefusal(404, "unknown_channel", f"no active SMS adapter {name!r}")
    params = {key: request.POST.get(key, "") for key in request.POST}
    url = settings.RABS_PUBLIC_URL.rstrip("/") + request.get_full_path()
    if not signature_valid(adapter, url, params, request.headers["X-Twilio-Signature"]):
        raise LedgerRefusal(401, "bad_signature", "X-Twilio-Signature does not match")
    payload = {"message_id": params.get("MessageSid", ""), "from": params.get("From", ""),
               "body": params.get("Body", ""), "to": params.get("To", "")}  # fmt: skip
    return adapter, payload
