"""A conversation on the board in a real browser: the family member's SMS, Reggie's turn with its
tool call and answer, appearing live as they happen."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from brainframe.models import Agent, ChannelAdapter, ChannelIdentity, Person, Turn
from brainframe.services.access.credentials import agent_credential_issue
from brainframe.services.ledger.channels import token_hash
from brainframe.services.seed import seed_brainframe
from tests import factories as f
from tests.signing import signed_request

from .conftest import screenshot

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
TOKEN = "sms-provider-token-0123456789"


def _sms(url: str, message_id: str, text: str) -> dict[str, Any]:
    response = httpx.post(
        f"{url}/api/v1/channels/sms/",
        json={"message_id": message_id, "from": "0412 345 678", "body": text},
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=20,
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_a_conversation_shows_message_turn_calls_and_answer_live(
    open_page: Any, live_server_url: str
) -> None:
    seed_brainframe()
    reggie = Agent.objects.get(agent_id="reggie")
    reggie.config = {**reggie.config, "queue_mode": "steer"}
    reggie.save()
    mum = Person.objects.create(name="Linh Tran", relationship="family")
    ChannelIdentity.objects.create(person=mum, channel="sms", address="+61412345678")
    ChannelAdapter.objects.create(
        name="sms", channel="sms", agent=reggie, token_hash=token_hash(TOKEN), max_length=480
    )
    f.ToolFactory(tool_id="test.notes.read", agent_access=["reggie"])
    secret = agent_credential_issue(agent=reggie)
    staff = f.UserFactory(username="sam", is_staff=True)

    first = _sms(live_server_url, "SM-1", "Is Ruby's outing still on Friday?")
    turn = Turn.objects.get(pk=first["turn_id"])
    page = open_page(staff, f"/board/conversations/{turn.thread_id}/")
    assert "Is Ruby's outing still on Friday?" in page.inner_text(f"#turn-{turn.pk}")
    assert "Linh Tran" in page.inner_text(f"#turn-{turn.pk}")

    # Linh writes again while Reggie works (steer): it appears in the same turn, no reload.
    _sms(live_server_url, "SM-2", "She will bring her wheelchair")
    page.wait_for_selector(f"#turn-{turn.pk} .role-steer", timeout=10000)

    def signed(method: str, path: str, body: Any = None) -> Any:
        return signed_request(live_server_url, "reggie", secret, method, path, body)

    call = signed(
        "POST",
        "/api/v1/tool-calls/",
        {
            "tool_id": "test.notes.read",
            "arguments": {"q": "Ruby"},
            "reason": "check Ruby's outing",
            "task_id": str(turn.task_id),
        },
    ).json()
    done = signed(
        "POST",
        f"/api/v1/turns/{turn.pk}/complete/",
        {"answer": "Yes, and the bus has a lift.", "tool_calls": [call["call_id"]]},
    )
    assert done.status_code == 200, done.text
    page.wait_for_selector(f"#turn-{turn.pk}[data-status='completed']", timeout=10000)
    shown = page.inner_text(f"#turn-{turn.pk}")
    assert "Yes, and the bus has a lift." in shown and "test.notes.read" in shown
    # From the call, its chain; from the chain, back to this conversation.
    page.click(f"#turn-{turn.pk} a:has-text('test.notes.read')")
    page.wait_for_selector(".first-link")
    assert "Linh Tran" in page.inner_text(".first-link")
    page.click(".first-link a")
    page.wait_for_selector(f"#turn-{turn.pk}")
    screenshot(page, "conversation")
