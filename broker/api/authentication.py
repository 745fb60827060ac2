"""RABS-HMAC: how an agent proves who it is on every request.

    Authorization: RABS-HMAC agent=<agent_id>,ts=<unix seconds>,nonce=<hex>,sig=<hex>

``sig`` is hex HMAC-SHA256, under the agent's secret, of
``METHOD + "\\n" + path_with_query + "\\n" + ts + "\\n" + nonce + "\\n" + sha256_hex(body)``.
A timestamp more than the window (300 s) away, a nonce already seen, an unknown or paused
agent, or a signature that does not match are refused with 401 and a code.
"""

from __future__ import annotations

import hmac
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from agents_vm.client.signing import sign
from brainframe.models import Agent
from brainframe.services.access.credentials import SigningKey, agent_secret_get

from ..errors import BrokerRefusal
from .throttling import replay_guard_and_count

SCHEME = "RABS-HMAC"
_HEADER = re.compile(
    r"^RABS-HMAC agent=(?P<agent>[A-Za-z0-9_-]{1,64}),ts=(?P<ts>\d{1,12}),"
    r"nonce=(?P<nonce>[0-9a-fA-F]{16,128}),sig=(?P<sig>[0-9a-fA-F]{64})$"
)


@dataclass(frozen=True)
class SignedRequest:
    """The parts of a signed request the signature covers, as the header named them."""

    agent_id: str
    ts: str
    nonce: str
    sig: str
    method: str
    path: str
    read_body: Callable[[], bytes]


@dataclass(frozen=True)
class AgentUser:
    """``request.user`` for a signed agent request."""

    agent: Agent
    # The registry's generation as of this request's authentication (broker.registry).
    registry_token: str | None = None
    # The agent's rate counters, counted with the replay guard (throttling.RateCounts).
    rate_counts: Any = None
    # The agent's generation (migration 0021), and whether the agent and its key came from
    # this process's memory rather than a read for this request (then only a statement that
    # checks the generation may act on them, and ``reverified`` before anything else).
    generation: str | None = None
    remembered: bool = False
    signed: SignedRequest | None = None
    is_authenticated: bool = True
    is_anonymous: bool = False

    @property
    def pk(self) -> str:
        return self.agent.agent_id


class SignatureFailed(exceptions.AuthenticationFailed):
    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail=detail, code=code)


class AgentSignatureAuthentication(BaseAuthentication):
    def authenticate_header(self, request: Request) -> str:
        return SCHEME

    def authenticate(self, request: Request) -> tuple[AgentUser, Agent]:
        # Authenticated already on this request (the tool-call fast path, which fell back to
        # here for an answer it does not give itself): the nonce is spent, not replayed.
        done = getattr(request._request, "rabs_agent_user", None)
        if isinstance(done, AgentUser):
            return done, done.agent
        user = authenticate_signed(
            header=request.META.get("HTTP_AUTHORIZATION", ""),
            method=request.method or "",
            path=request.get_full_path(),
            read_body=lambda: _read_body(request),
        )
        return user, user.agent


def authenticate_signed(
    *,
    header: str,
    method: str,
    path: str,
    read_body: Callable[[], bytes],
    remembered: bool = False,
) -> AgentUser:
    """Verify a RABS-HMAC signed request: the agent (not paused) and its key, the clock window,
    the signature over the body, then the replay guard and the rate limit's count in one Redis
    round trip. Raises SignatureFailed (401) or BrokerRefusal (413, 503).

    ``remembered``: the agent and key this process read last may stand in for a read (when they
    admit the request; anything they would refuse is decided on a fresh read). The caller then
    holds an unchecked agent (``AgentUser.remembered``): see ``reverified``."""
    if not header:
        raise SignatureFailed("auth_missing", f"send an Authorization: {SCHEME} header")
    match = _HEADER.match(header)
    if match is None:
        raise SignatureFailed(
            "auth_malformed",
            f"expected '{SCHEME} agent=<id>,ts=<unix seconds>,nonce=<hex>,sig=<hex>'",
        )
    signed = SignedRequest(
        match["agent"], match["ts"], match["nonce"], match["sig"], method, path, read_body
    )
    key = _key(signed, remembered=remembered)
    try:
        # The replay guard and the rate limit's count: one Redis round trip.
        fresh, counts = replay_guard_and_count(
            agent_id=signed.agent_id,
            nonce=signed.nonce.lower(),
            window_seconds=settings.RABS_SIGNATURE_WINDOW_SECONDS,
        )
    except Exception as exc:  # the replay guard is down: fail closed
        raise BrokerRefusal(
            503, "nonce_store_unavailable", "cannot check for replays right now; retry"
        ) from exc
    if not fresh:
        raise SignatureFailed("auth_replayed_nonce", "this nonce was already used")
    return AgentUser(
        key.agent,
        registry_token=key.registry_token,
        rate_counts=counts,
        generation=key.generation,
        remembered=key.remembered,
        signed=signed,
    )


def reverified(user: AgentUser) -> AgentUser:
    """``user`` with its agent and key read for this request (the same checks as
    ``authenticate_signed``, its nonce already spent): itself if they were. Raises
    SignatureFailed if what was read refuses the request (a paused agent, a revoked key)."""
    if not user.remembered or user.signed is None:
        return user
    key = _key(user.signed, remembered=False)
    return AgentUser(
        key.agent,
        registry_token=key.registry_token,
        rate_counts=user.rate_counts,
        generation=key.generation,
        signed=user.signed,
    )


def _key(signed: SignedRequest, *, remembered: bool) -> SigningKey:
    """The agent's key that admits ``signed``, or SignatureFailed (in this order: unknown
    agent or no key, paused agent, stale timestamp, bad signature)."""
    window = settings.RABS_SIGNATURE_WINDOW_SECONDS
    in_window = abs(time.time() - int(signed.ts)) <= window
    if remembered and in_window:
        key = agent_secret_get(agent_id=signed.agent_id, remembered=True)
        if key is not None and key.agent.status != Agent.Status.PAUSED and _matches(key, signed):
            return key
        # Whatever would refuse the request is decided on what the database says now.
    key = agent_secret_get(agent_id=signed.agent_id)
    if key is None:
        raise SignatureFailed("auth_unknown_agent", "unknown agent or no active key")
    if key.agent.status == Agent.Status.PAUSED:
        raise SignatureFailed("auth_agent_paused", f"{signed.agent_id} is paused by staff")
    if not in_window:
        raise SignatureFailed(
            "auth_stale_timestamp", f"timestamp is more than {window}s from the server's clock"
        )
    if not _matches(key, signed):
        raise SignatureFailed("auth_bad_signature", "signature does not match the request")
    return key


def _matches(key: SigningKey, signed: SignedRequest) -> bool:
    expected = sign(
        key.secret, signed.method, signed.path, signed.ts, signed.nonce, signed.read_body()
    )
    return hmac.compare_digest(expected, signed.sig.lower())


def _read_body(request: Request) -> bytes:
    view = request.parser_context.get("view") if request.parser_context else None
    limit: int = getattr(view, "max_body_bytes", settings.RABS_MAX_BODY_BYTES)
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > limit:
        raise BrokerRefusal(413, "body_too_large", f"request bodies are limited to {limit} bytes")
    try:
        body: Any = request._request.body
    except RequestDataTooBig:
        raise BrokerRefusal(
            413, "body_too_large", f"request bodies are limited to {limit} bytes"
        ) from None
    if len(body) > limit:
        raise BrokerRefusal(413, "body_too_large", f"request bodies are limited to {limit} bytes")
    return bytes(body)
