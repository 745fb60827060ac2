"""The control plane's side of the agent runtime (docs/agents.md): Core's events in the event
log, and the governed agent.update_handler tool."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth.models import Group

from brainframe.models import Agent, ApprovalRequest, EventLogEntry, ToolCall
from brainframe.services.ledger.turns import MessageSpec, thread_create, turn_open
from broker.services.approvals import approval_decide
from tests import factories as f
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db
CORE = "/api/v1/core/events/"
CALLS = "/api/v1/tool-calls/"


def test_core_route_and_response_go_into_the_event_log(
    henry: SignedClient, reggie: SignedClient
) -> None:
    agent = Agent.objects.get(agent_id="henry")
    task = f.AgentTaskFactory(agent=agent)
    turn = turn_open(
        thread=thread_create(agent=agent, title="t"),
        agent=agent,
        query=[MessageSpec("user", "hello", "someone", None, None)],
        task=task,
    )
    routed = henry.post(
        CORE,
        {"event": "route", "task_id": str(task.task_id), "target": "agent:reggie",
         "reason": "smart routing", "persona": "desk"},
    )  # fmt: skip
    assert routed.status_code == 201, routed.json()
    answered = henry.post(
        CORE,
        {"event": "response", "task_id": str(task.task_id), "target": "planner",
         "status": "done", "message": "Booked.", "turn_id": str(turn.pk)},
    )  # fmt: skip
    assert answered.status_code == 201, answered.json()
    rows = list(EventLogEntry.objects.filter(family="core").order_by("seq"))
    assert [r.name for r in rows] == ["core:route", "core:response"]
    assert rows[0].agent_id == "henry" and rows[0].subject == str(task.task_id)
    assert rows[0].payload["target"] == "agent:reggie" and rows[0].payload["persona"] == "desk"
    # The turn comes from the ledger: the task's own, whether the agent named it or not.
    assert rows[0].payload["turn_id"] == rows[1].payload["turn_id"] == str(turn.pk)
    assert rows[1].payload["status"] == "done" and rows[1].payload["message"] == "Booked."


@pytest.mark.parametrize(
    ("change", "status", "code", "field"),
    [
        ({"target": "somewhere"}, 400, "invalid_request", "target"),
        ({"target": "agent:nobody"}, 400, "unknown_agent", "target"),
        ({"event": "dream"}, 400, "invalid_request", "event"),
        ({"status": "perfect"}, 400, "invalid_request", "status"),
        ({"turn_id": str(uuid.uuid4())}, 409, "turn_conflict", "turn_id"),
        ({"extra": 1}, 400, "invalid_request", "extra"),
    ],
)
def test_core_events_that_lie_are_refused(
    henry: SignedClient, change: dict[str, Any], status: int, code: str, field: str
) -> None:
    task = f.AgentTaskFactory(agent=Agent.objects.get(agent_id="henry"))
    body = {"event": "route", "task_id": str(task.task_id), "target": "planner", **change}
    answer = henry.post(CORE, body)
    assert answer.status_code == status, answer.json()
    assert answer.json()["code"] == code and answer.json()["field"] == field
    assert not EventLogEntry.objects.filter(family="core").exists()


def test_core_events_only_for_the_agents_own_tasks(reggie: SignedClient, henry: Any) -> None:
    theirs = f.AgentTaskFactory(agent=Agent.objects.get(agent_id="henry"))
    answer = reggie.post(
        CORE, {"event": "route", "task_id": str(theirs.task_id), "target": "planner"}
    )
    assert answer.status_code == 404 and answer.json()["code"] == "unknown_task"


@pytest.mark.django_db(transaction=True)  # the handler reads the call from its own thread
def test_a_handler_change_is_a_reviewers_decision(henry: SignedClient) -> None:
    code = "def handle(text, context):\n    return text + ' -- Henry'\n"
    asked = henry.post(
        CALLS,
        {"tool_id": "agent.update_handler", "reason": "sign my answers",
         "arguments": {"name": "answer", "code": code}},
    )  # fmt: skip
    assert asked.status_code == 202 and asked.json()["status"] == "pending_approval"
    reviewer = f.UserFactory(username="rosa")
    reviewer.groups.add(Group.objects.get(name="reviewers"))
    approval_decide(approval_id=asked.json()["approval_id"], reviewer=reviewer, action="approve")
    call = ToolCall.objects.get(pk=asked.json()["call_id"])
    assert call.outcome == "succeeded", call.error
    assert call.output["name"] == "answer" and call.output["approved_by"] == "rosa"
    assert len(call.output["digest"]) == 16
    # Code that does not parse, or defines no handler, fails once approved: nothing to store.
    for bad, error in (("def handle(:", "code does not parse"), ("x = 1", "must define handle")):
        again = henry.post(
            CALLS,
            {"tool_id": "agent.update_handler", "reason": "try again",
             "arguments": {"name": "result", "code": bad}},
        )  # fmt: skip
        approval_decide(
            approval_id=again.json()["approval_id"], reviewer=reviewer, action="approve"
        )
        failed = ToolCall.objects.get(pk=again.json()["call_id"])
        assert failed.outcome == "failed" and error in failed.error
    # Nobody but a reviewer: it never runs on its own, whatever the agent's level.
    assert ApprovalRequest.objects.filter(tool_id="agent.update_handler").count() == 3
