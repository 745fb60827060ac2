"""E-mail answers through the deployment's mail server (Django's ``EMAIL_*`` settings): the
subject and threading headers the rules worked out (``In-Reply-To``, ``References``), a
``Message-ID`` of our own, fixed per message so a receiver can drop a repeat."""

from __future__ import annotations

import smtplib

from django.conf import settings
from django.core.mail import EmailMessage, get_connection

from brainframe.models import OutboundMessage

from .base import SendFailure


def mail_send(outbound: OutboundMessage) -> str:
    """Send one e-mail; its Message-ID. Raises SendFailure (``retry`` for a refused or dropped
    connection and the server's 4xx answers; its 5xx answers are final)."""
    headers = {"Message-ID": outbound.message_id}
    if outbound.in_reply_to:
        headers["In-Reply-To"] = outbound.in_reply_to
    if outbound.references:
        headers["References"] = outbound.references
    message = EmailMessage(
        subject=outbound.subject,
        body=outbound.body,
        from_email=outbound.adapter.send_from or settings.RABS_NOTIFY_FROM_EMAIL,
        to=[outbound.address],
        headers=headers,
        connection=get_connection(
            fail_silently=False, timeout=float(settings.RABS_REPLY_SEND_TIMEOUT_SECONDS)
        ),
    )
    try:
        message.send()
    except smtplib.SMTPResponseException as exc:
        text = exc.smtp_error.decode(errors="replace") if isinstance(exc.smtp_error, bytes) else ""
        raise SendFailure(f"the mail server answered {exc.smtp_code} {text}".strip(),
                          400 <= exc.smtp_code < 500) from exc  # fmt: skip
    except smtplib.SMTPRecipientsRefused as exc:
        codes = [code for code, _ in exc.recipients.values()]
        raise SendFailure(f"the mail server refused the recipient: {exc.recipients}",
                          all(400 <= c < 500 for c in codes)) from exc  # fmt: skip
    except (TimeoutError, smtplib.SMTPServerDisconnected, ConnectionError) as exc:
        raise SendFailure(f"could not hand it to the mail server: {exc}", True) from exc
    except smtplib.SMTPException as exc:  # (an OSError too: caught before the plain ones)
        raise SendFailure(f"the mail server refused it: {exc}", False) from exc
    except OSError as exc:
        raise SendFailure(f"could not reach the mail server: {exc}", True) from exc
    return outbound.message_id
