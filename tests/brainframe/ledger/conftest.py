"""The people and channel adapters the ledger tests share."""

from __future__ import annotations

from typing import Any

import pytest

from brainframe.models import Agent, ChannelAdapter, ChannelIdentity, Person
from brainframe.services.ledger.channels import token_hash
from tests import factories as f
from tests.signing import SignedClient

SMS_TOKEN = "sms-provider-token-0123456789"
CHAT_TOKEN = "chat-provider-token-0123456789"


@pytest.fixture
def people(seeded: None) -> dict[str, Any]:
    """A participant, her mother (family member, acts for her) with a mobile number, and the
    SMS and chat adapters that hand messages to Reggie."""
    ruby = Person.objects.create(name="Ruby Tran", relationship="participant")
    mum = Person.objects.create(name="Linh Tran", relationship="family", acts_for=ruby)
    ChannelIdentity.objects.create(person=mum, channel="sms", address="+61412345678")
    reggie = Agent.objects.get(agent_id="reggie")
    sms = ChannelAdapter.objects.create(
        name="sms-main",
        channel="sms",
        agent=reggie,
        token_hash=token_hash(SMS_TOKEN),
        max_length=480,
    )
    chat = ChannelAdapter.objects.create(
        name="chat-main", channel="chat", agent=reggie, token_hash=token_hash(CHAT_TOKEN),
        markdown=True, max_length=4000,
    )  # fmt: skip
    f.ToolFactory(tool_id="test.notes.read", agent_access=["reggie", "henry"])
    return {"ruby": ruby, "mum": mum, "reggie": reggie, "sms": sms, "chat": chat}


def agent_call(agent: SignedClient, tool_id: str, **more: Any) -> dict[str, Any]:
    """A tool call by ``agent`` as the ledger tests make it; its answer's body."""
    response = agent.post(
        "/api/v1/tool-calls/",
        {"tool_id": tool_id, "arguments": {"q": "ruby"}, "reason": "answer the family", **more},
    )
    assert response.status_code in (200, 201, 202, 403), response.content
    return response.json()
