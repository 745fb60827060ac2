"""Celery tasks of the broker: thin wrappers that load ids and call services."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.db import DatabaseError

from brainframe.models import ApprovalRequest


@shared_task(
    acks_late=True,
    autoretry_for=(DatabaseError, ConnectionError),
    retry_backoff=True,
    max_retries=8,
)
def execute_approved_call(approval_id: str) -> str:
    from .services.approvals import approved_call_execute

    return approved_call_execute(approval_id=approval_id)


@shared_task(autoretry_for=(Exception,), retry_backoff=True, max_retries=5)
def notify_approval(approval_id: str, event: str) -> dict[str, Any]:
    from .services.notifications import approval_notify

    approval = ApprovalRequest.objects.select_related("tool", "agent").get(pk=approval_id)
    return approval_notify(approval=approval, event=event)


@shared_task
def expire_approvals() -> list[str]:
    from .services.approvals import approvals_expire, approvals_recover, calls_interrupted_seal

    return approvals_expire() + approvals_recover() + calls_interrupted_seal()
