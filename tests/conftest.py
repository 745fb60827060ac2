from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from brainframe.models import Agent
from brainframe.services.credentials import agent_credential_issue
from brainframe.services.seed import seed_brainframe
from broker.handlers.function import register
from tests.signing import SignedClient


@pytest.fixture
def seeded(db: None) -> None:
    """The demo data, as `make run` loads it."""
    seed_brainframe()


EXECUTED: list[dict[str, Any]] = []


@register("tests.echo")
def _echo(args: dict[str, Any], *, call_id: Any) -> dict[str, Any]:
    EXECUTED.append(args)
    return {"echo": args}


@pytest.fixture
def executed() -> list[dict[str, Any]]:
    """Arguments of every execution of the ``tests.echo`` handler during the test."""
    EXECUTED.clear()
    return EXECUTED


@pytest.fixture
def henry(seeded: None, client: Client) -> SignedClient:
    agent = Agent.objects.get(agent_id="henry")
    return SignedClient(client, "henry", agent_credential_issue(agent=agent))


@pytest.fixture
def reggie(seeded: None) -> SignedClient:
    agent = Agent.objects.get(agent_id="reggie")
    return SignedClient(Client(), "reggie", agent_credential_issue(agent=agent))
