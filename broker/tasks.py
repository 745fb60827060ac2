"""Celery tasks of the broker: thin wrappers that load ids and call services (which queue them by
name through ``broker.queue``)."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.db import DatabaseError

from brainframe.models import ApprovalRequest

from .channels.delivery import outbound_attempt
from .services.execution import approved_call_execute
from .services.notifications import approval_notify, notify_enqueue


@shared_task(
    acks_late=True,
    autoretry_for=(DatabaseError, ConnectionError),
    retry_backoff=True,
    max_retries=8,
)
def execute_approved_call(approval_id: str) -> str:
    return approved_call_execute(approval_id=approval_id)


@shared_task(autoretry_for=(Exception,), retry_backoff=True, max_retries=5)
def notify_approval(approval_id: str, event: str, channel: str | None = None) -> dict[str, Any]:
    """Deliver one channel's notification (retried on its own); without ``channel`` (a message
    queued before channels were separate), enqueue one task per channel."""
    if channel is None:
        notify_enqueue(approval_id=approval_id, event=event)
        return {"event": event, "fanned_out": True}
    approval = ApprovalRequest.objects.select_related("tool", "agent").get(pk=approval_id)
    return approval_notify(approval=approval, event=event, channel=channel)


@shared_task(acks_late=True, autoretry_for=(DatabaseError,), retry_backoff=True, max_retries=5)
def deliver_outbound(outbound_id: str) -> str:
    """One attempt at a message sent on a channel (its retries are the sweep's)."""
    return outbound_attempt(outbound_id)
