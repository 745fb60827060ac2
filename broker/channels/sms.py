"""SMS through a provider speaking Twilio's Messages API (docs/channels.md).

Sending: ``POST {base}/2010-04-01/Accounts/{AccountSid}/Messages.json`` with HTTP basic auth
(Account SID, auth token) and the form fields ``To``, ``From``, ``Body``, ``StatusCallback``;
``201`` answers the message's ``sid``. The status callback is the provider posting
``MessageSid``, ``MessageStatus`` (``queued``, ``sent``, ``delivered``, ``undelivered``,
``failed``) and ``ErrorCode`` to the URL we gave, signed in ``X-Twilio-Signature``:
base64(HMAC-SHA1(auth token, URL + each form field's name and value, sorted by name)).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping

import httpx
from django.conf import settings
from django.urls import reverse

from brainframe.models import ChannelAdapter, OutboundMessage
from brainframe.services.access.credentials import secret_open

from .base import SendFailure

DEFAULT_BASE = "https://api.twilio.com"


def auth_token(adapter: ChannelAdapter) -> str:
    token = secret_open(adapter.send_secret_encrypted) if adapter.send_secret_encrypted else None
    if not token:
        raise SendFailure("the adapter has no usable auth token (set it in the admin)", False)
    return token


def status_callback_url(outbound: OutboundMessage) -> str:
    path = reverse("broker:channel-status", args=[outbound.adapter.name])
    return f"{settings.RABS_PUBLIC_URL.rstrip('/')}{path}?outbound={outbound.pk}"


def sms_send(outbound: OutboundMessage) -> str:
    """Send one message; its provider id. Raises SendFailure."""
    adapter = outbound.adapter
    if not adapter.send_account or not adapter.send_from:
        raise SendFailure("the adapter has no account id or From number", False)
    base = (adapter.send_url or DEFAULT_BASE).rstrip("/")
    url = f"{base}/2010-04-01/Accounts/{adapter.send_account}/Messages.json"
    form = {
        "To": outbound.address,
        "From": adapter.send_from,
        "Body": outbound.body,
        "StatusCallback": status_callback_url(outbound),
    }
    try:
        response = httpx.post(
            url,
            data=form,
            auth=(adapter.send_account, auth_token(adapter)),
            timeout=float(settings.RABS_REPLY_SEND_TIMEOUT_SECONDS),
        )
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise SendFailure(f"could not reach the provider: {exc}", True) from exc
    except httpx.TimeoutException as exc:
        raise SendFailure(
            f"no answer from the provider in time ({exc}); it may have been sent, so it is "
            "not sent again",
            False,
        ) from exc
    except httpx.HTTPError as exc:
        raise SendFailure(f"the request to the provider failed: {exc}", False) from exc
    if response.status_code in (200, 201):
        sid = _json(response).get("sid")
        if not isinstance(sid, str) or not sid:
            raise SendFailure("the provider answered without a message sid", False)
        return sid
    body = _json(response)
    why = f"the provider answered {response.status_code}"
    if body.get("code") or body.get("message"):
        why += f" (code {body.get('code')}: {body.get('message')})"
    retry = response.status_code == 429 or response.status_code >= 500
    raise SendFailure(why, retry)


def _json(response: httpx.Response) -> dict[str, object]:
    try:
        value = response.json()
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def signature(token: str, url: str, params: Mapping[str, str]) -> str:
    """Twilio's request signature of a form POST to ``url``."""
    signed = url + "".join(f"{key}{params[key]}" for key in sorted(params))
    digest = hmac.new(token.encode(), signed.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


def signature_valid(
    adapter: ChannelAdapter, url: str, params: Mapping[str, str], given: str
) -> bool:
    try:
        token = auth_token(adapter)
    except SendFailure:
        return False
    return bool(given) and hmac.compare_digest(signature(token, url, params), given)
