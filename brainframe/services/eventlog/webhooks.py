"""Events pushed to external agents as signed webhooks (seed 000 Type 3: "RABS pushes events to
them and receives results asynchronously"; and A2A push notifications for the tasks other
agents hand us).

``webhooks_enqueue`` reads the event log after each subscription's cursor (``event_log_after``:
nothing skipped, stream by stream) and makes one delivery per matching event and subscription —
the pair is unique in the database, so a re-read, a second worker or a crash never makes two.
``webhooks_deliver`` sends what is due: claimed by a conditional update (a lease), POSTed with a
signature made exactly as agents sign what they send us (RABS-HMAC over method, path,
timestamp, nonce and the body's sha256, under the subscription's own secret), delivered on a
2xx answer, otherwise tried again with exponential backoff until ``MAX_ATTEMPTS``. Both run as
the beat's ``deliver_webhooks`` job. The receiver answers by the signed inbound endpoint
(``POST /api/v1/inbound/events/``) with the ``o_tag`` the delivery carried in its metadata.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from agents_vm.client.signing import sign
from brainframe.models import Agent, AgentTask, EventLogEntry, WebhookDelivery, WebhookSubscription
from brainframe.services.access.credentials import secret_open, secret_seal
from brainframe.services.eventlog.reading import event_log_after

MAX_ATTEMPTS = 8
FIRST_RETRY_SECONDS = 2.0
MAX_RETRY_SECONDS = 600.0
#: How long a claimed delivery is left to its sender before another may take it.
LEASE_SECONDS = 60.0


class WebhookRefusal(ValueError):
    pass


#: What a subscription of a kind is sent instead of the event (an A2A push: the task as A2A
#: shows it), registered at start-up (``BrokerConfig.ready``).
PAYLOADS: dict[str, Callable[[WebhookSubscription], dict[str, Any]]] = {}


def webhook_payload_register(
    kind: str, shape: Callable[[WebhookSubscription], dict[str, Any]]
) -> None:
    PAYLOADS[kind] = shape


def webhook_subscribe(
    *,
    agent: Agent,
    url: str,
    event_types: list[str] | None = None,
    task: AgentTask | None = None,
    token: str = "",
) -> tuple[WebhookSubscription, str]:
    """Subscribe an external agent; returns the subscription and its signing secret (shown
    once). It hears what is logged from now on. With ``task``: an A2A push subscription to
    that task's changes of state."""
    if agent.type != Agent.Type.EXTERNAL:
        raise WebhookRefusal("only external (Type 3) agents are pushed events")
    if urlsplit(url).scheme not in ("http", "https"):
        raise WebhookRefusal("the URL must be http(s)")
    secret = secrets.token_hex(32)
    subscription = WebhookSubscription.objects.create(
        agent=agent,
        kind=WebhookSubscription.Kind.A2A_PUSH if task else WebhookSubscription.Kind.EVENTS,
        url=url,
        event_types=list(event_types or []),
        task=task,
        token=token,
        secret_sealed=secret_seal(secret),
        cursor=_heads(),
    )
    return subscription, secret


def _heads() -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT stream, max(seq) FROM event_log GROUP BY stream")
        return {stream: int(seq) for stream, seq in cursor.fetchall()}


def _matches(subscription: WebhookSubscription, entry: EventLogEntry) -> bool:
    if subscription.kind == WebhookSubscription.Kind.A2A_PUSH:
        task_id = str(subscription.task_id)
        payload = entry.payload or {}
        return entry.family in ("task", "approval") and task_id in (
            str(payload.get("task_id")),
            str(entry.subject),
        )
    wanted = subscription.event_types
    return not wanted or entry.name in wanted or entry.family in wanted


def webhooks_enqueue(*, limit: int = 500) -> int:
    """Deliveries for the events logged since each subscription's cursor; how many matched
    (one already made for a pair is not made again)."""
    made = 0
    for subscription in WebhookSubscription.objects.filter(enabled=True):
        unseen = event_log_after(subscription.cursor, limit=limit)
        due = timezone.now()
        rows = [
            WebhookDelivery(subscription=subscription, event=entry, next_attempt_at=due)
            for entry in unseen.entries
            if _matches(subscription, entry)
        ]
        with transaction.atomic():
            WebhookDelivery.objects.bulk_create(rows, ignore_conflicts=True)
            # Only from where it was read: a concurrent run that moved it first wins.
            WebhookSubscription.objects.filter(
                pk=subscription.pk, cursor=subscription.cursor
            ).update(cursor=unseen.cursor)
        made += len(rows)
    return made


