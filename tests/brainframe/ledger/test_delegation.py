"""Delegation (seed 004): a manager hands work to a worker within the depth limit, and a worker
is never allowed what its manager may not do, on a knock-on call of the chain too."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from brainframe.models import Agent, AgentTask, Delegation, Turn
from tests import factories as f
from tests.brainframe.ledger.conftest import agent_call
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db


# The handler runs in its worker thread, which sees committed rows only.
@pytest.mark.django_db(transaction=True)
def test_delegation_within_and_beyond_the_depth_limit(
    people: dict[str, Any], reggie: SignedClient, henry: SignedClient, settings: Any
) -> None:
    settings.RABS_DELEGATION_MAX_DEPTH = 2
    f.AgentFactory(agent_id="wendy")
    first = agent_call(
        reggie,
        "agents.delegate",
        arguments={"agent_id": "henry", "title": "Check the bus", "instructions": "Is it free?"},
    )
    assert first["status"] == "executed" and first["outcome"] == "succeeded", first
    result = first["result"]
    assert result["depth"] == 1
    delegation = Delegation.objects.get(pk=result["delegation_id"])
    assert (delegation.manager_id, delegation.worker_id) == ("reggie", "henry")
    task = AgentTask.objects.get(pk=result["task_id"])
    assert task.agent_id == "henry" and task.o_tag_id is not None
    worker_turn = Turn.objects.get(pk=result["turn_id"])
    assert worker_turn.messages.get().author == "agent:reggie"

    # Henry, on that task, delegates on: depth 2 is allowed...
    second = agent_call(
        henry,
        "agents.delegate",
        arguments={"agent_id": "wendy", "title": "Ask the driver", "instructions": "Call Bob"},
        task_id=result["task_id"],
    )
    assert second["status"] == "executed", second
    assert second["result"]["depth"] == 2
    # ...and Wendy, on hers, may not go to depth 3.
    wendy = Agent.objects.get(agent_id="wendy")
    from brainframe.services.access.credentials import agent_credential_issue

    wendy_client = SignedClient(Client(), "wendy", agent_credential_issue(agent=wendy))
    third = agent_call(
        wendy_client,
        "agents.delegate",
        arguments={"agent_id": "henry", "title": "x", "instructions": "y"},
        task_id=second["result"]["task_id"],
    )
    assert third["status"] == "denied" and third["code"] == "delegation_too_deep"
    assert Delegation.objects.count() == 2


# The handler runs in its worker thread, which sees committed rows only.
@pytest.mark.django_db(transaction=True)
def test_a_worker_is_refused_what_its_manager_may_not_do(
    people: dict[str, Any], reggie: SignedClient, henry: SignedClient
) -> None:
    f.ToolFactory(tool_id="test.henry.only", agent_access=["henry"])
    handed = agent_call(
        reggie,
        "agents.delegate",
        arguments={"agent_id": "henry", "title": "Look it up", "instructions": "use your tools"},
    )["result"]
    refused = agent_call(henry, "test.henry.only", task_id=handed["task_id"])
    assert refused["status"] == "denied" and refused["code"] == "exceeds_manager"
    assert "reggie" in refused["detail"] and "test.henry.only" in refused["detail"]
    # A knock-on call of the same chain is held to it too.
    allowed = agent_call(henry, "test.notes.read", task_id=handed["task_id"])
    assert allowed["status"] == "executed"
    knock_on = agent_call(henry, "test.henry.only", parent_r_tag=allowed["r_tag"])
    assert knock_on["code"] == "exceeds_manager"
    # On his own work, Henry keeps his own permissions.
    assert agent_call(henry, "test.henry.only")["status"] == "executed"
    page = Client()
    from django.contrib.auth import get_user_model

    page.force_login(get_user_model().objects.create_superuser("boss", "b@x.test", "pw"))
    tree = page.get("/board/conversations/").content.decode()
    assert f'data-delegation="{handed["delegation_id"]}"' in tree and "Look it up" in tree
