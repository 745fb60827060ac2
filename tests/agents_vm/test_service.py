"""End to end: the broker (daphne on the test database), the agent service as a real subprocess
(supervisor + loop worker), and a scripted OpenAI-compatible model driven by the real client.

One task goes To Do → Done under one O-Tag: a saved plan; an auto-executed call; a call approved
by a reviewer through the reviewer API (with a drain-restart of the worker while it waits); a
call denied by policy and re-planned; an observation and a deliverable. Then ``kill -9`` of the
worker is recovered by the supervisor. (Reggie's modes and his answers on the record:
test_service_reggie.py.)
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import Group, User

from brainframe.models import (
    Agent,
    AgentTask,
    ApprovalRequest,
    ContextBucketEntry,
    Deliverable,
    EventLogEntry,
    Tool,
    ToolCall,
    ValidationPolicy,
)
from brainframe.services.access.credentials import agent_credential_issue, agent_token_issue
from brainframe.services.seed import seed_brainframe
from broker.services.approvals import approval_decide
from tests import factories as f
from tests.agents_vm.conftest import TOKEN
from tests.agents_vm.runtime_kit import wait_for as _wait
from tests.llm_server import OpenAICompatibleServer

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
WINDOW = {"start": "2026-03-02T09:00:00+10:00", "end": "2026-03-02T15:00:00+10:00"}
CARER = "+61 499 999 999"


def _plan(third: dict[str, Any]) -> dict[str, Any]:
    return {
        "goal": "Monday's community outing for P-1042 is arranged and the carer knows",
        "steps": [
            {"id": "s1", "intent": "find an accessible vehicle", "tools": [
                "transport.vehicle.availability"]},
            {"id": "s2", "intent": "book the vehicle and driver", "tools": [
                "transport.vehicle.book"], "depends_on": ["s1"]},
            third,
        ],
    }  # fmt: skip


FIRST_PLAN = _plan(
    {"id": "s3", "intent": "text the carer", "tools": ["comms.sms.send"], "depends_on": ["s2"]}
)
SECOND_PLAN = _plan(
    {
        "id": "s3b",
        "intent": "ask the coordinator to phone the carer",
        "tools": ["comms.notification.push"],
        "depends_on": ["s2"],
    }
)


def script(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The model's side of the conversation, decided by where the conversation stands."""
    last = messages[-1]
    names = {c["id"]: c["function"]["name"] for m in messages for c in (m.get("tool_calls") or [])}

    def call(name: str, **arguments: Any) -> dict[str, Any]:
        return {"tool_calls": [{"name": name, "arguments": arguments}]}

    if last["role"] == "user" and last["content"].startswith("Task:"):
        return call("save_plan", **FIRST_PLAN)
    if last["role"] == "user":
        text = last["content"]
        if "Now step s2" in text:
            return call(
                "transport_vehicle_book",
                vehicle_id="hiace-2",
                driver_id="ST-031",
                purpose="community outing",
                passengers=3,
                reason="the Hiace is free and accessible; book it for the outing",
                **WINDOW,
            )
        if "Now step s3:" in text or "Now step s3 " in text:
            return call(
                "comms_sms_send",
                to=CARER,
                message="Monday's outing is booked: pick-up 9 am.",
                reason="the carer asked to be told when it is booked",
            )
        if "All steps are done" in text:
            return {"content": "Outing booked (Hiace 2, 9 am); coordinator will phone the carer."}
        raise AssertionError(f"unexpected prompt: {text[:200]}")
    assert last["role"] == "tool", last
    result = json.loads(last["content"])
    answered = names[last["tool_call_id"]]
    if answered == "save_plan":
        assert result["status"] == "plan_saved", result
        if result["order"][-1] == "s3b":
            return call(
                "comms_notification_push",
                staff_ids=["ST-007"],
                message="Please phone the carer of P-1042: Monday outing booked, 9 am.",
                reason="texting the carer was refused; the coordinator phones instead",
            )
        return call("transport_vehicle_availability", wheelchair_access=True,
                    reason="need an accessible vehicle for Monday", **WINDOW)  # fmt: skip
    if answered == "transport_vehicle_availability":
        return {"content": "Hiace 2 is free and has a ramp."}
    if answered == "transport_vehicle_book":
        assert result["status"] == "executed", result
        return {"content": "Booked."}
    if answered == "comms_sms_send":
        assert result["status"] == "denied", result
        return call("save_plan", **SECOND_PLAN)
    if answered == "comms_notification_push":
        assert result["status"] == "executed", result
        return {
            "tool_calls": [
                {
                    "name": "record_observation",
                    "arguments": {
                        "bucket": "transportation",
                        "entity": "Hiace 2",
                        "pattern_type": "preference",
                        "observation": "Hiace 2 is the accessible van free on Monday mornings.",
                        "severity": 2,
                    },
                },
                {
                    "name": "write_deliverable",
                    "arguments": {
                        "filename": "outing-plan.txt",
                        "content": "Monday outing: Hiace 2, driver ST-031, 9 am-3 pm.",
                    },
                },
            ]
        }
    if answered in ("record_observation", "write_deliverable"):
        return {"content": "Coordinator notified; observation and plan recorded."}
    raise AssertionError(f"unexpected tool result for {answered}")


