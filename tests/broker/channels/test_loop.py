"""The agent's loop (seed 004; docs/channels.md): ``loop.yield_turn`` sleeps until new traffic
for the agent and wakes on it; the loop latch stops an agent calling on and on with no new
input, records that turn boundary, and lets it go again once input arrives."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.test import Client

from brainframe.events.base import LOOP_LATCHED, TURN_YIELDED
from brainframe.models import Agent, AgentTask, EventLogEntry, ToolCall
from brainframe.services.access.credentials import agent_credential_issue
from brainframe.services.seed import seed_brainframe
from tests import factories as f
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def henry() -> SignedClient:
    seed_brainframe()
    f.ToolFactory(tool_id="test.echo.read", agent_access=["henry"])
    return SignedClient(
        Client(), "henry", agent_credential_issue(agent=Agent.objects.get(agent_id="henry"))
    )


def _call(henry: SignedClient) -> dict[str, Any]:
    body = {"tool_id": "test.echo.read", "arguments": {"q": "x"}, "reason": "again"}
    return dict(henry.post("/api/v1/tool-calls/", body).json())


def test_the_latch_stops_a_loop_with_no_new_input_until_input_arrives(
    henry: SignedClient, settings: Any
) -> None:
    settings.RABS_LOOP_LATCH_CALLS = 3
    assert [_call(henry)["status"] for _ in range(3)] == ["executed"] * 3
    stopped = _call(henry)
    assert stopped["status"] == "denied" and stopped["code"] == "loop_latched"
    assert "3 calls" in stopped["detail"] and "loop.yield_turn" in stopped["detail"]
    assert _call(henry)["code"] == "loop_latched"  # it stays stopped...
    # ...and the stop is on the record once: the audited denials and one turn boundary.
    assert ToolCall.objects.filter(decision_code="loop_latched").count() == 2
    boundary = EventLogEntry.objects.get(name=LOOP_LATCHED)
    assert boundary.payload["agent_id"] == "henry" and boundary.payload["calls"] == 3
    # New input (a task in Henry's inbox): the loop runs again, counted afresh.
    AgentTask.objects.create(agent_id="henry", title="Check Friday's roster")
    assert [_call(henry)["status"] for _ in range(3)] == ["executed"] * 3
    assert _call(henry)["code"] == "loop_latched"


def test_yield_turn_sleeps_until_traffic_and_wakes_on_it(henry: SignedClient) -> None:
    # Nothing arrives: it sleeps its time and says so.
    began = time.monotonic()
    idle = henry.post("/api/v1/loop/yield/", {"timeout_s": 0.6}).json()
    assert idle == {"woke": False, "traffic": []} and time.monotonic() - began >= 0.5

    def arrive() -> None:
        time.sleep(0.8)
        AgentTask.objects.create(agent_id="henry", title="Linh asked about Friday")

    threading.Thread(target=arrive).start()
    began = time.monotonic()
    woke = henry.post("/api/v1/loop/yield/", {"timeout_s": 20}).json()
    assert woke["woke"] and time.monotonic() - began < 10
    assert [(t["kind"], t["title"]) for t in woke["traffic"]] == [
        ("task", "Linh asked about Friday")
    ]
    assert [
        e.payload["woke"] for e in EventLogEntry.objects.filter(name=TURN_YIELDED).order_by("seq")
    ] == [
        False,
        True,
    ]
    # Over the REST face a yield is short (a thread waits with it): longer is refused.
    assert henry.post("/api/v1/loop/yield/", {"timeout_s": 300}).status_code == 400
