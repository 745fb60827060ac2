"""What providers call back is believed only with the channel's secret (docs/channels.md): an SMS
status callback without the provider's signature, or with someone else's, changes nothing; the
homeserver's transactions need its token; our bots' own posts in a transaction are nobody's
news."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.test import Client

from brainframe.models import Agent, ChannelAdapter, LedgerEvent, MatrixRoom
from brainframe.services.access.credentials import secret_seal
from brainframe.services.ledger.channels import token_hash
from brainframe.services.seed import seed_brainframe
from tests.sms_server import twilio_signature

pytestmark = pytest.mark.django_db
TOKEN = "the-providers-auth-token"


@pytest.fixture
def adapter(settings: Any) -> ChannelAdapter:
    settings.RABS_PUBLIC_URL = "http://testserver"
    seed_brainframe()
    return ChannelAdapter.objects.create(
        name="sms", channel="sms", agent=Agent.objects.get(agent_id="henry"),
        token_hash=token_hash("inbound"), send_via="twilio", send_account="AC1",
        send_from="+61400000999", send_secret_encrypted=secret_seal(TOKEN),
    )  # fmt: skip


def test_a_status_callback_needs_the_providers_signature(adapter: ChannelAdapter) -> None:
    path = f"/api/v1/channels/sms/status/?outbound={uuid.uuid4()}"
    form = {"MessageSid": "SM1", "MessageStatus": "delivered"}
    client = Client()
    assert client.post(path, form).status_code == 403
    forged = twilio_signature("not-the-token", f"http://testserver{path}", form)
    assert client.post(path, form, HTTP_X_TWILIO_SIGNATURE=forged).status_code == 403
    # Signed for another URL (another message): refused too.
    other = twilio_signature(TOKEN, "http://testserver/api/v1/channels/sms/status/", form)
    assert client.post(path, form, HTTP_X_TWILIO_SIGNATURE=other).status_code == 403
    # Signed right, for no message of this adapter: 404, and nothing changed anywhere.
    signed = twilio_signature(TOKEN, f"http://testserver{path}", form)
    answer = client.post(path, form, HTTP_X_TWILIO_SIGNATURE=signed)
    assert answer.status_code == 404 and answer.json()["code"] == "unknown_message"
    # Only an SMS adapter takes status callbacks.
    adapter.send_via = "none"
    adapter.save()
    assert client.post(path, form, HTTP_X_TWILIO_SIGNATURE=signed).status_code == 404


def _put(body: Any, token: str | None) -> Any:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return Client().put(
        "/matrix/_matrix/app/v1/transactions/t1",
        body if isinstance(body, str) else json.dumps(body),
        content_type="application/json",
        **headers,
    )


def test_the_homeservers_transactions_need_its_token(settings: Any) -> None:
    settings.RABS_MATRIX_HS_TOKEN = "hs-token"
    settings.RABS_MATRIX_SERVER_NAME = "rabs.local"
    seed_brainframe()
    henry = Agent.objects.get(agent_id="henry")
    adapter = ChannelAdapter.objects.create(
        name="matrix", channel="chat", agent=henry, token_hash=token_hash("x"), send_via="matrix"
    )
    MatrixRoom.objects.create(room_id="!room:rabs.local", agent=henry, adapter=adapter)
    own = {
        "type": "m.room.message",
        "room_id": "!room:rabs.local",
        "sender": "@rabs_henry:rabs.local",
        "event_id": "$1",
        "content": {"msgtype": "m.text", "body": "I am Henry"},
    }
    assert _put({"events": [own]}, None).status_code == 401
    assert _put({"events": [own]}, "guess").json()["errcode"] == "M_FORBIDDEN"
    assert _put("not json", "hs-token").status_code == 400
    assert _put({"events": "x"}, "hs-token").status_code == 400
    # With the token: taken (200), and an agent's own post becomes no message of anyone's.
    assert _put({"events": [own]}, "hs-token").status_code == 200
    assert not LedgerEvent.objects.exists()
    # The homeserver asks after a user: our bots exist only for agents that take chat.
    ask = Client().get(
        "/matrix/_matrix/app/v1/users/@rabs_reggie:rabs.local",
        HTTP_AUTHORIZATION="Bearer hs-token",
    )
    assert ask.status_code == 404