@pytest.fixture
def llm() -> Iterator[OpenAICompatibleServer]:
    server = OpenAICompatibleServer()
    server.chat_script = script
    with server.running():
        yield server


@pytest.fixture
def world(live_server_url: str) -> dict[str, Any]:
    seed_brainframe()
    Tool.objects.filter(
        tool_id__in=["transport.vehicle.availability", "comms.notification.push"]
    ).update(execution_mode="auto")
    Tool.objects.filter(tool_id="transport.vehicle.book").update(execution_mode="review")
    Tool.objects.filter(tool_id="comms.sms.send").update(execution_mode="auto")
    policy = ValidationPolicy.objects.get(name="external_comms")
    policy.rules = [
        {
            "id": "sms-allowlist",
            "when": {"field": "arguments.to", "op": "not_in", "value": ["+61 400 000 001"]},
            "action": "deny",
            "reason": "Only registered carer numbers may be texted.",
        },
        *policy.rules,
    ]
    policy.save()
    AgentTask.objects.filter(agent_id="henry").delete()  # only this test's task is To Do
    reviewer = f.UserFactory(username="rita")
    reviewer.set_password("rita-pass-1")
    reviewer.is_staff = True  # reviewers sign in through the staff login
    reviewer.save()
    reviewer.groups.add(Group.objects.get(name="reviewers"))
    origin = f.OriginFactory(origin_type="email", source_ref="<outing-request@carer.example>")
    task = f.AgentTaskFactory(
        agent_id="henry",
        title="Arrange Monday's community outing for P-1042",
        payload={"participant_id": "P-1042", "tools": ["transport.vehicle.book"]},
        o_tag=origin,
    )
    secret = agent_credential_issue(agent=Agent.objects.get(agent_id="henry"))
    return {"task": task, "origin": origin, "secret": secret, "url": live_server_url}


def _reviewer_session(url: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=20)
    client.get("/admin/login/")
    client.post(
        "/admin/login/",
        data={
            "username": "rita",
            "password": "rita-pass-1",
            "csrfmiddlewaretoken": client.cookies["csrftoken"],
            "next": "/admin/",
        },
    )
    return client


def _control(port: int, method: str, path: str, body: Any = None, token: str = TOKEN) -> Any:
    return httpx.request(
        method,
        f"http://127.0.0.1:{port}{path}",
        json=body,
        headers={"Authorization": f"Bearer {token}"},
        timeout=120,
    )


@pytest.fixture
def service(world: dict[str, Any], start_service: Any) -> dict[str, Any]:
    return dict(start_service("henry", world["secret"]))


