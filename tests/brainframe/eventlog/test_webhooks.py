"""Events pushed to a subscribed external agent (a platform without A2A), against a local
receiver that checks each signature as agents' requests are checked, and answers the first
delivery too late: retried with backoff, once per event and subscriber."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.utils import timezone

from agents_vm.client.signing import sign
from brainframe.models import Agent, WebhookDelivery
from brainframe.services.eventlog.webhooks import (
    WebhookRefusal,
    webhook_subscribe,
    webhooks_deliver,
    webhooks_enqueue,
    webhooks_run,
)
from brainframe.services.ledger.inbound import InboundRefusal, inbound_event_record

pytestmark = pytest.mark.django_db


class Receiver:
    """A platform's webhook endpoint: verifies RABS-HMAC with the subscription's secret, keeps
    what it accepted, and sleeps through the first request (late)."""

    def __init__(self) -> None:
        self.secret = ""
        self.received: list[dict[str, Any]] = []
        self.late = 1

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/hooks/rabs?x=1"

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                fields = dict(
                    part.split("=", 1)
                    for part in self.headers["X-RABS-Signature"]
                    .removeprefix("RABS-HMAC ")
                    .split(",")
                )
                expected = sign(
                    receiver.secret.encode(), "POST", self.path, fields["ts"], fields["nonce"], body
                )
                valid = expected == fields["sig"]
                receiver.received.append(
                    {
                        "valid": valid,
                        "delivery": self.headers["X-RABS-Delivery"],
                        "event": self.headers["X-RABS-Event"],
                        "body": json.loads(body),
                    }
                )
                if receiver.late > 0:
                    receiver.late -= 1
                    time.sleep(1.5)  # past the sender's timeout
                self.send_response(204 if valid else 401)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    receiver.start()
    yield receiver
    receiver.httpd.shutdown()
    receiver.httpd.server_close()


def test_a_subscribed_platform_gets_each_event_once_signed_and_retried(
    seeded: None, receiver: Receiver, settings: Any, admin_client: Any
) -> None:
    settings.RABS_WEBHOOK_TIMEOUT_SECONDS = 1.0
    voice = Agent.objects.get(agent_id="reggie-voice")
    with pytest.raises(WebhookRefusal):  # only external agents are pushed events
        webhook_subscribe(agent=Agent.objects.get(agent_id="henry"), url=receiver.url)
    # What happened before the subscription is not sent.
    inbound_event_record(
        agent=voice,
        event={"event_id": "call-1", "event_type": "call", "platform": "livekit", "text": "hi"},
    )
    subscription, receiver.secret = webhook_subscribe(
        agent=voice, url=receiver.url, event_types=["inbound:received", "task"]
    )
    webhooks_run()
    assert receiver.received == []

    inbound_event_record(
        agent=voice,
        event={
            "event_id": "call-2",
            "event_type": "call.ended",
            "platform": "livekit",
            "text": "Caller asked to move Tuesday's outing",
            "task": {"title": "Move Tuesday's outing", "assign_to": "henry"},
        },
    )
    counts = webhooks_run()
    assert counts["retrying"] >= 1  # the receiver answered too late
    deliveries = list(WebhookDelivery.objects.filter(subscription=subscription).order_by("id"))
    assert {d.event.name for d in deliveries} == {"inbound:received", "task:changed"}
    assert webhooks_enqueue() == 0  # read again: nothing new, nothing made twice
    late = next(d for d in deliveries if d.attempts == 1 and d.state == "pending")
    assert late.last_error and late.next_attempt_at > timezone.now()
    # The board shows where each delivery stands.
    page = admin_client.get("/board/webhooks/").content.decode()
    assert f'data-delivery="{late.pk}" data-state="pending"' in page
    assert "reggie-voice" in page and receiver.url.split("?")[0] in page
    # Not yet due: nothing is sent again.
    assert webhooks_deliver()["delivered"] == 0
    webhooks_deliver(now=timezone.now() + timedelta(seconds=3))
    states = {d.pk: (d.state, d.attempts) for d in WebhookDelivery.objects.all()}
    assert all(state == "delivered" for state, _ in states.values())
    assert states[late.pk] == ("delivered", 2)
    page = admin_client.get("/board/webhooks/").content.decode()
    assert f'data-delivery="{late.pk}" data-state="delivered"' in page
    webhooks_run()
    assert all(r["valid"] for r in receiver.received)
    # Each delivery reached the receiver until it answered in time, with one id: it can tell a
    # repeat; none was made or accepted twice.
    by_delivery: dict[str, int] = {}
    for r in receiver.received:
        by_delivery[r["delivery"]] = by_delivery.get(r["delivery"], 0) + 1
    assert sorted(by_delivery.values()) == [1, 2]
    inbound = next(r for r in receiver.received if r["event"] == "inbound:received")
    o_tag = inbound["body"]["o_tag"]
    assert o_tag and inbound["body"]["event"]["payload"]["platform"] == "livekit"
    # The platform's result comes back by the signed inbound endpoint and joins that chain.
    result = inbound_event_record(
        agent=voice,
        event={
            "event_id": "result-1", "event_type": "call.summary", "platform": "livekit",
            "text": "The caller agreed to Thursday", "in_reply_to": o_tag,
            "task": {"title": "Confirm Thursday", "assign_to": "henry"},
        },
    )  # fmt: skip
    assert result.task is not None and str(result.task.o_tag_id) == o_tag
    assert result.origin.metadata["in_reply_to"] == o_tag
    # A chain nobody told it of cannot be joined.
    with pytest.raises(InboundRefusal) as refused:
        inbound_event_record(
            agent=voice,
            event={"event_id": "result-2", "event_type": "x", "platform": "livekit",
                   "in_reply_to": str(uuid.uuid4())},
        )  # fmt: skip
    assert (refused.value.code, refused.value.field) == ("unknown_origin", "in_reply_to")
