"""Query counts on the agents' hot paths, pinned: a query added per row (N+1) or per call fails
here. Each count is taken with many rows present, after the registry snapshot is warm."""

from __future__ import annotations

from typing import Any

import pytest

from tests import factories as f
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db

READ = {"date_from": "2026-03-02", "date_to": "2026-03-03"}
BOOK = {
    "vehicle_id": "hiace-2",
    "driver_id": "ST-031",
    "start": "2026-03-02T09:00:00+10:00",
    "end": "2026-03-02T15:00:00+10:00",
    "purpose": "Community outing",
    "passengers": 3,
}


@pytest.fixture
def busy(henry: SignedClient) -> SignedClient:
    """Henry with 25 tasks and 25 more tools than the demo, and a warm registry snapshot."""
    for i in range(25):
        f.AgentTaskFactory(agent_id="henry", title=f"task {i}")
        f.ToolFactory(tool_id=f"test.read.{i}", agent_access=["henry"])
    f.ToolFactory(tool_id="test.not_henrys", agent_access=["reggie"])
    for tool_id, arguments in (
        ("roster.shift.read", READ),
        ("transport.vehicle.book", BOOK),
        ("test.not_henrys", {}),
    ):
        henry.post("/api/v1/tool-calls/", {"tool_id": tool_id, "reason": "warm", "arguments": {}})
        henry.post(
            "/api/v1/tool-calls/", {"tool_id": tool_id, "reason": "warm", "arguments": arguments}
        )
    return henry


def test_tool_catalogue(busy: SignedClient, django_assert_num_queries: Any) -> None:
    with django_assert_num_queries(2):  # credential + registry token, the agent's tools
        response = busy.get("/api/v1/tools/")
    assert response.status_code == 200 and len(response.json()) > 25


def test_task_list(busy: SignedClient, django_assert_num_queries: Any) -> None:
    with django_assert_num_queries(2):  # credential + registry token, the tasks
        response = busy.get("/api/v1/tasks/")
    assert response.status_code == 200 and len(response.json()) >= 25


@pytest.mark.parametrize(
    ("tool_id", "arguments", "status", "queries"),
    [
        # Each: the decision's one statement inside a savepoint (the test's own transaction;
        # in production it is its own transaction); the agent and its key come from memory,
        # checked by that statement (no credential query); then
        # auto (a read without side effects): nothing more, the outcome is written with the
        # decision (and a routine success is rated nightly, not here);
        ("roster.shift.read", READ, 200, 3),
        # review: whether a reviewer's standing approval covers it (one indexed read, only for
        # calls on their way to routine review); the e-mail notification, which tests run
        # in-process (in production a worker does): its approval and its recipients;
        ("transport.vehicle.book", BOOK, 202, 6),
        # deny: the alignment signal that rates the denial at once.
        ("test.not_henrys", {}, 403, 4),
    ],
    ids=["auto", "review", "deny"],
)
def test_tool_call(
    busy: SignedClient,
    executed: list[dict[str, Any]],
    django_assert_num_queries: Any,
    tool_id: str,
    arguments: dict[str, Any],
    status: int,
    queries: int,
) -> None:
    with django_assert_num_queries(queries):
        response = busy.post(
            "/api/v1/tool-calls/", {"tool_id": tool_id, "reason": "count", "arguments": arguments}
        )
    assert response.status_code == status, response.json()
