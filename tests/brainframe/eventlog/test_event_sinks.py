"""SIEM sinks: the event log POSTed to a real local HTTP receiver, signed, at least once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from brainframe.events import PolicyChanged, TaskChanged, append_events
from brainframe.models import EventLogEntry, EventSink
from brainframe.services.eventlog.reading import event_log_verify
from brainframe.services.eventlog.sinks import SinkError, signature, sink_set, sinks_deliver
from tests.mail_servers import WebhookReceiver

pytestmark = pytest.mark.django_db
SECRET = "a-sink-secret-of-some-length"


@pytest.fixture
def receiver_failing_twice() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver(failures=2)
    yield receiver
    receiver.close()


def _events(n: int) -> None:
    append_events(
        [TaskChanged(agent_id="henry", task_id=f"t{i}", status="todo") for i in range(n)]
        + [PolicyChanged(kind="primedirective", policy_id="7", action="changed")]
    )


def test_every_event_arrives_signed_at_least_once_through_failures(
    receiver_failing_twice: WebhookReceiver,
) -> None:
    receiver = receiver_failing_twice
    sink_set(name="siem", url=receiver.url, secret=SECRET, batch_size=4)
    _events(9)  # 10 events: henry's 9 and one of the system's
    now = timezone.now()

    first = sinks_deliver(now=now)  # the receiver answers 500: nothing moves
    assert "HTTP 500" in first[0]["error"]
    sink = EventSink.objects.get(name="siem")
    assert sink.cursor == {} and sink.failures == 1
    assert sinks_deliver(now=now) == []  # backing off: not due yet
    later = now + timedelta(seconds=21)
    assert "HTTP 500" in sinks_deliver(now=later)[0]["error"]  # second failure
    sink.refresh_from_db()
    assert sink.next_attempt_at is not None and sink.next_attempt_at >= later + timedelta(
        seconds=40
    )

    result = sinks_deliver(now=later + timedelta(seconds=41))
    assert result[0] == {"sink": "siem", "delivered": 10}
    delivered = [json.loads(body) for body in receiver.bodies[2:]]
    ids = [e["id"] for batch in delivered for e in batch["events"]]
    assert len(ids) == len(set(ids)) == 10
    assert [i for i in ids if i.startswith("henry:")] == [f"henry:{n}" for n in range(1, 10)]
    # Each request is signed over "<timestamp>.<body>" with the sink's secret.
    for body, headers in zip(receiver.bodies, receiver.headers, strict=True):
        assert headers["X-Rabs-Signature"] == signature(SECRET, headers["X-Rabs-Timestamp"], body)
    # Each event carries its chain evidence.
    event = delivered[0]["events"][0]
    row = EventLogEntry.objects.get(stream=event["stream"], seq=event["seq"])
    assert (event["prev_hash"], event["row_hash"]) == (row.prev_hash, row.row_hash)
    assert event_log_verify() == []

    sink.refresh_from_db()
    assert sink.delivered == 10 and sink.failures == 0 and sink.last_error == ""
    assert sinks_deliver(now=later + timedelta(minutes=5))[0]["delivered"] == 0  # nothing new
    _events(1)
    assert sinks_deliver(now=later + timedelta(minutes=6))[0]["delivered"] == 2


def test_a_sink_sent_again_from_the_start_repeats_the_same_ids(
    receiver_failing_twice: WebhookReceiver,
) -> None:
    receiver = receiver_failing_twice
    receiver.bodies += [b"{}", b"{}"]  # no failures left
    receiver.headers += [{}, {}]
    sink_set(name="siem", url=receiver.url, secret=SECRET)
    _events(3)
    sinks_deliver()
    EventSink.objects.filter(name="siem").update(cursor={})  # the admin's "send again"
    sinks_deliver()
    first, second = (json.loads(b) for b in receiver.bodies[2:4])
    assert [e["id"] for e in first["events"]] == [e["id"] for e in second["events"]]
    assert first["delivery_id"] != second["delivery_id"]


def test_a_sink_can_take_only_some_families(receiver_failing_twice: WebhookReceiver) -> None:
    receiver = receiver_failing_twice
    receiver.bodies += [b"{}", b"{}"]
    receiver.headers += [{}, {}]
    sink_set(name="governance-only", url=receiver.url, secret=SECRET, families=["governance"])
    _events(5)
    assert sinks_deliver()[0]["delivered"] == 1
    sent = json.loads(receiver.bodies[2])["events"]
    assert [e["name"] for e in sent] == ["governance:policy_changed"]


@pytest.mark.parametrize(
    ("given", "code", "field"),
    [
        ({"url": "ftp://siem.example"}, "invalid_url", "url"),
        ({"families": ["nonsense"]}, "unknown_family", "families"),
        ({"secret": ""}, "secret_required", "secret"),
        ({"secret": "short"}, "secret_too_short", "secret"),
        ({"batch_size": 0}, "invalid_batch_size", "batch_size"),
    ],
)
def test_a_bad_sink_is_refused_with_its_field(given: dict[str, Any], code: str, field: str) -> None:
    arguments: dict[str, Any] = {"name": "x", "url": "https://siem.example/in", "secret": SECRET}
    with pytest.raises(SinkError) as refused:
        sink_set(**{**arguments, **given})
    assert (refused.value.code, refused.value.field) == (code, field)
    assert not EventSink.objects.exists()
