"""Celery tasks of the broker: thin wrappers that load ids and call services."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.db import DatabaseError

from brainframe.models import ApprovalRequest

from .services.execution import approved_call_execute
from .services.notifications import approval_notify, notify_channels

log = logging.getLogger(__name__)


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


def notify_enqueue(*, approval_id: Any, event: str) -> None:
    """One notification task per channel. A broker that cannot take it is logged, not raised:
    the approval stands on the board whatever happens to its notifications."""
    for channel in notify_channels():
        try:
            notify_approval.delay(str(approval_id), event, channel)
        except Exception:
            log.warning(
                "could not enqueue the %s notification for %s", channel, approval_id, exc_info=True
            )
