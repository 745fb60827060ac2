"""Discovery: for a goal, the tools an agent may call and its proven plans, by full text and by
meaning, with each plan's steps and dependencies; REST and MCP give the same answer."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest

from brainframe.models import Agent, Tool
from brainframe.services.memory.discovery import discover, discovery_index
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db
OUTING_STEPS = [
    {
        "id": "s1",
        "intent": "find a wheelchair accessible vehicle",
        "tools": ["transport.vehicle.availability"],
    },
    {
        "id": "s2",
        "intent": "book the vehicle",
        "tools": ["transport.vehicle.book"],
        "depends_on": ["s1"],
    },
]


def _plan(
    client: SignedClient, plan_id: str, goal: str, steps: list[dict[str, Any]], end: str
) -> None:
    def report(event: str, **more: Any) -> None:
        response = client.post(
            "/api/v1/plans/events/", {"event": event, "plan_id": plan_id, **more}
        )
        assert response.status_code == 201, response.content

    report("plan_saved", goal=goal, steps=steps)
    for step in steps:
        report("step_started", step=step["id"])
        report("step_finished", step=step["id"], status="achieved")
    if end == "failed":
        report("plan_failed", status="failed", detail="the bus broke down")


@pytest.fixture
def plans(henry: SignedClient, reggie: SignedClient) -> None:
    _plan(
        henry, "outing-ok", "book an accessible bus for the Friday outing", OUTING_STEPS, "finished"
    )
    _plan(henry, "outing-bad", "book a bus for the beach outing", OUTING_STEPS, "failed")
    _plan(
        henry,
        "roster",
        "check Monday roster cover",
        [{"id": "s1", "intent": "read the roster", "tools": ["roster.shift.read"]}],
        "finished",
    )
    _plan(reggie, "reggie-outing", "book a bus for Reggie's outing", OUTING_STEPS, "finished")
    assert discovery_index() > 0  # the index sweep's part: embeddings off the request path


def test_discovery_finds_proven_plans_and_tools_for_a_goal(
    henry: SignedClient, plans: None
) -> None:
    found = henry.get(
        "/api/v1/discover/?" + urlencode({"q": "arrange a wheelchair van for an excursion"})
    ).json()
    assert found["mode"] == "hybrid"
    plan_ids = [p["plan_id"] for p in found["plans"]]
    assert plan_ids[0] == "outing-ok"  # proven, and closest in meaning
    assert plan_ids.index("outing-bad") > plan_ids.index("outing-ok")  # failed: worth half
    assert "reggie-outing" not in plan_ids  # never another agent's plans
    first = found["plans"][0]
    assert first["outcome"] == "finished"
    assert [s["depends_on"] for s in first["steps"]] == [[], ["s1"]]  # the dependency graph
    assert first["steps"][1]["tools"] == ["transport.vehicle.book"]
    assert first["steps"][0]["result"] == "achieved"
    tools = {t["tool_id"]: t for t in found["tools"]}
    assert "transport.vehicle.availability" in list(tools)[:5]
    used = tools["transport.vehicle.availability"]
    assert set(used["used_in_plans"]) == {"outing-ok", "outing-bad"}
    assert used["success_rate"] == 0.5
    allowed = {t["tool_id"] for t in henry.get("/api/v1/tools/").json()}
    assert set(tools) <= allowed  # only tools Henry may call


def test_full_text_answers_when_the_embedding_model_is_missing(
    henry: SignedClient, plans: None, settings: Any
) -> None:
    settings.RABS_EMBEDDING_MODEL_PATH = "/nonexistent/model"
    found = discover(agent=Agent.objects.get(agent_id="henry"), query="Monday roster")
    assert found["mode"] == "text"
    assert found["plans"][0]["plan_id"] == "roster"
    assert found["plans"][0]["matched_by"] == "text"


@pytest.mark.parametrize("query", [{"q": ""}, {"q": "x", "limit": "0"}, {"q": "x", "nope": "1"}])
def test_a_bad_discovery_query_is_refused(henry: SignedClient, query: dict[str, str]) -> None:
    response = henry.get("/api/v1/discover/?" + urlencode(query))
    assert response.status_code == 400
    assert response.json()["field"] in ("q", "limit", "nope")


def test_discovery_ranks_the_agents_for_a_message(
    henry: SignedClient, reggie: SignedClient
) -> None:
    """What smart routing asks (seed 003): which agent fits a message best, by what each is for
    (its name, role and description; paused agents and other kinds left out)."""
    descriptions = {
        "henry": "Operations: rosters and shifts, transport and vehicle bookings, billing.",
        "reggie": "Front desk reception: takes messages from families and carers and answers "
        "their questions about appointments.",
    }
    for agent in Agent.objects.filter(agent_id__in=descriptions):
        agent.config = {**agent.config, "description": descriptions[agent.agent_id]}
        agent.save()
    Agent.objects.filter(type=Agent.Type.NATIVE).update(status=Agent.Status.PAUSED)
    Tool.objects.exclude(tool_id__in=["roster.shift.read"]).delete()  # a small index to embed

    def best(text: str) -> list[str]:
        found = henry.get("/api/v1/discover/?" + urlencode({"q": text})).json()
        return [a["agent_id"] for a in found["agents"]]

    front_desk = best("Please take a message for the front desk about my son's appointment")
    assert front_desk[0] == "reggie" and set(front_desk) == {"henry", "reggie"}
    assert best("Book a wheelchair accessible van and driver for Friday")[0] == "henry"
