"""SIEM sinks: the event log out to other systems as signed JSON POSTs, at least once.

Each sink keeps a cursor (stream → last seq delivered). A delivery takes the next events after
it (``event_log_after``: nothing skipped, each stream in order), POSTs them in one request and
moves the cursor only when the receiver answered 2xx. A failure (an error status, a timeout, a
refused connection) leaves the cursor where it was and retries later with back-off (20 s
doubling to 1 h), so every event arrives at least once; a crash between the receiver's 2xx and
the cursor's save sends the same events again, which the receiver drops by their ``id``
(``<stream>:<seq>``, stable forever).

What is signed: ``X-Rabs-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>``
with ``X-Rabs-Timestamp`` (Unix seconds); a receiver checks it and refuses old timestamps.
Each event carries its chain hashes (``prev_hash``, ``row_hash``), so the receiver holds the
evidence too.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
import uuid
from datetime import timedelta
from typing import Any

import httpx
from django.db import transaction
from django.utils import timezone

from brainframe.events import EVENT_FAMILIES
from brainframe.models import EventLogEntry, EventSink
from brainframe.services.access.credentials import secret_open, secret_seal
from brainframe.services.eventlog.reading import event_log_after

log = logging.getLogger(__name__)

#: Back-off after consecutive failures: 20 s, 40 s, 80 s… at most an hour.
FIRST_RETRY_SECONDS = 20
MAX_RETRY_SECONDS = 3600
#: At most this many batches per sink per run (the next run carries on).
BATCHES_PER_RUN = 20
TIMEOUT_SECONDS = 10.0


class SinkError(Exception):
    def __init__(self, code: str, detail: str, *, field: str | None = None) -> None:
        super().__init__(detail)
        self.code, self.detail, self.field = code, detail, field


def sink_set(
    *,
    name: str,
    url: str,
    secret: str | None = None,
    families: list[str] | tuple[str, ...] = (),
    enabled: bool = True,
    batch_size: int = 100,
    sink: EventSink | None = None,
) -> EventSink:
    """Create or change a sink (``sink``: the one to change; ``secret`` None keeps its own)."""
    if not url.startswith(("https://", "http://")):
        raise SinkError("invalid_url", "the sink's URL must be http(s)", field="url")
    unknown = sorted(set(families) - set(EVENT_FAMILIES))
    if unknown:
        raise SinkError(
            "unknown_family",
            f"no such event family: {', '.join(unknown)} (known: {', '.join(EVENT_FAMILIES)})",
            field="families",
        )
    if not 1 <= batch_size <= 1000:
        raise SinkError("invalid_batch_size", "between 1 and 1000 events", field="batch_size")
    if sink is None and not secret:
        raise SinkError("secret_required", "a new sink needs a signing secret", field="secret")
    if secret is not None and len(secret) < 16:
        raise SinkError("secret_too_short", "at least 16 characters", field="secret")
    sink = sink or EventSink(name=name)
    sink.name, sink.url, sink.families = name, url, list(families)
    sink.enabled, sink.batch_size = enabled, batch_size
    if secret:
        sink.secret_encrypted = secret_seal(secret)
    sink.save()
    return sink


def event_wire(entry: EventLogEntry) -> dict[str, Any]:
    """One event as a sink receives it."""
    return {
        "id": f"{entry.stream}:{entry.seq}",
        "stream": entry.stream,
        "seq": entry.seq,
        "name": entry.name,
        "family": entry.family,
        "agent_id": entry.agent_id,
        "subject": entry.subject,
        "payload": entry.payload,
        "at": entry.at.isoformat(),
        "prev_hash": entry.prev_hash,
        "row_hash": entry.row_hash,
    }


def signature(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def _post(sink: EventSink, secret: str, events: list[dict[str, Any]]) -> str | None:
    """POST one batch; None when the receiver took it (2xx), else why not."""
    body = json.dumps(
        {"sink": sink.name, "delivery_id": str(uuid.uuid4()), "events": events},
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode()
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "rabs-brainframe-event-sink/1",
        "X-Rabs-Timestamp": timestamp,
        "X-Rabs-Signature": signature(secret, timestamp, body),
        "X-Rabs-Sink": sink.name,
    }
    try:
        response = httpx.post(sink.url, content=body, headers=headers, timeout=TIMEOUT_SECONDS)
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"[:500]
    if 200 <= response.status_code < 300:
        return None
    return f"HTTP {response.status_code}: {response.text[:300]}"


def sink_deliver(sink_id: int, *, now: Any = None) -> dict[str, Any]:
    """Deliver what sink ``sink_id`` has not had yet (up to ``BATCHES_PER_RUN`` batches).
    The sink's row is locked meanwhile: two workers never send the same sink at once."""
    now = now or timezone.now()
    sent = 0
    with transaction.atomic():
        sink = EventSink.objects.select_for_update(skip_locked=True).filter(pk=sink_id).first()
        if sink is None:
            return {"sink": sink_id, "skipped": "busy"}
        secret = secret_open(sink.secret_encrypted)
        if secret is None:
            sink.last_error = "the signing secret cannot be decrypted (was the key changed?)"
            sink.failures += 1
            sink.next_attempt_at = now + _backoff(sink.failures)
            sink.save(update_fields=["last_error", "failures", "next_attempt_at"])
            return {"sink": sink.name, "error": sink.last_error}
        for _ in range(BATCHES_PER_RUN):
            unseen = event_log_after(sink.cursor, families=sink.families, limit=sink.batch_size)
            if unseen.cursor == sink.cursor:
                break  # nothing new
            if unseen.entries:
                error = _post(sink, secret, [event_wire(e) for e in unseen.entries])
                if error is not None:
                    sink.failures += 1
                    sink.last_error = error
                    sink.next_attempt_at = now + _backoff(sink.failures)
                    sink.save(update_fields=["failures", "last_error", "next_attempt_at"])
                    log.warning("event sink %s: %s", sink.name, error)
                    return {"sink": sink.name, "delivered": sent, "error": error}
                sent += len(unseen.entries)
                sink.last_delivery_at = now
            sink.cursor = unseen.cursor
            sink.delivered += len(unseen.entries)
            sink.failures, sink.last_error, sink.next_attempt_at = 0, "", None
            sink.save(
                update_fields=[
                    "cursor",
                    "delivered",
                    "failures",
                    "last_error",
                    "next_attempt_at",
                    "last_delivery_at",
                ]
            )
    return {"sink": sink.name, "delivered": sent}


def _backoff(failures: int) -> timedelta:
    return timedelta(seconds=min(FIRST_RETRY_SECONDS * 2 ** (failures - 1), MAX_RETRY_SECONDS))


def sinks_deliver(*, now: Any = None) -> list[dict[str, Any]]:
    """Every enabled sink that is due (the beat's ``deliver_events`` job, each minute)."""
    now = now or timezone.now()
    due = EventSink.objects.filter(enabled=True).exclude(next_attempt_at__gt=now)
    return [sink_deliver(pk, now=now) for pk in due.values_list("pk", flat=True)]