def retry_at(attempts: int, now: datetime) -> datetime:
    """When a delivery that failed ``attempts`` times is tried again: 2 s, 4 s, 8 s … 10 min."""
    delay = min(MAX_RETRY_SECONDS, FIRST_RETRY_SECONDS * 2 ** (attempts - 1))
    return now + timedelta(seconds=delay)


def webhook_payload(delivery: WebhookDelivery) -> dict[str, Any]:
    """What a delivery sends: the event (and the task as A2A shows it, for a push)."""
    entry, subscription = delivery.event, delivery.subscription
    shaped = PAYLOADS.get(subscription.kind)
    if shaped is not None:
        return shaped(subscription)
    return {
        "delivery_id": str(delivery.pk),
        "subscription_id": str(subscription.pk),
        "event": {
            "id": entry.pk,
            "name": entry.name,
            "family": entry.family,
            "stream": entry.stream,
            "seq": entry.seq,
            "at": entry.at.isoformat(),
            "agent_id": entry.agent_id,
            "subject": entry.subject,
            "payload": entry.payload,
        },
        "o_tag": (entry.payload or {}).get("o_tag"),
    }


def signed_headers(secret: str, url: str, body: bytes, subscription_id: str) -> dict[str, str]:
    parts = urlsplit(url)
    path = parts.path or "/"
    if parts.query:
        path += f"?{parts.query}"
    ts, nonce = str(int(time.time())), secrets.token_hex(16)
    signature = sign(secret.encode(), "POST", path, ts, nonce, body)
    return {
        "Content-Type": "application/json",
        "X-RABS-Signature": (
            f"RABS-HMAC sub={subscription_id},ts={ts},nonce={nonce},sig={signature}"
        ),
    }


def _claim(now: datetime, limit: int) -> list[WebhookDelivery]:
    """Due deliveries, leased to this sender (a conditional update: two senders never both
    take one)."""
    ids = list(
        WebhookDelivery.objects.filter(
            state=WebhookDelivery.State.PENDING, next_attempt_at__lte=now
        )
        .order_by("next_attempt_at", "id")
        .values_list("id", flat=True)[:limit]
    )
    lease = now + timedelta(seconds=LEASE_SECONDS)
    claimed = []
    for pk in ids:
        if WebhookDelivery.objects.filter(
            pk=pk, state=WebhookDelivery.State.PENDING, next_attempt_at__lte=now
        ).update(next_attempt_at=lease):
            claimed.append(pk)
    return list(
        WebhookDelivery.objects.filter(pk__in=claimed)
        .select_related("subscription", "subscription__task", "event")
        .order_by("id")
    )


def webhooks_deliver(*, now: datetime | None = None, limit: int = 100) -> dict[str, int]:
    """Send the deliveries that are due; counts by result."""
    now = now or timezone.now()
    counts = {"delivered": 0, "retrying": 0, "failed": 0}
    with httpx.Client(timeout=settings.RABS_WEBHOOK_TIMEOUT_SECONDS) as http:
        for delivery in _claim(now, limit):
            subscription = delivery.subscription
            body = json.dumps(webhook_payload(delivery), default=str).encode()
            secret = secret_open(subscription.secret_sealed) or ""
            headers = signed_headers(secret, subscription.url, body, str(subscription.pk))
            headers["X-RABS-Delivery"] = str(delivery.pk)
            headers["X-RABS-Event"] = delivery.event.name
            if subscription.token:
                headers["X-A2A-Notification-Token"] = subscription.token
            status, error = None, ""
            try:
                answer = http.post(subscription.url, content=body, headers=headers)
                status = answer.status_code
                if not 200 <= status < 300:
                    error = f"answered {status}: {answer.text[:500]}"
            except httpx.HTTPError as exc:
                error = f"{type(exc).__name__}: {exc}"[:1000]
            attempts = delivery.attempts + 1
            done = timezone.now()
            if not error:
                values: dict[str, Any] = {
                    "state": WebhookDelivery.State.DELIVERED,
                    "delivered_at": done,
                    "last_error": "",
                }
                counts["delivered"] += 1
            elif attempts >= MAX_ATTEMPTS:
                values = {"state": WebhookDelivery.State.FAILED, "last_error": error}
                counts["failed"] += 1
            else:
                values = {"next_attempt_at": retry_at(attempts, done), "last_error": error}
                counts["retrying"] += 1
            WebhookDelivery.objects.filter(pk=delivery.pk).update(
                attempts=F("attempts") + 1, last_status=status, **values
            )
    return counts


def webhooks_run() -> dict[str, int]:
    """The beat's job: new deliveries, then what is due."""
    made = webhooks_enqueue()
    return {"enqueued": made, **webhooks_deliver()}
