"""The demo's hooks do what they say: a participant message mentioning a fall wakes Henry and
escalates; every weekday at 07:00 Brisbane Henry checks tomorrow's roster; a complaint e-mail
waits for staff before it may ask Reggie's model."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from django.test import Client

from brainframe.models import Agent, AgentTask, Hook
from brainframe.services.access.credentials import agent_credential_issue
from brainframe.services.hooks.runner import hooks_run, hooks_tick
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db
BRISBANE = ZoneInfo("Australia/Brisbane")


def test_the_demo_hooks(seeded: None, henry: SignedClient) -> None:
    hooks = {h.name: h for h in Hook.objects.all()}
    assert hooks["participant fall"].status == "active"
    assert hooks["tomorrow's roster gaps"].status == "active"
    assert hooks["complaint e-mail"].status == "proposed"  # it would ask a model

    voice = SignedClient(
        Client(),
        "reggie-voice",
        agent_credential_issue(agent=Agent.objects.get(agent_id="reggie-voice")),
    )
    response = voice.post(
        "/api/v1/inbound/events/",
        {
            "event_id": "sms-fall-1",
            "event_type": "message",
            "platform": "sms",
            "origin_type": "sms",
            "source_ref": "tel:+61400000003",
            "text": "Hi, it's Jo's mum. Jo fell on the stairs at home last night.",
        },
    )
    assert response.status_code == 201
    assert hooks_run()["fired"] == 1
    woken = AgentTask.objects.get(agent_id="henry", payload__hook=str(hooks["participant fall"].pk))
    assert woken.priority == 95 and "Jo fell on the stairs" in woken.payload["description"]
    assert "escalate" in woken.title
    messages = henry.get("/api/v1/context/").json()["messages"]
    assert [m["hook"] for m in messages] == ["participant fall"]

    roster = hooks["tomorrow's roster gaps"]
    Hook.objects.filter(pk=roster.pk).update(
        schedule_checked_at=datetime(2026, 12, 1, 6, 0, tzinfo=BRISBANE)
    )
    assert hooks_tick(now=datetime(2026, 12, 1, 7, 0, 5, tzinfo=BRISBANE))["fired"] == 1
    assert AgentTask.objects.filter(
        agent_id="henry", title="Check tomorrow's roster for unfilled shifts"
    ).exists()
