"""Telling reviewers (and the agent's operators) about approvals: e-mail and a signed webhook.

Sent from Celery after commit, never on the request path. The webhook body is JSON, signed with
``X-RABS-Signature: sha256=<hex HMAC-SHA256 of the body under RABS_APPROVAL_WEBHOOK_SECRET>``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from typing import Any

import httpx
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail

from brainframe.models import ApprovalRequest

log = logging.getLogger(__name__)

SUBJECTS = {
    "created": "Approval needed: {tool} for {agent}",
    "escalated": "Escalated to you: {tool} for {agent}",
    "expired": "Expired without a decision: {tool} for {agent}",
}


def _recipients(approval: ApprovalRequest) -> list[str]:
    groups = [approval.reviewer_group]
    if approval.reviewer_group == ApprovalRequest.ReviewerGroup.REVIEWERS:
        groups.append(ApprovalRequest.ReviewerGroup.SENIOR)
    users = get_user_model().objects.filter(groups__name__in=groups, is_active=True)
    return sorted({u.email for u in users if u.email})


def webhook_signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def approval_notify(*, approval: ApprovalRequest, event: str) -> dict[str, Any]:
    """Send the e-mail and the webhook for ``event``. Returns what was sent (for the log)."""
    link = f"{settings.RABS_PUBLIC_URL.rstrip('/')}/board/approvals/#approval-{approval.pk}"
    subject = SUBJECTS[event].format(tool=approval.tool_id, agent=approval.agent_id)
    text = (
        f"{approval.summary}\n\nReason given: {approval.reason}\nRisk: {approval.risk_level}\n"
        f"Decide before: {approval.timeout_at:%Y-%m-%d %H:%M %Z}\n\n{link}\n"
    )
    sent: dict[str, Any] = {"event": event, "emails": [], "webhook": None}
    recipients = _recipients(approval)
    if recipients:
        send_mail(subject, text, settings.RABS_NOTIFY_FROM_EMAIL, recipients)
        sent["emails"] = recipients
    if settings.RABS_APPROVAL_WEBHOOK_URL:
        body = json.dumps(
            {
                "event": f"approval.{event}",
                "approval_id": str(approval.pk),
                "tool_id": approval.tool_id,
                "agent_id": approval.agent_id,
                "status": approval.status,
                "reviewer_group": approval.reviewer_group,
                "summary": approval.summary,
                "timeout_at": approval.timeout_at.isoformat(),
                "link": link,
            }
        ).encode()
        headers = {"Content-Type": "application/json", "X-RABS-Event": f"approval.{event}"}
        if settings.RABS_APPROVAL_WEBHOOK_SECRET:
            headers["X-RABS-Signature"] = webhook_signature(
                settings.RABS_APPROVAL_WEBHOOK_SECRET, body
            )
        response = httpx.post(
            settings.RABS_APPROVAL_WEBHOOK_URL, content=body, headers=headers, timeout=10
        )
        response.raise_for_status()
        sent["webhook"] = response.status_code
    return sent
