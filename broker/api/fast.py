"""The tool-call endpoint's fast path: ``POST /api/v1/tool-calls/`` without DRF's generic
machinery (content negotiation, parser and authenticator objects, the serializer, the renderer),
for the requests that are what the OpenAPI schema says they are.

The same checks in the same order: the signature (``authenticate_signed``: agent, key, clock,
HMAC, replay guard and rate count in one Redis round trip), the rate limit, then the body against
a compiled JSON Schema that accepts only what the DRF serializer would accept unchanged. Anything
else — another content type, a query string, a body the schema does not accept, a NUL character
— is handed to the DRF view, already authenticated (the nonce is not spent twice), and answered
exactly as before: same codes, same fields, same error messages. The answers of the fast path are
the DRF view's answers byte for byte in shape (``{code, detail, field?, errors?}`` for refusals).
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from functools import partial
from typing import Any

import jsonschema_rs
from django.conf import settings
from django.db.utils import OperationalError
from django.http import HttpRequest, HttpResponse

from brainframe.models import OriginRegistry

from ..errors import BrokerRefusal
from ..pipeline.context import CallRequest
from ..services.calls import tool_call_submit_admitted
from .authentication import SCHEME, AgentUser, SignatureFailed, authenticate_signed, reverified
from .throttling import AgentRateThrottle, RateCounts

_UUID = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
_NULLABLE_UUID = {"type": ["string", "null"], "pattern": _UUID}

#: A subset of what ``ToolCallRequestSerializer`` accepts, read the same way.
REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["tool_id", "reason"],
    "additionalProperties": False,
    "properties": {
        "tool_id": {"type": "string", "minLength": 1, "maxLength": 200},
        "arguments": {"type": "object"},
        "reason": {"type": "string", "minLength": 1, "maxLength": 4000},
        "confidence": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        "task_id": _NULLABLE_UUID,
        "parent_r_tag": _NULLABLE_UUID,
        "o_tag": _NULLABLE_UUID,
        "origin": {
            "oneOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "required": ["origin_type", "source_ref"],
                    "additionalProperties": False,
                    "properties": {
                        "origin_type": {"enum": list(OriginRegistry.OriginType.values)},
                        "source_ref": {"type": "string", "minLength": 1, "maxLength": 500},
                        "metadata": {"type": "object"},
                    },
                },
            ]
        },
    },
}
_VALIDATOR = jsonschema_rs.Draft202012Validator(REQUEST_SCHEMA)


def _valid(data: Any) -> bool:
    return bool(_VALIDATOR.is_valid(data))


def _json(body: dict[str, Any], status: int, **headers: str) -> HttpResponse:
    response = HttpResponse(
        # As DRF's renderer writes it: compact, UTF-8, no NaN.
        json.dumps(body, allow_nan=False, default=str, ensure_ascii=False, separators=(",", ":")),
        status=status,
        content_type="application/json",
    )
    for name, value in headers.items():
        response[name] = value
    return response


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _uuid(value: Any) -> uuid.UUID | None:
    return uuid.UUID(value) if value is not None else None


_DATABASE_DOWN = {"code": "database_unavailable", "detail": "the database is unavailable; retry"}


def tool_call_fast(request: HttpRequest, *, fallback: Any) -> HttpResponse:
    """Answer a tool call; ``fallback(request)`` answers what this path does not take itself."""
    try:
        return _answer(request, fallback)
    except OperationalError:
        # No database connection to be had: nothing was done; say so, and when to try again.
        return _json(_DATABASE_DOWN, 503, **{"Retry-After": "1"})


def _answer(request: HttpRequest, fallback: Any) -> HttpResponse:
    if hasattr(request, "rabs_agent_user"):  # handed back once already (by the lean lane)
        return fallback(request)
    if (
        request.content_type != "application/json"
        or request.GET
        or len(request.headers.get("Idempotency-Key", "")) > 200
    ):
        return fallback(request)
    limit = settings.RABS_MAX_BODY_BYTES
    if int(request.META.get("CONTENT_LENGTH") or 0) > limit:
        return fallback(request)
    body = request.body
    try:
        # The agent and its key from this process's memory when it has them (no query): then
        # only the decision's statement may act on them, which checks their generation, and
        # any other answer is given after reading them (``reverified``).
        user = authenticate_signed(
            header=request.META.get("HTTP_AUTHORIZATION", ""),
            method="POST",
            path=request.get_full_path(),
            read_body=lambda: body,
            remembered=True,
        )
        return _decided(request, body, user, fallback)
    except SignatureFailed as failed:
        code = failed.get_codes()
        return _json(
            {
                "code": code if isinstance(code, str) else "not_authenticated",
                "detail": str(failed.detail),
            },
            401,
            **{"WWW-Authenticate": SCHEME},
        )
    except BrokerRefusal as refusal:
        return _json(refusal.body(), refusal.status)


def _decided(request: HttpRequest, body: bytes, user: AgentUser, fallback: Any) -> HttpResponse:
    throttle = AgentRateThrottle()
    counts = user.rate_counts
    if isinstance(counts, RateCounts) and not throttle.admits(
        counts.at, counts.current, counts.previous
    ):
        user = reverified(user)  # a paused agent is told so, not to slow down
        wait = math.ceil(throttle.wait() or 1)
        return _json(
            {"code": "rate_limited", "detail": f"Request was throttled. Expected available in "
             f"{wait} second{'s' if wait != 1 else ''}."},
            429,
            **{"Retry-After": str(wait)},
        )  # fmt: skip
    try:
        # NaN and Infinity are not JSON (DRF refuses them; the audit could not store them).
        data = json.loads(body, parse_constant=_not_json) if b"\\u0000" not in body else None
    except ValueError:
        data = None
    if data is None or not _valid(data):
        request.rabs_agent_user = reverified(user)  # type: ignore[attr-defined]  # for it
        return fallback(request)
    origin = data.get("origin")
    call_request = CallRequest(
        tool_id=data["tool_id"],
        arguments=data.get("arguments", {}),
        reason=data["reason"],
        confidence=float(data["confidence"]) if data.get("confidence") is not None else None,
        task_id=_uuid(data.get("task_id")),
        parent_r_tag=_uuid(data.get("parent_r_tag")),
        origin={**origin, "metadata": origin.get("metadata", {})} if origin else None,
        o_tag=_uuid(data.get("o_tag")),
        idempotency_key=request.headers.get("Idempotency-Key", ""),
        request_hash=hashlib.sha256(
            json.dumps(data, sort_keys=True, default=str).encode()
        ).hexdigest(),
    )
    try:
        answer = tool_call_submit_admitted(user, call_request, partial(reverified, user))
    except BrokerRefusal as refusal:
        return _json(refusal.body(), refusal.status)
    return _json(answer.body, answer.status)
