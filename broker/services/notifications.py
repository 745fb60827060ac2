"""Telling reviewers (and the agent's operators) about approvals: e-mail and a signed webhook.

Sent from Celery after commit, never on the request path. Each channel is its own task, retried
on its own, and each (approval, event, channel, recipient) is delivered at most once: a
``NotificationDelivery`` row is taken before the send and marked delivered after it, so a
webhook that fails four times does not send the e-mail five times. The webhook body is JSON,
signed with ``X-RABS-Signature: sha256=<hex HMAC-SHA256 of the body under
RABS_APPROVAL_WEBHOOK_SECRET>``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import httpx
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from brainframe.models import ApprovalRequest, NotificationDelivery, ReviewerPreference

from ..queue import NOTIFY_APPROVAL, enqueue

log = logging.getLogger(__name__)

Channel = NotificationDelivery.Channel

SUBJECTS = {
    "created": "Approval needed: {tool} for {agent}",
    "escalated": "Escalated to you: {tool} for {agent}",
    "expired": "Expired without a decision: {tool} for {agent}",
}


def notify_channels() -> list[str]:
    """The channels notifications go out on (the webhook only when a URL is configured)."""
    channels = [Channel.EMAIL.value]
    if settings.RABS_APPROVAL_WEBHOOK_URL:
        channels.append(Channel.WEBHOOK.value)
    return channels


def notify_enqueue(*, approval_id: Any, event: str) -> None:
    """One notification task per channel. A broker that cannot take it is logged, not raised:
    the approval stands on the board whatever happens to its notifications."""
    for channel in notify_channels():
        try:
            enqueue(NOTIFY_APPROVAL, str(approval_id), event, channel)
        except Exception:
            log.warning(
                "could not enqueue the %s notification for %s", channel, approval_id, exc_info=True
            )


def _recipients(approval: ApprovalRequest) -> list[str]:
    groups = [approval.reviewer_group]
    if approval.reviewer_group == ApprovalRequest.ReviewerGroup.REVIEWERS:
        groups.append(ApprovalRequest.ReviewerGroup.SENIOR)
    users = get_user_model().objects.filter(groups__name__in=groups, is_active=True)
    return sorted({u.email for u in users if u.email})


def webhook_signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _link(approval: ApprovalRequest) -> str:
    return f"{settings.RABS_PUBLIC_URL.rstrip('/')}/board/approvals/#approval-{approval.pk}"


def _deliver(
    *,
    approval: ApprovalRequest,
    event: str,
    channel: str,
    recipients: list[str],
    send: Callable[[list[str]], Any],
) -> list[str]:
    """Send to those of ``recipients`` not yet reached for this event on this channel; record
    the attempt, and the delivery once ``send`` returns. Returns who was sent to now. Raises
    what ``send`` raised (the task retries; those delivered stay delivered)."""
    for recipient in recipients:
        NotificationDelivery.objects.get_or_create(
            approval=approval, event=event, channel=channel, recipient=recipient
        )
    pending = NotificationDelivery.objects.filter(
        approval=approval,
        event=event,
        channel=channel,
        recipient__in=recipients,
        delivered_at__isnull=True,
    )
    due = sorted(pending.values_list("recipient", flat=True))
    if not due:
        return []
    rows = NotificationDelivery.objects.filter(
        approval=approval, event=event, channel=channel, recipient__in=due
    )
    try:
        send(due)
    except Exception as exc:
        rows.update(attempts=F("attempts") + 1, last_error=f"{type(exc).__name__}: {exc}"[:2000])
        raise
    rows.update(attempts=F("attempts") + 1, last_error="", delivered_at=timezone.now())
    return due


def approval_notify(*, approval: ApprovalRequest, event: str, channel: str) -> dict[str, Any]:
    """Deliver ``event`` about ``approval`` on one channel. Returns what was sent now."""
    if event not in SUBJECTS:
        raise ValueError(f"unknown notification event {event!r}")
    if channel == Channel.EMAIL:
        return {"event": event, "emails": _email(approval, event)}
    if channel == Channel.WEBHOOK:
        return {"event": event, "webhook": _webhook(approval, event)}
    raise ValueError(f"unknown notification channel {channel!r}")


def _digest_recipients(emails: list[str]) -> set[str]:
    """Those of ``emails`` whose reviewers asked for a digest instead of each e-mail at once."""
    return set(
        ReviewerPreference.objects.filter(user__email__in=emails)
        .exclude(digest=ReviewerPreference.Digest.IMMEDIATE)
        .values_list("user__email", flat=True)
    )


def _email(approval: ApprovalRequest, event: str) -> list[str]:
    recipients = _recipients(approval)
    held = _digest_recipients(recipients)
    for recipient in sorted(held):  # sent with the reviewer's next digest
        NotificationDelivery.objects.get_or_create(
            approval=approval,
            event=event,
            channel=Channel.EMAIL,
            recipient=recipient,
            defaults={"digest": True},
        )
    subject = SUBJECTS[event].format(tool=approval.tool_id, agent=approval.agent_id)
    text = (
        f"{approval.summary}\n\nReason given: {approval.reason}\nRisk: {approval.risk_level}\n"
        f"Decide before: {approval.timeout_at:%Y-%m-%d %H:%M %Z}\n\n{_link(approval)}\n"
    )
    return _deliver(
        approval=approval,
        event=event,
        channel=Channel.EMAIL,
        recipients=[r for r in recipients if r not in held],
        send=lambda to: send_mail(subject, text, settings.RABS_NOTIFY_FROM_EMAIL, to),
    )


def digests_send(*, now: datetime | None = None) -> dict[str, int]:
    """Send each reviewer on a digest whose period is up one e-mail listing every approval held
    for them since their last digest: one line per approval, however many of its events
    (created, escalated, expired) were held, with its state now. Returns {email: items}.
    A reviewer's preference row is locked while their digest goes out, so two runs of the job
    never send the same rows twice; a failed send leaves the rows for the next run."""
    now = now or timezone.now()
    sent: dict[str, int] = {}
    for pref_id in ReviewerPreference.objects.exclude(
        digest=ReviewerPreference.Digest.IMMEDIATE
    ).values_list("pk", flat=True):
        with transaction.atomic():
            pref = (
                ReviewerPreference.objects.select_for_update(of=("self",))
                .select_related("user")
                .get(pk=pref_id)
            )
            period = timedelta(minutes=ReviewerPreference.MINUTES[pref.digest])
            email = pref.user.email
            if not email or (pref.last_digest_at and pref.last_digest_at > now - period):
                continue
            rows = NotificationDelivery.objects.filter(
                channel=Channel.EMAIL, recipient=email, digest=True, delivered_at__isnull=True
            ).select_related("approval", "approval__decided_by")
            items: dict[Any, list[NotificationDelivery]] = {}
            for row in rows.order_by("approval__timeout_at", "created_at"):
                items.setdefault(row.approval_id, []).append(row)
            if not items:
                continue
            lines = []
            for held in items.values():
                approval = held[0].approval
                events = ", ".join(dict.fromkeys(r.event for r in held))
                state = approval.get_status_display().lower()
                lines.append(
                    f"- {approval.tool_id} for {approval.agent_id} — {state} ({events}): "
                    f"{approval.summary}\n  {_link(approval)}"
                )
            subject = f"Approvals digest: {len(items)} item(s)"
            try:
                send_mail(
                    subject, "\n".join(lines) + "\n", settings.RABS_NOTIFY_FROM_EMAIL, [email]
                )
            except Exception as exc:
                NotificationDelivery.objects.filter(
                    pk__in=[r.pk for held in items.values() for r in held]
                ).update(attempts=F("attempts") + 1, last_error=f"{type(exc).__name__}: {exc}")
                log.warning("could not send the digest to %s", email, exc_info=True)
                continue
            NotificationDelivery.objects.filter(
                pk__in=[r.pk for held in items.values() for r in held]
            ).update(attempts=F("attempts") + 1, last_error="", delivered_at=now)
            pref.last_digest_at = now
            pref.save(update_fields=["last_digest_at"])
            sent[email] = len(items)
    return sent


def _webhook(approval: ApprovalRequest, event: str) -> list[str]:
    url = settings.RABS_APPROVAL_WEBHOOK_URL
    if not url:
        return []
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
            "link": _link(approval),
        }
    ).encode()
    headers = {"Content-Type": "application/json", "X-RABS-Event": f"approval.{event}"}
    if settings.RABS_APPROVAL_WEBHOOK_SECRET:
        headers["X-RABS-Signature"] = webhook_signature(settings.RABS_APPROVAL_WEBHOOK_SECRET, body)

    def post(_: list[str]) -> None:
        httpx.post(url, content=body, headers=headers, timeout=10).raise_for_status()

    return _deliver(
        approval=approval, event=event, channel=Channel.WEBHOOK, recipients=[url], send=post
    )
