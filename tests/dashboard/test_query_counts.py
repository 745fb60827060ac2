"""Query counts of the board, pinned: the page, the approvals page and every partial the board's
socket pushes, each taken with many rows present, so a query per row (N+1) fails here."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from brainframe.events import (
    AgentChanged,
    ApprovalCreated,
    ApprovalDecided,
    Event,
    Heartbeat,
    LevelChanged,
    TaskChanged,
    ToolCallChanged,
)
from brainframe.models import Agent, AgentTask, ApprovalRequest, MonitoringLevelChange, ToolCall
from dashboard.live.render import render_event
from tests import factories as f

pytestmark = pytest.mark.django_db


@pytest.fixture
def crowded(seeded: None) -> dict[str, Any]:
    """The demo plus 20 open approvals, 20 tasks and 20 calls of Henry's, and a reviewer."""
    henry = Agent.objects.get(agent_id="henry")
    for i in range(20):
        call = f.ToolCallFactory(agent=henry, requested_tool_id=f"test.{i}")
        f.ApprovalRequestFactory(agent=henry, tool_call=call, r_tag=call.r_tag)
        f.AgentTaskFactory(agent=henry, title=f"task {i}")
    reviewer = f.UserFactory(username="rev")
    reviewer.groups.add(Group.objects.get(name="reviewers"))
    client = Client()
    client.force_login(reviewer)
    return {"henry": henry, "reviewer": reviewer, "client": client}


def test_board_page(crowded: dict[str, Any], django_assert_num_queries: Any) -> None:
    client = crowded["client"]
    client.get("/board/?agent=henry")  # the session's first read
    # session, user; agents (menu and the one shown); status card (tasks; its supervisor with the
    # last command sent to it); Kanban; notes; deliverables; action log (calls, approvals, tasks,
    # level changes); model spend (access; daily totals; the period's); open count; the last
    # checkpoint with the count of upstream tools awaiting staff
    with django_assert_num_queries(18):
        response = client.get("/board/?agent=henry")
    assert response.status_code == 200


def test_approvals_page(crowded: dict[str, Any], django_assert_num_queries: Any) -> None:
    client = crowded["client"]
    # session, user; the open approvals; every card's chain at once; the reviewer's groups once;
    # the live standing approvals (batches are grouped from the approvals already read); the
    # live grants (with their agents and people); the reviewer's e-mail preference; approved
    # calls not yet run (each card's why, summary and origin come with its approval)
    with django_assert_num_queries(10):
        response = client.get("/board/approvals/")
    assert response.status_code == 200
    assert response.content.count(b'<article id="approval-') >= 20


def _events(henry: Agent) -> list[tuple[Event, int]]:
    call = ToolCall.objects.filter(agent=henry).select_related("agent").first()
    approval = ApprovalRequest.objects.filter(agent=henry).first()
    task = AgentTask.objects.filter(agent=henry).first()
    assert call is not None and approval is not None and task is not None
    change = MonitoringLevelChange.objects.create(
        agent=henry, from_level=0, to_level=1, rule="manual", reason="pilot"
    )
    return [
        (ToolCallChanged.of(call), 1),  # the call with its agent
        # the approval, its chain, the reviewer's groups, the open count
        (ApprovalCreated.of(approval), 4),
        (ApprovalDecided.of(approval), 4),
        (TaskChanged(agent_id="henry", task_id=str(task.task_id), status="todo"), 6),
        (LevelChanged.of(change), 5),
        # the agent; its status card (tasks; the supervisor with its last command)
        (AgentChanged(agent_id="henry"), 4),
        (Heartbeat(agent_id="henry", status="idle", uptime_seconds=5, at="2026-03-02"), 4),
    ]


def test_every_partial_the_socket_pushes(
    crowded: dict[str, Any], django_assert_num_queries: Any
) -> None:
    reviewer = crowded["reviewer"]
    for event, queries in _events(crowded["henry"]):
        with django_assert_num_queries(queries):
            html = render_event(event, reviewer)
        assert html, type(event).__name__
