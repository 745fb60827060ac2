"""What providers call back (docs/channels.md): an SMS provider's delivery status, and the Matrix
homeserver's application-service API. Both authenticate the caller with a secret of the
channel's own and do nothing else before that."""

from __future__ import annotations

import hmac
import json
import uuid

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from brainframe.models import ChannelAdapter, OutboundMessage
from brainframe.services.ledger.deliveries import outbound_provider_status

from ..channels.appservice import TransactionFailed, transaction_handle, user_query
from ..channels.sms import signature_valid


def _error(status: int, code: str, detail: str, field: str | None = None) -> JsonResponse:
    body: dict[str, str] = {"code": code, "detail": detail}
    if field:
        body["field"] = field
    return JsonResponse(body, status=status)


@csrf_exempt
@transaction.non_atomic_requests
def channel_status(request: HttpRequest, name: str) -> HttpResponse:
    """``POST /api/v1/channels/<name>/status/?outbound=<id>``: the SMS provider's status
    callback (Twilio's form fields, signed in ``X-Twilio-Signature`` with the auth token)."""
    if request.method != "POST":
        return _error(405, "method_not_allowed", "POST the provider's status callback")
    adapter = ChannelAdapter.objects.filter(
        name=name, active=True, send_via=ChannelAdapter.SendVia.TWILIO
    ).first()
    if adapter is None:
        return _error(404, "unknown_channel", f"no active SMS adapter {name!r}")
    params = {key: request.POST.get(key, "") for key in request.POST}
    url = settings.RABS_PUBLIC_URL.rstrip("/") + request.get_full_path()
    if not signature_valid(adapter, url, params, request.headers.get("X-Twilio-Signature", "")):
        return _error(403, "bad_signature", "X-Twilio-Signature does not match this request")
    try:
        pk = uuid.UUID(request.GET.get("outbound", ""))
    except ValueError:
        return _error(400, "invalid_callback", "outbound is not a message id", "outbound")
    if not OutboundMessage.objects.filter(pk=pk, adapter=adapter).exists():
        return _error(404, "unknown_message", "no message of this adapter", "outbound")
    status = params.get("MessageStatus") or params.get("SmsStatus") or ""
    if not status:
        return _error(400, "invalid_callback", "MessageStatus is required", "MessageStatus")
    error = params.get("ErrorCode", "")
    outbound_provider_status(
        pk,
        provider_id=params.get("MessageSid", ""),
        status=status,
        error=f"error code {error}" if error else "",
    )
    return HttpResponse(status=204)


def _matrix_error(status: int, errcode: str, error: str) -> JsonResponse:
    return JsonResponse({"errcode": errcode, "error": error}, status=status)


def _homeserver_authenticated(request: HttpRequest) -> JsonResponse | None:
    """The homeserver's token (``Authorization: Bearer``, or ``access_token`` as older ones
    send it), else the Matrix error to answer."""
    expected = settings.RABS_MATRIX_HS_TOKEN
    header = request.headers.get("Authorization", "")
    given = header[7:] if header.startswith("Bearer ") else request.GET.get("access_token", "")
    if not given:
        return _matrix_error(401, "M_UNAUTHORIZED", "no token")
    if not expected or not hmac.compare_digest(given, expected):
        return _matrix_error(403, "M_FORBIDDEN", "wrong token")
    return None


@csrf_exempt
@transaction.non_atomic_requests
def appservice_transaction(request: HttpRequest, txn_id: str) -> JsonResponse:
    """``PUT /matrix/_matrix/app/v1/transactions/<txn>``: events the homeserver pushes."""
    refused = _homeserver_authenticated(request)
    if refused is not None:
        return refused
    if request.method != "PUT":
        return _matrix_error(405, "M_UNRECOGNIZED", "PUT a transaction")
    try:
        body = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        return _matrix_error(400, "M_NOT_JSON", "the body is not JSON")
    events = body.get("events") if isinstance(body, dict) else None
    if not isinstance(events, list):
        return _matrix_error(400, "M_BAD_JSON", "events must be a list")
    try:
        transaction_handle(events)
    except TransactionFailed as exc:
        return _matrix_error(500, "M_UNKNOWN", f"try again: {exc}")
    return JsonResponse({})


@csrf_exempt
def appservice_user(request: HttpRequest, user_id: str) -> JsonResponse:
    """``GET /matrix/_matrix/app/v1/users/<user>``: does one of our users exist (an agent's bot
    someone invited)? It is registered now if the agent takes chat."""
    refused = _homeserver_authenticated(request)
    if refused is not None:
        return refused
    if user_query(user_id):
        return JsonResponse({})
    return _matrix_error(404, "M_NOT_FOUND", "no such user")


@csrf_exempt
def appservice_other(request: HttpRequest, rest: str) -> JsonResponse:
    """Room-alias queries, pings and the rest: we hold no aliases; a ping is answered."""
    refused = _homeserver_authenticated(request)
    if refused is not None:
        return refused
    if rest == "ping":
        return JsonResponse({})
    return _matrix_error(404, "M_NOT_FOUND", "nothing here")
