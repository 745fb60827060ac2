"""Conversations on the record: inbound messages in the events ledger, turns in the agents ledger
(Merkle-chained, tamper-evident), queue modes, compaction, memory provenance.
(Delegation: test_delegation.py; learning cards: test_learning_cards.py.)"""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test import Client
from django.utils import timezone

from brainframe.events import MessageReceived  # noqa: F401 - the event exists
from brainframe.models import (
    Agent,
    AgentNote,
    AgentTask,
    ContextBucketEntry,
    EventLogEntry,
    LedgerEvent,
    Message,
    QueuedMessage,
    Session,
    Turn,
)
from brainframe.services.ledger.ledgers import ledgers_verify, thread_verify
from tests.brainframe.ledger.conftest import CHAT_TOKEN, SMS_TOKEN, agent_call
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db


def _sms(client: Client, message_id: str, text: str, sender: str = "0412 345 678") -> Any:
    return client.post(
        "/api/v1/channels/sms-main/",
        json.dumps({"message_id": message_id, "from": sender, "to": "+61700000000", "body": text}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {SMS_TOKEN}",
    )


def _answer(agent: SignedClient, turn_id: str, answer: str, calls: list[str] = ()) -> Any:  # type: ignore[assignment]
    return agent.post(
        f"/api/v1/turns/{turn_id}/complete/", {"answer": answer, "tool_calls": list(calls)}
    )


def test_an_sms_from_a_family_member_is_kept_answered_and_linked(
    people: dict[str, Any], reggie: SignedClient, client: Client, admin_client: Client
) -> None:
    response = _sms(client, "SM1", "Hi, is Ruby's Friday outing still on?")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["handled"] == "turn" and body["known_sender"] is True
    event = LedgerEvent.objects.get(pk=body["event_id"])
    assert (event.person, event.sender, event.channel) == (people["mum"], "+61412345678", "sms")
    assert event.origin_id is not None and str(event.origin_id) == body["o_tag"]

    turn = Turn.objects.get(pk=body["turn_id"])
    assert turn.origin_id == event.origin_id and turn.status == "open"
    assert turn.channel_context["channel"] == "sms"
    assert turn.channel_context["max_length"] == 480 and turn.channel_context["markdown"] is False
    task = AgentTask.objects.get(pk=turn.task_id)
    assert task.agent_id == "reggie" and task.o_tag_id == event.origin_id
    assert task.payload["turn_id"] == str(turn.pk)

    # Reggie reads the turn, calls a tool under the message's O-Tag, and answers.
    seen = reggie.get(f"/api/v1/turns/{turn.pk}/").json()
    assert seen["messages"][0]["content"] == "Hi, is Ruby's Friday outing still on?"
    assert seen["messages"][0]["person"] == str(people["mum"].pk)
    call = agent_call(reggie, "test.notes.read", task_id=str(task.pk))
    assert call["o_tag"] == str(event.origin_id)
    done = _answer(reggie, str(turn.pk), "Yes, the bus leaves at 10.", [call["call_id"]])
    assert done.status_code == 200, done.content
    assert done.json()["status"] == "completed" and done.json()["hash"]
    assert done.json()["tool_calls"] == [call["call_id"]]
    assert [m["role"] for m in done.json()["messages"]] == ["user", "answer"]

    # The board: the conversation shows the message, the call and the answer; the call's chain
    # view links back to the conversation.
    page = admin_client.get(f"/board/conversations/{turn.thread_id}/").content.decode()
    assert "Ruby&#x27;s Friday outing" in page and "Yes, the bus leaves at 10." in page
    assert "test.notes.read" in page and f"events ledger #{event.seq}" in page
    chain = admin_client.get(f"/board/calls/{call['call_id']}/chain/").content.decode()
    assert f"/board/conversations/{turn.thread_id}/#turn-{turn.pk}" in chain
    assert "Linh Tran" in chain
    listing = admin_client.get("/board/conversations/").content.decode()
    assert "Linh Tran" in listing
    assert ledgers_verify() == []
    names = set(EventLogEntry.objects.values_list("name", flat=True))
    assert {
        "conversation:message_received",
        "conversation:turn_started",
        "conversation:turn_ended",
    } <= names


def test_a_redelivered_message_is_kept_once(people: dict[str, Any], client: Client) -> None:
    first = _sms(client, "SM-dup", "hello")
    again = _sms(client, "SM-dup", "hello")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["event_id"] == first.json()["event_id"]
    assert LedgerEvent.objects.count() == 1 and Turn.objects.count() == 1


def test_unknown_senders_group_chats_and_bad_requests(
    people: dict[str, Any], client: Client
) -> None:
    unknown = _sms(client, "SM2", "who is this?", sender="+61499999999").json()
    assert unknown["known_sender"] is False
    assert LedgerEvent.objects.get(pk=unknown["event_id"]).person is None

    def chat(payload: dict[str, Any], token: str = CHAT_TOKEN) -> Any:
        return client.post(
            "/api/v1/channels/chat-main/",
            json.dumps(payload),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )

    group = chat(
        {"message_id": "c1", "sender": "@Sam", "chat_id": "G-42", "is_group": True, "text": "hi"}
    )
    assert group.status_code == 201
    assert group.json()["session"] == "agent:reggie:chat:g-42"
    turn = Turn.objects.get(pk=group.json()["turn_id"])
    assert turn.channel_context["markdown"] is True

    refused = chat({"message_id": "c2", "sender": "@sam", "text": "hi"}, token="wrong")
    assert refused.status_code == 401 and refused.json()["code"] == "bad_channel_token"
    missing = chat({"message_id": "c3", "sender": "@sam"})
    assert missing.status_code == 400
    assert missing.json() == {
        "code": "invalid_message",
        "detail": "text is required and must be a non-empty string",
        "field": "text",
    }
    assert (
        chat({"message_id": "c4", "sender": "@sam", "is_group": True, "text": "x"}).json()["field"]
        == "chat_id"
    )
    nowhere = client.post(
        "/api/v1/channels/nope/", "{}", content_type="application/json", HTTP_AUTHORIZATION="x"
    )
    assert nowhere.status_code == 404 and nowhere.json()["code"] == "unknown_channel"
    assert LedgerEvent.objects.count() == 2  # nothing half-written by the refusals


def _mode(people: dict[str, Any], mode: str) -> Session:
    Agent.objects.filter(agent_id="reggie").update(config={"queue_mode": mode})
    return Session.objects.get(key="agent:reggie:sms:+61412345678")


def test_queue_mode_steer_adds_the_message_to_the_turn_in_progress(
    people: dict[str, Any], reggie: SignedClient, client: Client
) -> None:
    first = _sms(client, "q1", "Can Ruby go to the beach Friday?").json()
    session = _mode(people, "steer")
    second = _sms(client, "q2", "Actually make it Saturday").json()
    assert second["handled"] == "steer" and second["turn_id"] == first["turn_id"]
    turn = reggie.get(f"/api/v1/turns/{first['turn_id']}/").json()
    assert [(m["role"], m["content"]) for m in turn["messages"]] == [
        ("user", "Can Ruby go to the beach Friday?"),
        ("steer", "Actually make it Saturday"),
    ]
    assert Turn.objects.filter(thread=session.thread).count() == 1


def test_queue_mode_followup_opens_one_turn_per_waiting_message_in_order(
    people: dict[str, Any], reggie: SignedClient, client: Client
) -> None:
    first = _sms(client, "f1", "first").json()
    _mode(people, "followup")
    assert _sms(client, "f2", "second").json()["handled"] == "followup"
    assert _sms(client, "f3", "third").json()["handled"] == "followup"
    assert Turn.objects.count() == 1
    _answer(reggie, first["turn_id"], "one")
    second = Turn.objects.get(seq=2)
    assert [m.content for m in second.messages.order_by("seq")] == ["second"]
    assert second.task is not None and second.task.payload["turn_id"] == str(second.pk)
    _answer(reggie, str(second.pk), "two")
    third = Turn.objects.get(seq=3)
    assert [m.content for m in third.messages.order_by("seq")] == ["third"]
    assert not QueuedMessage.objects.filter(taken_by__isnull=True).exists()


def test_queue_mode_collect_opens_one_turn_with_every_waiting_message(
    people: dict[str, Any], reggie: SignedClient, client: Client
) -> None:
    first = _sms(client, "c1", "first").json()
    session = _mode(people, "followup")
    Session.objects.filter(pk=session.pk).update(queue_mode="collect")  # the session's own mode
    assert _sms(client, "c2", "second").json()["handled"] == "collect"
    assert _sms(client, "c3", "third").json()["handled"] == "collect"
    _answer(reggie, first["turn_id"], "one")
    turns = list(Turn.objects.order_by("seq"))
    assert len(turns) == 2
    assert [m.content for m in turns[1].messages.order_by("seq")] == ["second", "third"]


def test_queue_mode_interrupt_ends_the_turn_and_starts_another(
    people: dict[str, Any], reggie: SignedClient, client: Client
) -> None:
    first = _sms(client, "i1", "book the bus").json()
    _mode(people, "interrupt")
    second = _sms(client, "i2", "stop, cancel that").json()
    assert second["handled"] == "interrupt" and second["turn_id"] != first["turn_id"]
    old = Turn.objects.get(pk=first["turn_id"])
    assert old.status == "interrupted" and old.row_hash
    assert AgentTask.objects.get(pk=old.task_id).status == "cancelled"
    late = _answer(reggie, first["turn_id"], "booked")
    assert late.status_code == 409 and late.json()["code"] == "turn_interrupted"
    new = Turn.objects.get(pk=second["turn_id"])
    assert new.parent_id == old.pk and new.parent_hash == old.row_hash
    assert _answer(reggie, str(new.pk), "cancelled").status_code == 200
    assert ledgers_verify() == []


def _thread_of_turns(reggie: SignedClient, n: int) -> tuple[str, list[str]]:
    first = reggie.post("/api/v1/turns/", {"text": "turn 1", "title": "a long job"}).json()
    thread, ids = first["thread"], [first["turn_id"]]
    _answer(reggie, first["turn_id"], "answer 1")
    for i in range(2, n + 1):
        turn = reggie.post("/api/v1/turns/", {"text": f"turn {i}", "thread": thread}).json()
        _answer(reggie, turn["turn_id"], f"answer {i}")
        ids.append(turn["turn_id"])
    return thread, ids


def test_compaction_twice_keeps_the_whole_history(
    people: dict[str, Any], reggie: SignedClient
) -> None:
    thread, ids = _thread_of_turns(reggie, 4)
    one = reggie.post(
        f"/api/v1/threads/{thread}/compact/",
        {"summary": "S1: turns 1-2", "summarised_through": ids[1], "first_kept": ids[2]},
    )
    assert one.status_code == 201, one.content
    assert one.json()["turn_type"] == "compaction" and one.json()["seq"] == 5
    context = reggie.get(f"/api/v1/threads/{thread}/context/").json()
    assert context["summary"] == "S1: turns 1-2"
    assert [t["seq"] for t in context["turns"]] == [3, 4]

    more = reggie.post("/api/v1/turns/", {"text": "turn 6", "thread": thread}).json()
    assert more["parent_hash"] == one.json()["hash"]  # later turns point at the compaction
    _answer(reggie, more["turn_id"], "answer 6")
    two = reggie.post(
        f"/api/v1/threads/{thread}/compact/",
        {
            "summary": "S2: S1 and turns 3-4",
            "summarised_through": one.json()["turn_id"],
            "first_kept": more["turn_id"],
        },
    )
    assert two.status_code == 201
    context = reggie.get(f"/api/v1/threads/{thread}/context/").json()
    assert context["summary"] == "S2: S1 and turns 3-4"
    assert [t["seq"] for t in context["turns"]] == [6]
    # Nothing deleted: every turn is still there, in one verified chain.
    assert Turn.objects.filter(thread_id=thread).count() == 7
    assert Message.objects.filter(turn__thread_id=thread).count() == 10
    assert thread_verify(Turn.objects.get(pk=ids[0]).thread_id) == []

    bad = reggie.post(
        f"/api/v1/threads/{thread}/compact/",
        {"summary": "x", "summarised_through": ids[3], "first_kept": ids[0]},
    )
    assert bad.status_code == 400 and bad.json()["field"] == "first_kept"


def test_a_changed_message_is_detected_and_breaks_every_later_hash(
    people: dict[str, Any], reggie: SignedClient
) -> None:
    _thread, ids = _thread_of_turns(reggie, 4)
    call_command("verify_audit", stdout=StringIO())
    # The application cannot rewrite a message or a sealed turn...
    with (
        pytest.raises(Exception, match="append_only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("UPDATE ledger_messages SET content = 'x' WHERE turn_id = %s", [ids[1]])
    # ...someone with the table owner's rights can: the verification sees it.
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        cursor.execute(
            "UPDATE ledger_messages SET content = 'turn 2 (edited)' WHERE turn_id = %s AND seq = 1",
            [ids[1]],
        )
        cursor.execute("SET session_replication_role = DEFAULT")
    problems = thread_verify(Turn.objects.get(pk=ids[0]).thread_id)
    assert any("message 1 of turn" in p and ids[1] in p for p in problems)
    broken = [p for p in problems if "hash does not match its messages" in p]
    assert [p.split(" turn ")[1].split(" ")[0] for p in broken] == ["2", "3", "4"]
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("verify_audit", stdout=StringIO(), stderr=err)
    assert ids[1] in err.getvalue()


def test_the_events_ledger_is_chained_and_a_change_is_detected(
    people: dict[str, Any], client: Client
) -> None:
    for n in range(3):
        _sms(client, f"e{n}", f"message {n}")
    assert [e.seq for e in LedgerEvent.objects.order_by("seq")] == [1, 2, 3]
    assert ledgers_verify() == []
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        cursor.execute("UPDATE events_ledger SET text = 'forged' WHERE seq = 2")
        cursor.execute("SET session_replication_role = DEFAULT")
    forged = LedgerEvent.objects.get(seq=2).pk
    assert ledgers_verify() == [
        f"events ledger #2 (id {forged}): row hash does not match its content"
    ]


def test_type3_webhooks_are_kept_in_the_events_ledger(seeded: None) -> None:
    from brainframe.services.ledger.inbound import inbound_event_record

    voice = Agent.objects.get(agent_id="reggie-voice")
    event = {"event_id": "call-1", "event_type": "call.ended", "platform": "livekit", "text": "hi"}
    result = inbound_event_record(agent=voice, event=event)
    kept = LedgerEvent.objects.get(external_id="call-1")
    assert (kept.kind, kept.channel, kept.origin_id) == ("webhook", "webhook", result.origin.pk)
    inbound_event_record(agent=voice, event=event)  # a redelivery: kept once
    assert LedgerEvent.objects.count() == 1


def test_provenance_is_kept_and_updated_on_read(
    people: dict[str, Any], henry: SignedClient
) -> None:
    made = henry.post(
        "/api/v1/observations/",
        {
            "bucket": "transportation",
            "entity": "bus 2",
            "pattern_type": "preference",
            "observation": "bus 2 has the wheelchair lift",
            "confidence": 0.7,
            "source": "session",
        },
    )
    assert made.status_code == 201, made.content
    entry = ContextBucketEntry.objects.get(pk=made.json()["id"])
    assert (entry.created_by, entry.source, entry.confidence, entry.access_count) == (
        "agent:henry",
        "session",
        0.7,
        0,
    )
    note = AgentNote.objects.filter(agent_id="henry", active=True).first()
    assert note is not None
    before = note.access_count
    for n in (1, 2):
        context = henry.get("/api/v1/context/?bucket=transportation&limit=50").json()
        seen = next(o for o in context["observations"] if o["id"] == str(entry.pk))
        assert seen["provenance"]["access_count"] == n - 1  # as it stood before this read
        assert seen["provenance"]["created_by"] == "agent:henry"
    entry.refresh_from_db()
    note.refresh_from_db()
    assert entry.access_count == 2 and entry.last_accessed_at is not None
    assert note.access_count == before + 2


def test_the_minute_timer_is_kept_as_hourly_aggregates(db: None) -> None:
    from brainframe.jobs import job_run
    from brainframe.models import TimerTicks
    from brainframe.services.ledger.ledgers import timer_tick

    base = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=5)

    for minute in (0, 1, 59):
        timer_tick(base + timedelta(minutes=minute, seconds=3))
    timer_tick(base + timedelta(hours=1, seconds=1))
    rows = list(TimerTicks.objects.order_by("hour").values_list("hour", "ticks"))
    assert rows == [(base, 3), (base + timedelta(hours=1), 1)]
    assert TimerTicks.objects.get(hour=base).last_at == base + timedelta(minutes=59, seconds=3)
    # The beat's minute job counts its tick.
    result = job_run(name="hook_timer")
    assert result["tick"] >= 1


def test_a_whole_turn_recorded_at_once_joins_the_chain(
    people: dict[str, Any], reggie: SignedClient, henry: SignedClient
) -> None:
    call = agent_call(reggie, "test.notes.read")
    first = reggie.post(
        "/api/v1/turns/record/",
        {
            "text": "Linh rang: is the bus booked?",
            "notes": ["looked it up"],
            "answer": "Yes, for 10 am.",
            "tool_calls": [call["call_id"]],
            "title": "a call",
            "channel": "sms",
        },
    )
    assert first.status_code == 201, first.content
    body = first.json()
    assert body["status"] == "completed" and body["hash"] and body["seq"] == 1
    assert [m["role"] for m in body["messages"]] == ["user", "agent", "answer"]
    assert body["channel_context"]["channel"] == "sms"
    second = reggie.post(
        "/api/v1/turns/record/",
        {"text": "and the van?", "answer": "Not needed.", "thread": body["thread"]},
    ).json()
    assert second["seq"] == 2 and second["parent_hash"] == body["hash"]
    assert ledgers_verify() == []
    # Not another agent's calls, not another agent's thread, not while a turn is open.
    theirs = agent_call(henry, "test.notes.read")
    refused = reggie.post(
        "/api/v1/turns/record/",
        {"text": "x", "answer": "y", "tool_calls": [theirs["call_id"]]},
    )
    assert refused.status_code == 400 and refused.json()["field"] == "tool_calls"
    assert (
        henry.post(
            "/api/v1/turns/record/", {"text": "x", "answer": "y", "thread": body["thread"]}
        ).json()["code"]
        == "unknown_thread"
    )
    reggie.post("/api/v1/turns/", {"text": "open", "thread": body["thread"]})
    busy = reggie.post(
        "/api/v1/turns/record/", {"text": "x", "answer": "y", "thread": body["thread"]}
    )
    assert busy.status_code == 409 and busy.json()["code"] == "turn_in_progress"
    assert Turn.objects.filter(thread_id=body["thread"]).count() == 3  # nothing half-written
