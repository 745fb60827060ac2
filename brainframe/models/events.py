"""The event log: every named event the product emits, kept (seeds 001, 002).

``event_log`` is append-only (a database trigger refuses UPDATE and DELETE) and hash-chained per
stream: a stream is the agent the event concerns, or ``system`` for the rest. Each row's hash is
sha256(previous hash ``:`` seq ``:`` content hash), computed by ``brainframe_append_events`` in
the database under a per-stream lock, from the content hash the application computed (the
canonical JSON of name, stream, agent, subject, payload and time). Within a stream, ``seq`` is
committed in order (the lock is held to commit), which is what readers that must not miss a row
(the SIEM sinks) follow.

``EventSink``: a SIEM (or any HTTPS receiver) that gets the log as signed JSON POSTs, at least
once, each event with its id for de-duplication.
"""

from __future__ import annotations

from typing import ClassVar

from django.contrib.postgres.fields import ArrayField
from django.db import models

from .append_only import AppendOnlyModel

SYSTEM_STREAM = "system"


class EventLogEntry(AppendOnlyModel):
    """One event as it was emitted (its payload is the event's typed definition, as JSON)."""

    APPEND_ONLY_MUTABLE: ClassVar[tuple[str, ...]] = ()

    id = models.BigAutoField(primary_key=True)
    stream = models.CharField(max_length=64)
    seq = models.BigIntegerField()
    name = models.CharField(max_length=80)
    family = models.CharField(max_length=40)
    agent_id = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001 (none: a system event)
    subject = models.CharField(
        max_length=100, blank=True, help_text="What the event is about: a call, approval, task…"
    )
    payload = models.JSONField(default=dict)
    at = models.DateTimeField()
    prev_hash = models.CharField(max_length=64)
    row_hash = models.CharField(max_length=64)

    class Meta:
        db_table = "event_log"
        ordering = ["-at", "-id"]
        verbose_name = "event"
        verbose_name_plural = "event log"
        constraints = [
            models.UniqueConstraint(fields=["stream", "seq"], name="event_log_stream_seq"),
        ]
        indexes = [
            models.Index(fields=["agent_id", "at"], name="event_log_agent_at"),
            models.Index(fields=["family", "at"], name="event_log_family_at"),
            models.Index(fields=["at"], name="event_log_at"),
            models.Index(fields=["subject"], name="event_log_subject"),
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.subject or ''} @ {self.at:%Y-%m-%d %H:%M:%S}"


class EventSink(models.Model):
    """A receiver of the event log: signed JSON POSTs (HMAC-SHA256 over ``timestamp.body``),
    retried with back-off, at least once; ``cursor`` is how far each stream was delivered."""

    name = models.CharField(max_length=80, unique=True)
    url = models.URLField(max_length=500, help_text="Where the events are POSTed (JSON).")
    secret_encrypted = models.TextField(editable=False)
    families = ArrayField(
        models.CharField(max_length=40),
        default=list,
        blank=True,
        help_text="Event families sent (guardian, security, executor, governance, approval…); "
        "empty: all.",
    )
    enabled = models.BooleanField(default=True)
    batch_size = models.PositiveSmallIntegerField(default=100)
    cursor = models.JSONField(default=dict, editable=False)
    delivered = models.BigIntegerField(default=0, editable=False)
    failures = models.PositiveIntegerField(
        default=0, editable=False, help_text="Consecutive failed attempts."
    )
    next_attempt_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_delivery_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_error = models.TextField(blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "event_sinks"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
