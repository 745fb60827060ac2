"""Chat lives in Matrix (docs/channels.md), against a real homeserver (Synapse) and real clients:
a person opens a room with Henry from their own client, their message comes in through the same
ACL → ledger → turn path as any, Henry reads the room and posts over MCP (``chat.room.read``,
``chat.assistant.post``, governed and audited), and his answer is posted in the room by his bot
account; the agent's own posts wake nobody."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx2
import pytest
from django.utils import timezone
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from brainframe.events.base import MESSAGE_RECEIVED
from brainframe.models import (
    Agent,
    ChannelAdapter,
    ChannelIdentity,
    EventLogEntry,
    LedgerEvent,
    MatrixRoom,
    OutboundMessage,
    Person,
    ToolCall,
    Turn,
)
from brainframe.services.access.acl import acl_load
from brainframe.services.access.credentials import agent_token_issue
from brainframe.services.ledger.channels import token_hash
from brainframe.services.ledger.ledgers import normalise_address
from brainframe.services.seed import seed_brainframe
from brainframe.services.work.loop import loop_traffic
from broker.channels.matrix import bot_user_id
from rabs.stack.matrix import Homeserver
from tests.matrix_people import MatrixPerson

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CHAT_TO_HENRY = """
name: chat-to-henry
priority: 60
when: {field: message.channel, op: eq, value: chat}
effect: allow
permissions:
  tools: ["chat.*"]
  scopes: {participant: own, recipient: sender}
"""


def eventually(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def mcp(url: str, token: str, name: str, arguments: dict[str, Any], **meta: Any) -> Any:
    async def run() -> Any:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            return await client.call_tool(name, arguments, meta=meta or None)

    return asyncio.run(run())


def chat_world(matrix: Homeserver) -> dict[str, Any]:
    seed_brainframe()
    acl_load(CHAT_TO_HENRY)
    henry = Agent.objects.get(agent_id="henry")
    henry.monitoring_level = 4
    henry.save()
    adapter = ChannelAdapter.objects.create(
        name="matrix", channel="chat", agent=henry, token_hash=token_hash("unused-inbound"),
        send_via="matrix", markdown=True,
    )  # fmt: skip
    linh = MatrixPerson(matrix, "linh")
    person = Person.objects.create(name="Linh Tran", relationship="family")
    ChannelIdentity.objects.create(
        person=person, channel="chat", address=normalise_address("chat", linh.user_id)
    )
    room = linh.open_room(invite=[bot_user_id("henry")], name="Ruby's week")
    # The invitation reaches the control plane; Henry's bot joins and the room is his.
    assert eventually(lambda: MatrixRoom.objects.filter(room_id=room, agent=henry).exists())
    assert eventually(lambda: bot_user_id("henry") in linh.members(room))
    return {"henry": henry, "adapter": adapter, "linh": linh, "room": room, "person": person}


def test_a_person_in_a_room_is_answered_in_the_room_by_henrys_bot(
    matrix: Homeserver, live_server_url: str
) -> None:
    world = chat_world(matrix)
    linh, room, bot = world["linh"], world["room"], bot_user_id("henry")
    linh.say(room, "Is Ruby's outing still on Friday?")
    turn = eventually(lambda: Turn.objects.filter(agent_id="henry", session__isnull=False).first())
    assert turn is not None and turn.session.channel == "chat"
    event = LedgerEvent.objects.get()
    assert event.person == world["person"] and event.text == "Is Ruby's outing still on Friday?"
    assert MatrixRoom.objects.get(room_id=room).session_id == turn.session_id

    # Henry, over MCP: reads the room straight from the homeserver, says a word, answers.
    token = agent_token_issue(agent=world["henry"])
    meta = {"rabs/task_id": str(turn.task_id), "rabs/reason": "answer Linh"}
    read = mcp(live_server_url, token, "chat.room.read", {}, **meta)
    assert not read.is_error, read.content[0].text
    assert [m["text"] for m in read.structured_content["messages"]] == [
        "Is Ruby's outing still on Friday?"
    ]
    posted = mcp(live_server_url, token, "chat.assistant.post", {"text": "Checking…"}, **meta)
    assert not posted.is_error and posted.structured_content["to"] == room
    done = mcp(
        live_server_url,
        token,
        "ledger.turn_complete",
        {"turn_id": str(turn.pk), "answer": "**Yes**: Friday at *9:30*, back by 3."},
    )
    assert done.structured_content["status"] == "completed"

    # Read back with Linh's own client: both posts are the bot's, the answer rendered.
    seen = linh.wait_for(room, lambda ms: sum(m["sender"] == bot for m in ms) >= 2)
    mine = [m for m in seen if m["sender"] == bot]
    assert [m["body"] for m in mine] == ["Checking…", "**Yes**: Friday at *9:30*, back by 3."]
    assert "<strong>Yes</strong>" in mine[1]["html"] and "<em>9:30</em>" in mine[1]["html"]
    reply = OutboundMessage.objects.get(kind="reply")
    assert reply.state == "delivered" and reply.provider_id.startswith("$")
    assert ToolCall.objects.get(pk=reply.call_id).requested_tool_id == "channel.reply"
    assert {c.requested_tool_id for c in ToolCall.objects.filter(agent_id="henry")} >= {
        "chat.room.read",
        "chat.assistant.post",
        "channel.reply",
    }

    # Henry yields his turn over MCP and sleeps; Linh's next message wakes him. Only people's
    # posts are news: it comes in, the bot's two never did.
    woke: list[Any] = []
    yielded_at = timezone.now()
    sleeper = threading.Thread(
        target=lambda: woke.append(
            mcp(live_server_url, token, "loop.yield_turn", {"timeout_s": 30})
        )
    )
    sleeper.start()
    time.sleep(1.0)
    linh.say(room, "Thanks!")
    sleeper.join(timeout=40)
    assert woke and woke[0].structured_content["woke"]
    assert "message" in {t["kind"] for t in woke[0].structured_content["traffic"]}
    # the task the message took up is traffic too (written a moment after the message that woke
    # him, so it may come after the wake-up's own reading)
    assert eventually(
        lambda: {"task", "message"}
        <= {t["kind"] for t in loop_traffic(agent_id="henry", since=yielded_at)}
    )
    assert eventually(lambda: LedgerEvent.objects.count() == 2)
    time.sleep(0.5)  # the homeserver sends in order: the bot's posts came before "Thanks!"
    assert set(LedgerEvent.objects.values_list("sender", flat=True)) == {
        normalise_address("chat", linh.user_id)
    }
    assert EventLogEntry.objects.filter(name=MESSAGE_RECEIVED).count() == 2
