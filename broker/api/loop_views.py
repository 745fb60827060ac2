"""The agent API's automation and planning endpoints: hooks (propose, read, enable, disable),
planner events, discovery over tools and proven plans, and yielding the turn."""

from __future__ import annotations

import time
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from brainframe.events import CORE_EVENTS, PLAN_EVENTS, emit
from brainframe.models import Agent, Hook, Turn
from brainframe.services.hooks.checks import HookError
from brainframe.services.hooks.lifecycle import hook_propose, hook_resource, hook_set_enabled
from brainframe.services.memory.discovery import discover

from ..errors import BrokerRefusal
from ..services.loop import loop_traffic, yield_finished, yield_started
from . import serializers as s
from .views import AgentAPIView


class DiscoverView(AgentAPIView):
    query_parameters = frozenset({"q", "limit"})

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "q",
                {"type": "string", "minLength": 1, "maxLength": 1000},
                required=True,
                description="The goal, in words",
            ),
            OpenApiParameter(
                "limit", {"type": "integer", "minimum": 1, "maximum": 50}, description="default 10"
            ),
        ],
        responses={200: s.DiscoverAnswerSerializer},
        summary="Tools you may call and your proven plans for a goal (text, semantic, graph)",
    )
    def get(self, request: Request) -> Response:
        query = request.query_params.get("q", "")
        if not 1 <= len(query) <= 1000:
            raise BrokerRefusal(400, "invalid_request", "q is 1 to 1000 characters", field="q")
        try:
            limit = int(request.query_params.get("limit", 10))
        except ValueError:
            limit = 0
        if not 1 <= limit <= 50:
            raise BrokerRefusal(
                400, "invalid_request", "limit must be a whole number from 1 to 50", field="limit"
            )
        return Response(discover(agent=self.agent(request), query=query, limit=limit))


class PlanEventsView(AgentAPIView):
    @extend_schema(
        request=s.PlanEventSerializer,
        responses={201: s.PlanEventAnswerSerializer},
        summary="Report a planner event (plan saved, step started or finished, plan failed)",
    )
    def post(self, request: Request) -> Response:
        data = self.valid(s.PlanEventSerializer, request.data)
        agent = self.agent(request)
        task_id = data.get("task_id")
        if task_id is not None:
            self.own_task(request, task_id)
        event = PLAN_EVENTS[data["event"]](
            agent_id=agent.agent_id,
            plan_id=data["plan_id"],
            task_id=str(task_id) if task_id else None,
            goal=data.get("goal", ""),
            step=data.get("step"),
            tool_id=data.get("tool_id"),
            status=data.get("status", ""),
            detail=data.get("detail", ""),
            steps=tuple(data.get("steps") or ()),
        )
        emit(event)
        return Response({"event": event.NAME, "plan_id": event.plan_id}, status=201)


class CoreEventsView(AgentAPIView):
    @extend_schema(
        request=s.CoreEventSerializer,
        responses={201: s.CoreEventAnswerSerializer},
        summary="Report where the orchestrator routed a task (core:route) and what came back "
        "(core:response)",
    )
    def post(self, request: Request) -> Response:
        data = self.valid(s.CoreEventSerializer, request.data)
        agent = self.agent(request)
        task = self.own_task(request, data["task_id"])  # only a task of its own
        target = data["target"]
        if target.startswith("agent:") and not Agent.objects.filter(pk=target[6:]).exists():
            raise BrokerRefusal(400, "unknown_agent", f"no agent {target[6:]}", field="target")
        # The turn is the task's own, from the ledger; one the agent names must be one of them.
        turns = {str(t) for t in Turn.objects.filter(task=task).values_list("pk", flat=True)}
        claimed = str(data["turn_id"]) if data.get("turn_id") else None
        if claimed is not None and claimed not in turns:
            raise BrokerRefusal(
                409, "turn_conflict", "that turn is not this task's", field="turn_id"
            )
        event = CORE_EVENTS[data["event"]](
            agent_id=agent.agent_id,
            task_id=str(task.task_id),
            target=target,
            reason=data.get("reason", ""),
            persona=data.get("persona"),
            turn_id=claimed or (min(turns) if len(turns) == 1 else None),
            status=data.get("status", ""),
            message=data.get("message", ""),
        )
        emit(event)
        return Response({"event": event.NAME, "task_id": event.task_id}, status=201)


