"""What the access tests share: inbound channels handing people's messages to Henry."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from brainframe.models import Agent, ChannelAdapter, Turn
from brainframe.services.ledger.channels import token_hash
from tests import factories as f

TOKEN = {
    "sms": "sms-token-0123456789",
    "email": "mail-token-012345678",
    "chat": "chat-token-01234567",
}


@pytest.fixture
def inbound(seeded: None, client: Client) -> Any:
    """SMS, e-mail and chat adapters handing messages to Henry (the ACL may route elsewhere);
    returns a function that posts one message and answers its JSON."""
    henry = Agent.objects.get(agent_id="henry")
    for channel, token in TOKEN.items():
        ChannelAdapter.objects.create(
            name=f"{channel}-in", channel=channel, agent=henry, token_hash=token_hash(token)
        )
    f.ToolFactory(tool_id="ndis.notes.read", agent_access=["reggie", "henry"], input_schema={
        "type": "object", "properties": {"participant_id": {"type": "string"}}})  # fmt: skip
    f.ToolFactory(tool_id="test.report.write", agent_access=["reggie", "henry"])
    sent = iter(range(1, 1000))

    def post(channel: str, sender: str, text: str = "hello", **more: Any) -> dict[str, Any]:
        payload: dict[str, Any] = {"message_id": f"m{next(sent)}", "text": text, **more}
        if channel == "sms":
            payload = {"message_id": payload["message_id"], "from": sender, "body": text}
        elif channel == "email":
            payload.update({"from": sender, "subject": "hi"})
        else:
            payload["sender"] = sender
        response = client.post(
            f"/api/v1/channels/{channel}-in/",
            json.dumps(payload),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {TOKEN[channel]}",
        )
        assert response.status_code == 201, response.content
        return dict(response.json())

    return post


def task_of(body: dict[str, Any]) -> str:
    return str(Turn.objects.get(pk=body["turn_id"]).task_id)
