"""Hooks: each kind fires on real events (the scheduled one over simulated dates), its effect
reaches the agent, an invoked call is governed and audited, and a failing hook is disabled."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from brainframe.models import (
    Agent,
    AgentTask,
    EventLogEntry,
    Hook,
    LLMBudget,
    LLMRequest,
    OriginRegistry,
    Tool,
    ToolCall,
)
from brainframe.services.access.credentials import agent_credential_issue
from brainframe.services.eventlog.reading import event_log_verify
from brainframe.services.hooks.lifecycle import hook_review
from brainframe.services.hooks.runner import hooks_run, hooks_tick
from brainframe.services.llm.admission import llm_upstream_set
from tests import factories as f
from tests.llm_server import OpenAICompatibleServer
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db
HOOKS = "/api/v1/hooks/"
EVENTS = "/api/v1/inbound/events/"
BRISBANE = ZoneInfo("Australia/Brisbane")

FALL = {
    "name": "participant fall",
    "kind": "deterministic",
    "events": ["inbound:received"],
    "condition": {"field": "origin.text", "op": "matches", "value": r"\b(fell|fall|fallen)\b"},
    "effects": [
        {
            "type": "wake",
            "title": "A participant may have fallen: check and escalate",
            "priority": 90,
        },
        {"type": "message", "text": "A message mentioned a fall: escalate to the on-call nurse."},
    ],
}


@pytest.fixture(autouse=True)
def without_demo_hooks(seeded: None) -> None:
    """These tests make their own hooks (the demo's are tested in test_demo_hooks)."""
    Hook.objects.all().delete()


@pytest.fixture
def voice(seeded: None) -> SignedClient:
    agent = Agent.objects.get(agent_id="reggie-voice")
    return SignedClient(Client(), "reggie-voice", agent_credential_issue(agent=agent))


def _inbound(voice: SignedClient, event_id: str, text: str) -> dict[str, Any]:
    response = voice.post(
        EVENTS,
        {
            "event_id": event_id,
            "event_type": "message",
            "platform": "sms",
            "origin_type": "sms",
            "source_ref": "tel:+61400000002",
            "text": text,
        },
    )
    assert response.status_code == 201, response.content
    return dict(response.json())


def test_a_deterministic_hook_wakes_its_agent_and_queues_a_message(
    henry: SignedClient, voice: SignedClient
) -> None:
    proposed = henry.post(HOOKS, FALL)
    assert proposed.status_code == 201, proposed.content
    hook = proposed.json()
    assert hook["status"] == "active"  # only wakes and messages: policy lets it go live
    assert hook["uri"] == f"loop://hooks/{hook['id']}"

    quiet = _inbound(voice, "sms-1", "Can the bus come at 9:30 on Monday?")
    fall = _inbound(voice, "sms-2", "Mum had a fall in the bathroom this morning, she is sore.")
    counts = hooks_run()
    assert counts["fired"] == 1 and counts["quiet"] == 1

    task = AgentTask.objects.get(agent_id="henry", payload__hook=hook["id"])
    assert task.priority == 90 and "Mum had a fall" in task.payload["description"]
    origin = OriginRegistry.objects.get(pk=task.o_tag_id)
    assert origin.origin_type == "hook" and origin.registered_by_id == "henry"
    fall_event = EventLogEntry.objects.get(name="inbound:received", subject=fall["o_tag"])
    assert origin.metadata["event"] == f"{fall_event.stream}:{fall_event.seq}"
    assert not AgentTask.objects.filter(payload__event__contains=quiet["o_tag"]).exists()

    # The message reaches the agent's next turn once.
    first = henry.get("/api/v1/context/").json()["messages"]
    assert [m["text"] for m in first] == [FALL["effects"][1]["text"]]
    assert henry.get("/api/v1/context/").json()["messages"] == []

    fired = EventLogEntry.objects.get(name="hook:fired", subject=hook["id"])
    assert fired.payload["event_ref"] == origin.metadata["event"]
    assert [e["type"] for e in fired.payload["effects"]] == ["wake", "message"]
    verdicts = EventLogEntry.objects.filter(name="hook:evaluated", subject=hook["id"])
    # The firing's verdict, and the quiet one kept with the run's count.
    assert sorted(v.payload["detail"] for v in verdicts) == [
        "1 event(s): the condition did not hold",
        "condition holds",
    ]

    # Read again (a crash before the cursor was saved): nothing fires twice.
    from brainframe.models import HookCursor

    HookCursor.objects.update(cursor={})
    hooks_run()
    assert AgentTask.objects.filter(agent_id="henry", payload__hook=hook["id"]).count() == 1
    assert event_log_verify() == []


def test_an_invoked_call_is_governed_and_audited_and_never_exceeds_its_agent(
    henry: SignedClient, voice: SignedClient
) -> None:
    Tool.objects.filter(tool_id="roster.shift.read").update(agent_access=["henry"])
    f.ToolFactory(tool_id="test.reggie.only", agent_access=["reggie"])
    definition = {
        "name": "check roster on a fall",
        "kind": "deterministic",
        "events": ["inbound"],
        "condition": {"field": "origin.text", "op": "contains", "value": "fall"},
        "effects": [
            {
                "type": "invoke",
                "tool_id": "roster.shift.read",
                "arguments": {"date_from": "2026-03-02", "date_to": "2026-03-02"},
                "reason": "who is rostered with the participant today",
            }
        ],
    }
    refused = henry.post(
        HOOKS,
        {
            **definition,
            "name": "x",
            "effects": [{**definition["effects"][0], "tool_id": "test.reggie.only"}],
        },
    )
    assert refused.status_code == 400
    assert refused.json()["code"] == "tool_not_allowed"
    assert refused.json()["field"] == "effects[0].tool_id"

    proposed = henry.post(HOOKS, definition).json()
    assert proposed["status"] == "proposed"  # it acts: staff decide
    _inbound(voice, "sms-3", "He had a fall getting off the bus")
    assert hooks_run()["evaluated"] == 0  # not active yet
    staff = f.UserFactory(username="sam")
    staff.groups.add(Group.objects.get(name="reviewers"))
    hook = hook_review(hook=Hook.objects.get(pk=proposed["id"]), reviewer=staff, approve=True)
    assert hook.status == "active"

    _inbound(voice, "sms-4", "She had another fall")
    assert hooks_run()["fired"] == 1
    call = ToolCall.objects.get(agent_id="henry", requested_tool_id="roster.shift.read")
    assert call.decision == "executed" and call.face == "system"
    origin = OriginRegistry.objects.get(pk=call.o_tag_id)
    assert origin.origin_type == "hook" and origin.metadata["hook_id"] == proposed["id"]
    assert call.r_tag.thought.startswith("hook check roster on a fall:")

    # Staff take the tool away from Henry: the hook's next call is refused by the broker.
    Tool.objects.filter(tool_id="roster.shift.read").update(agent_access=[])
    _inbound(voice, "sms-5", "A fall in the garden")
    assert hooks_run()["fired"] == 1
    denied = ToolCall.objects.filter(agent_id="henry").order_by("-timestamp").first()
    assert denied is not None and denied.decision == "denied"
    assert denied.decision_code == "not_allowed"
    fired = EventLogEntry.objects.filter(name="hook:fired", subject=proposed["id"]).latest("id")
    assert fired.payload["effects"][0]["status"] == "denied"


def test_a_scheduled_hook_fires_on_its_cron_times_over_simulated_dates(
    henry: SignedClient,
) -> None:
    proposed = henry.post(
        HOOKS,
        {
            "name": "roster gaps",
            "kind": "scheduled",
            "schedule": "0 7 * * 1-5",
            "timezone": "Australia/Brisbane",
            "effects": [{"type": "wake", "title": "Check tomorrow's roster gaps"}],
        },
    ).json()
    assert proposed["status"] == "active"
    Hook.objects.filter(pk=proposed["id"]).update(
        schedule_checked_at=datetime(2026, 11, 26, 12, 0, tzinfo=BRISBANE)  # Thursday noon
    )

    def tick(*when: int) -> dict[str, int]:
        return hooks_tick(now=datetime(*when, tzinfo=BRISBANE))

    assert tick(2026, 11, 27, 6, 59)["fired"] == 0  # Friday, a minute early
    assert tick(2026, 11, 27, 7, 0, 20)["fired"] == 1  # Friday 07:00
    assert tick(2026, 11, 27, 7, 1)["fired"] == 0  # once
    assert tick(2026, 11, 28, 7, 0)["fired"] == 0  # Saturday
    assert tick(2026, 11, 29, 7, 0)["fired"] == 0  # Sunday
    assert tick(2026, 11, 30, 9, 30)["fired"] == 1  # Monday, the timer late: fires once
    tasks = AgentTask.objects.filter(agent_id="henry", payload__hook=proposed["id"])
    assert tasks.count() == 2
    refs = sorted(t.payload["event"] for t in tasks)
    assert refs == [
        "timer:2026-11-27T07:00:00+10:00",
        "timer:2026-11-30T07:00:00+10:00",
    ]


@pytest.fixture
def model() -> Iterator[OpenAICompatibleServer]:
    server = OpenAICompatibleServer()

    def judge(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        asked = messages[-1]["content"]
        return {"content": "yes, unhappy" if "disappointed" in asked else "no"}

    server.chat_script = judge
    with server.running():
        yield server


@pytest.fixture
def henrys_model(seeded: None, model: OpenAICompatibleServer) -> OpenAICompatibleServer:
    """Henry may use ``small-model``, served by the local model server."""
    llm_upstream_set(
        name="local",
        base_url=model.base_url,
        served_models=["small-model"],
        api_key="",
        price_in=Decimal("1"),
        price_out=Decimal("1"),
        external=False,
    )
    LLMBudget.objects.create(
        agent=Agent.objects.get(agent_id="henry"), allowed_models=["small-model"]
    )
    return model


def test_a_hybrid_hook_asks_the_agents_model_after_its_prefilter(
    henry: SignedClient, voice: SignedClient, henrys_model: OpenAICompatibleServer
) -> None:
    model = henrys_model
    proposed = henry.post(
        HOOKS,
        {
            "name": "complaints",
            "kind": "hybrid",
            "events": ["inbound:received"],
            "condition": {"field": "origin.platform", "op": "eq", "value": "sms"},
            "prompt": "Does this message sound like a complaint?",
            "effects": [{"type": "wake", "title": "Complaint: make a task for the coordinator"}],
        },
    ).json()
    assert proposed["status"] == "proposed"  # it spends on a model: staff decide
    staff = f.UserFactory(username="sam")
    hook_review(hook=Hook.objects.get(pk=proposed["id"]), reviewer=staff, approve=True)

    _inbound(voice, "sms-6", "Thanks for the lovely outing yesterday!")
    _inbound(voice, "sms-7", "I am very disappointed the bus never came, again.")
    counts = hooks_run()
    assert counts["evaluated"] == 2 and counts["fired"] == 1 and counts["declined"] == 1
    assert len(model.requests) == 2  # both passed the prefilter; the model judged each
    verdicts = EventLogEntry.objects.filter(name="hook:evaluated", subject=proposed["id"])
    assert sorted(v.payload["detail"][:3] for v in verdicts) == ["no:", "yes"]
    task = AgentTask.objects.get(payload__hook=proposed["id"])
    assert "disappointed" in task.payload["description"]
    usage = LLMRequest.objects.filter(agent_id="henry", endpoint="hook")
    assert usage.count() == 2  # the agent's model usage, counted against its budget


def test_an_llm_hook_that_keeps_failing_is_disabled_with_a_notice(
    henry: SignedClient, voice: SignedClient
) -> None:
    proposed = henry.post(
        HOOKS,
        {
            "name": "judge everything",
            "kind": "llm",
            "events": ["inbound:received"],
            "prompt": "Is this urgent?",
            "effects": [{"type": "message", "text": "urgent"}],
        },
    ).json()
    hook_review(hook=Hook.objects.get(pk=proposed["id"]), reviewer=f.UserFactory(), approve=True)
    for n in range(4):  # Henry has no model budget: each evaluation fails
        _inbound(voice, f"sms-f{n}", f"message {n}")
    counts = hooks_run()
    assert counts["failed"] == 3  # the third failure disabled it; the fourth event found it off
    hook = Hook.objects.get(pk=proposed["id"])
    assert hook.status == "disabled" and "3 failures in a row" in hook.disabled_reason
    notice = EventLogEntry.objects.get(name="hook:disabled", subject=proposed["id"])
    assert "no model budget" in notice.payload["detail"]
    # The agent cannot turn it back on past its errors silently: it can, and it says so.
    again = henry.post(f"{HOOKS}{proposed['id']}/enable/", {})
    assert again.status_code == 200 and again.json()["status"] == "active"


@pytest.mark.parametrize(
    ("change", "code", "field"),
    [
        ({"kind": "sometimes"}, None, "kind"),
        ({"events": []}, "events_required", "events"),
        (
            {"condition": {"field": "arguments.x", "op": "eq", "value": 1}},
            "invalid_condition",
            "condition",
        ),
        (
            {"kind": "scheduled", "events": [], "schedule": "61 * * * *"},
            "invalid_schedule",
            "schedule",
        ),
        ({"effects": [{"type": "explode"}]}, "invalid_effect", "effects[0]"),
        ({"effects": [{"type": "wake"}]}, "invalid_effect", "effects[0].title"),
        ({"kind": "llm"}, "prompt_required", "prompt"),
    ],
)
def test_a_bad_hook_is_refused_naming_its_field(
    henry: SignedClient, change: dict[str, Any], code: str | None, field: str
) -> None:
    response = henry.post(HOOKS, {**FALL, **change})
    assert response.status_code == 400, response.content
    body = response.json()
    if code is not None:
        assert body["code"] == code
    assert body.get("field") == field or field in str(body)
    assert not Hook.objects.exists()


def test_hooks_are_the_agents_own_to_read_enable_and_disable(
    henry: SignedClient, reggie: SignedClient
) -> None:
    hook = henry.post(HOOKS, FALL).json()
    assert henry.get(f"{HOOKS}{hook['id']}/").json()["name"] == "participant fall"
    assert reggie.get(f"{HOOKS}{hook['id']}/").status_code == 404
    assert reggie.post(f"{HOOKS}{hook['id']}/disable/", {}).status_code == 404
    off = henry.post(f"{HOOKS}{hook['id']}/disable/", {"reason": "too noisy"})
    assert off.json()["status"] == "disabled"
    assert EventLogEntry.objects.filter(name="hook:disabled", subject=hook["id"]).exists()
    assert henry.post(HOOKS, FALL).status_code == 409  # the name is taken
    assert [h["id"] for h in henry.get(HOOKS).json()] == [hook["id"]]


def test_an_llm_hook_fires_when_the_agents_model_says_yes(
    henry: SignedClient, voice: SignedClient, henrys_model: OpenAICompatibleServer
) -> None:
    model = henrys_model
    proposed = henry.post(
        HOOKS,
        {
            "name": "unhappy messages",
            "kind": "llm",
            "events": ["inbound:received"],
            "prompt": "Is the sender unhappy?",
            "effects": [{"type": "message", "text": "Someone is unhappy: reply kindly."}],
        },
    ).json()
    hook_review(hook=Hook.objects.get(pk=proposed["id"]), reviewer=f.UserFactory(), approve=True)
    _inbound(voice, "sms-l1", "I am disappointed nobody called back.")
    _inbound(voice, "sms-l2", "See you on Monday!")
    counts = hooks_run()
    assert counts["fired"] == 1 and counts["declined"] == 1
    assert len(model.requests) == 2  # no condition: the model judged every event it saw
    messages = henry.get("/api/v1/context/").json()["messages"]
    assert [m["text"] for m in messages] == ["Someone is unhappy: reply kindly."]