def _hook_refusal(error: HookError) -> BrokerRefusal:
    return BrokerRefusal(error.status, error.code, error.detail, field=error.field)


class HooksView(AgentAPIView):
    """Your hooks, and proposing one (``loop.enable_hook``)."""

    @extend_schema(
        operation_id="v1_hooks_list",
        responses={200: s.HookResourceSerializer(many=True)},
        summary="Your hooks",
    )
    def get(self, request: Request) -> Response:
        hooks = Hook.objects.filter(agent=self.agent(request)).select_related("reviewed_by")
        return Response([hook_resource(h) for h in hooks.order_by("name")[:200]])

    @extend_schema(
        request=s.HookDefinitionSerializer,
        responses={201: s.HookResourceSerializer},
        summary="Propose a hook (active at once where policy allows, else staff review it)",
    )
    def post(self, request: Request) -> Response:
        data = self.valid(s.HookDefinitionSerializer, request.data)
        agent = self.agent(request)
        try:
            hook = hook_propose(
                agent=agent, definition=dict(data), proposed_by=f"agent:{agent.agent_id}"
            )
        except HookError as error:
            raise _hook_refusal(error) from None
        return Response(hook_resource(hook), status=201)


class _OwnHook(AgentAPIView):
    def own_hook(self, request: Request, hook_id: Any) -> Hook:
        hook = Hook.objects.filter(pk=hook_id, agent=self.agent(request)).first()
        if hook is None:
            raise BrokerRefusal(404, "unknown_hook", "no such hook of yours", field="hook_id")
        return hook


class HookDetailView(_OwnHook):
    @extend_schema(
        operation_id="v1_hooks_retrieve",
        responses={200: s.HookResourceSerializer},
        summary="One of your hooks (loop://hooks/{id})",
    )
    def get(self, request: Request, hook_id: Any) -> Response:
        return Response(hook_resource(self.own_hook(request, hook_id)))


class HookStateView(_OwnHook):
    enable = True

    @extend_schema(request=s.HookStateSerializer, responses={200: s.HookResourceSerializer})
    def post(self, request: Request, hook_id: Any) -> Response:
        data = self.valid(s.HookStateSerializer, request.data or {})
        hook = self.own_hook(request, hook_id)
        try:
            hook = hook_set_enabled(
                hook=hook,
                enabled=self.enable,
                agent=self.agent(request),
                reason=data.get("reason", ""),
            )
        except HookError as error:
            raise _hook_refusal(error) from None
        return Response(hook_resource(hook))


class HookEnableView(HookStateView):
    enable = True


class HookDisableView(HookStateView):
    enable = False


class YieldView(AgentAPIView):
    """``loop.yield_turn`` for signed agents: at most 30 s a request (a thread waits with it;
    over MCP the wait holds no thread and may be longer)."""

    @extend_schema(
        request=s.YieldSerializer,
        responses={200: s.YieldAnswerSerializer},
        summary="End your turn and sleep until new traffic arrives for you (or timeout_s)",
    )
    def post(self, request: Request) -> Response:
        data = self.valid(s.YieldSerializer, request.data)
        agent = self.agent(request)
        since = yield_started(agent.agent_id)
        deadline = time.monotonic() + float(data.get("timeout_s", 25.0))
        while True:
            traffic = loop_traffic(agent_id=agent.agent_id, since=since)
            if traffic or time.monotonic() >= deadline:
                break
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
        yield_finished(agent.agent_id, since=since, traffic=traffic)
        return Response({"woke": bool(traffic), "traffic": traffic})
