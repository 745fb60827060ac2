"""A Matrix conversation on the board in a real browser: the room's messages read straight from
the homeserver, the answer's delivery state in its turn, and a staff member's post from the chat
box coming back as their message."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from brainframe.models import Turn
from brainframe.services.access.credentials import agent_credential_issue
from broker.channels.matrix import bot_user_id
from rabs.stack.matrix import Homeserver
from tests import factories as f
from tests.broker.channels.test_matrix_chat import chat_world, eventually
from tests.signing import SignedClient

from .conftest import screenshot

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_conversation_shows_the_room_and_the_answers_delivery(
    open_page: Any, matrix: Homeserver
) -> None:
    world = chat_world(matrix)
    linh, room = world["linh"], world["room"]
    linh.say(room, "Can Ruby bring a friend on Friday?")
    turn = eventually(lambda: Turn.objects.filter(agent_id="henry", session__isnull=False).first())
    henry = SignedClient(Client(), "henry", agent_credential_issue(agent=world["henry"]))
    done = henry.post(
        f"/api/v1/turns/{turn.pk}/complete/",
        {"answer": "Yes, **one friend** is welcome.", "tool_calls": []},
    )
    assert done.status_code == 200, done.content
    linh.wait_for(room, lambda ms: any(m["sender"] == bot_user_id("henry") for m in ms))

    staff = f.UserFactory(username="sam", is_staff=True)
    page = open_page(staff, f"/board/conversations/{turn.thread_id}/")
    chat = page.inner_text("#conversation-chat")
    assert "Can Ruby bring a friend on Friday?" in chat and "one friend" in chat
    assert page.locator("#conversation-chat .from-agent").count() == 1
    delivery = page.locator(f"#turn-{turn.pk} .delivery")
    assert delivery.get_attribute("data-state") == "delivered"
    assert "Answer sent on chat" in delivery.inner_text()

    # Sam posts from the chat box: it goes to the room as Sam, and comes back as a message that
    # opens Henry's next turn, shown without a reload.
    page.fill("#conversation-chat input[name=text]", "Ruby's carer will call you today.")
    page.click("#conversation-chat button[type=submit]")
    page.wait_for_selector(
        '#conversation-chat .chat-line:has-text("Ruby\'s carer will call you today.")',
        timeout=15000,
    )
    page.wait_for_selector("li.turn[data-seq='2']", timeout=20000)
    assert "Ruby's carer will call you today." in page.inner_text("li.turn[data-seq='2']")
    screenshot(page, "conversation-chat")