def test_a_task_from_todo_to_done(
    world: dict[str, Any], service: dict[str, Any], llm: OpenAICompatibleServer
) -> None:
    port, task = service["port"], world["task"]
    assert _control(port, "GET", "/healthz", token="wrong").status_code == 401
    health = _control(port, "GET", "/healthz").json()
    assert health["status"] == "ok" and health["worker"]["running"]

    # The booking waits for a reviewer. Meanwhile, restart the worker (drain): the new worker
    # picks the task up where it was and keeps waiting on the same call.
    approval = _wait(
        lambda: ApprovalRequest.objects.filter(task_id=task.task_id).first(), 120, "the approval"
    )
    first_pid = health["worker"]["pid"]
    restarted = _control(port, "POST", "/control/restart", {"reason": "config reload"}).json()
    assert restarted["previous"]["drained"] and restarted["pid"] != first_pid

    reviewer = _reviewer_session(world["url"])
    decided = reviewer.post(
        f"/api/v1/review/approvals/{approval.pk}/approve/",
        json={"reason": "ok for Monday"},
        headers={"X-CSRFToken": reviewer.cookies["csrftoken"]},
    )
    assert decided.status_code == 200, decided.text

    def done() -> bool:
        task.refresh_from_db()
        return task.status == AgentTask.Status.DONE

    _wait(done, 120, "the task to be done")
    assert not llm.errors

    calls = list(
        ToolCall.objects.filter(task_id=task.task_id).select_related("r_tag").order_by("seq")
    )
    by_tool = {c.requested_tool_id: c for c in calls}
    # Exactly once each, despite the restart while the booking waited.
    assert sorted(c.requested_tool_id for c in calls) == sorted(
        [
            "transport.vehicle.availability",
            "transport.vehicle.book",
            "comms.sms.send",
            "comms.notification.push",
        ]
    )
    assert by_tool["transport.vehicle.availability"].outcome == "succeeded"
    assert by_tool["transport.vehicle.book"].outcome == "succeeded"
    assert by_tool["comms.sms.send"].decision == "denied"
    assert by_tool["comms.sms.send"].decision_code == "policy:external_comms"
    assert by_tool["comms.notification.push"].outcome == "succeeded"
    # All under the task's O-Tag, each with the model's stated reason as its R-Tag reason.
    assert {c.o_tag_id for c in calls} == {world["origin"].pk}
    assert "accessible vehicle" in by_tool["transport.vehicle.availability"].r_tag.thought
    assert ContextBucketEntry.objects.filter(entity="Hiace 2", pattern_type="preference").exists()
    deliverable = Deliverable.objects.get(task=task)
    assert deliverable.filename == "outing-plan.txt"
    assert (service["data"] / "outbox" / str(task.task_id) / "outing-plan.txt").exists()
    result = task.result
    assert [s["id"] for s in result["plan"]["steps"]] == ["s1", "s2", "s3b"]
    assert result["steps_done"] == ["s1", "s2", "s3b"]
    # The planner reported to the control plane's event log: both plans, with their steps and
    # dependencies, and each step as it started and finished.
    planner = [
        (e.name, e.payload)
        for e in EventLogEntry.objects.filter(family="planner", subject=str(task.task_id)).order_by(
            "seq"
        )
    ]
    saved = [p for name, p in planner if name == "planner:plan_saved"]
    assert len({p["plan_id"] for p in saved}) == 2  # the first plan, and the one after the denial
    assert [s["id"] for s in saved[-1]["steps"]] == ["s1", "s2", "s3b"]
    assert all(p["agent_id"] == "henry" and p["task_id"] == str(task.task_id) for _, p in planner)
    finished = {p["step"]: p["status"] for name, p in planner if name == "planner:step_finished"}
    assert finished == {"s1": "achieved", "s2": "achieved", "s3b": "achieved"}
    assert {p["step"] for name, p in planner if name == "planner:step_started"} >= {"s2", "s3b"}

    # kill -9 of the worker: the supervisor notices and starts another.
    pid = _control(port, "GET", "/healthz").json()["worker"]["pid"]
    os.kill(pid, signal.SIGKILL)

    def recovered() -> dict[str, Any] | None:
        health = _control(port, "GET", "/healthz").json()
        fresh = health["worker"]["running"] and health["worker"]["pid"] != pid
        return health if fresh and health["last_exit"] else None

    health = _wait(recovered, 30, "the supervisor to restart the worker")
    assert health["last_exit"]["signal"] == "SIGKILL" and health["restarts"] == 2

    assert _control(port, "POST", "/control/shutdown", {"reason": "test over"}).status_code == 202
    assert service["proc"].wait(timeout=60) == 0


def test_the_agent_service_calls_its_tools_over_mcp(
    world: dict[str, Any], start_service: Any, mcp_url: str, llm: OpenAICompatibleServer
) -> None:
    """The same task as above, the service's tool calls over MCP with a bearer token (its
    tasks, turns and memory on signed REST): the same calls, outcomes and chain."""
    task = world["task"]
    token = agent_token_issue(agent=Agent.objects.get(agent_id="henry"))
    start_service("henry", world["secret"], url=mcp_url, mcp_token=token)
    approval = _wait(
        lambda: ApprovalRequest.objects.filter(task_id=task.task_id).first(), 120, "the approval"
    )
    approval_decide(
        approval_id=approval.pk,
        reviewer=User.objects.get(username="rita"),
        action="approve",
        reason="ok for Monday",
    )

    def done() -> bool:
        task.refresh_from_db()
        return task.status == AgentTask.Status.DONE

    _wait(done, 120, "the task to be done")
    assert not llm.errors
    calls = list(ToolCall.objects.filter(task_id=task.task_id).order_by("seq"))
    assert {c.face for c in calls} == {"mcp"}
    by_tool = {c.requested_tool_id: c for c in calls}
    assert sorted(by_tool) == sorted(
        [
            "transport.vehicle.availability",
            "transport.vehicle.book",
            "comms.sms.send",
            "comms.notification.push",
        ]
    )
    assert by_tool["transport.vehicle.book"].outcome == "succeeded"
    assert by_tool["comms.sms.send"].decision_code == "policy:external_comms"
    assert {c.o_tag_id for c in calls} == {world["origin"].pk}
    assert task.result["steps_done"] == ["s1", "s2", "s3b"]
