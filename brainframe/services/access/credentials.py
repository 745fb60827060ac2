"""Agent credentials: signing secrets (issue/rotate, read back for signature checks) and bearer
tokens for the MCP face (issue, authenticate, revoke).

The broker verifies HMAC signatures, which needs the secret itself, so secrets are encrypted at
rest (Fernet) rather than hashed. The plain secret leaves this module only once, when issued.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from brainframe.instances import model_copy
from brainframe.models import Agent, AgentCredential, AgentToken


@lru_cache(maxsize=4)
def _fernet(key_material: str) -> Fernet:
    # Any string works as configuration; derive a proper 32-byte Fernet key from it.
    digest = hashlib.sha256(b"rabs-agent-secrets:" + key_material.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def _cipher() -> Fernet:
    return _fernet(settings.RABS_SECRET_ENCRYPTION_KEY or settings.SECRET_KEY)


def secret_seal(plain: str) -> str:
    """Encrypt a secret the control plane must use again (a supervisor's bearer token)."""
    return _cipher().encrypt(plain.encode()).decode()


def secret_open(sealed: str) -> str | None:
    """The secret ``secret_seal`` encrypted; None when it was sealed under another key."""
    plain = _decrypt(settings.RABS_SECRET_ENCRYPTION_KEY or settings.SECRET_KEY, sealed)
    return plain.decode() if plain is not None else None


def agent_credential_issue(*, agent: Agent) -> str:
    """Create a new signing secret for ``agent``, revoking any previous one. Returns it once."""
    secret = secrets.token_hex(32)
    with transaction.atomic():
        # Lock the agent row so two rotations at once cannot both leave an active key.
        Agent.objects.select_for_update().get(pk=agent.pk)
        AgentCredential.objects.filter(agent=agent, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        AgentCredential.objects.create(
            agent=agent,
            secret_encrypted=_cipher().encrypt(secret.encode()).decode(),
            fingerprint=hashlib.sha256(secret.encode()).hexdigest()[:12],
        )
    return secret


@dataclass(frozen=True)
class SigningKey:
    agent: Agent
    secret: bytes
    # The registry's generation token, read in the same round trip (see broker.registry).
    registry_token: str | None
    # The agent's generation (migration 0021): new whenever the agent or its keys change.
    generation: str | None = None
    # Kept in this process's memory, not read for this request: current only if the statement
    # that records the decision finds ``generation`` unchanged (it checks).
    remembered: bool = False


# Every signed request that is not answered from memory runs this: plain SQL spares it the
# ORM's query building (0.9 → 0.3 ms), and the registry's generation token comes along instead
# of costing a round trip of its own.
_AGENT_FIELDS = list(Agent._meta.concrete_fields)


def _agent_query(columns: str, table: str, where: str) -> str:
    """The agent's columns, ``columns`` of ``table`` (as ``t``, joined by agent id), the
    registry's generation token and the agent's generation, in that order."""
    return (
        f"SELECT {', '.join(f'a.{f.column}' for f in _AGENT_FIELDS)}, {columns},"
        " (SELECT token::text FROM registry_generation WHERE id = 1), a.generation::text"
        f" FROM {table} t JOIN {Agent._meta.db_table} a ON a.agent_id = t.agent_id"
        f" WHERE {where}"
    )


_AGENT_WITH_SECRET = _agent_query(
    "t.secret_encrypted",
    AgentCredential._meta.db_table,
    "t.agent_id = %s AND t.revoked_at IS NULL",
)
# The agent built from a row, by agent id, with the row it was built from: an unchanged row
# (every request but the first after a change) reuses it instead of building a model again.
_agents: dict[str, tuple[tuple[Any, ...], Agent]] = {}
# The last key read for each agent, offered to callers that check its generation themselves.
_remembered: dict[str, SigningKey] = {}
_BOUND = 10_000  # as many agents as the business has, in practice


def _agent_from(row: tuple[Any, ...]) -> Agent:
    cached = _agents.get(row[0])
    if cached is not None and cached[0] == row:
        return model_copy(cached[1])  # the caller may change it; the cached one stays as read
    values = [
        f.from_db_value(value, None, connection) if hasattr(f, "from_db_value") else value
        for f, value in zip(_AGENT_FIELDS, row, strict=True)
    ]
    agent = Agent.from_db("default", [f.attname for f in _AGENT_FIELDS], values)
    if len(_agents) > _BOUND:
        _agents.clear()
    _agents[row[0]] = (row, agent)
    return model_copy(agent)


def agent_secret_get(*, agent_id: str, remembered: bool = False) -> SigningKey | None:
    """An agent with its active signing secret (one query), or None if it has none (or the
    secret cannot be read).

    ``remembered``: the key this process read last for the agent, if any, without a query
    (``SigningKey.remembered``). Only for a caller that has the agent's ``generation`` checked
    by the statement that acts on it, and reads the key again (``remembered=False``) when that
    check fails or before it answers anything else."""
    if remembered:
        key = _remembered.get(agent_id)
        if key is not None:
            return SigningKey(
                model_copy(key.agent), key.secret, key.registry_token, key.generation, True
            )
    with connection.cursor() as cursor:
        cursor.execute(_AGENT_WITH_SECRET, [agent_id])
        row = cursor.fetchone()
    if row is None:
        _remembered.pop(agent_id, None)
        return None
    *agent_row, encrypted, token, generation = row
    agent = _agent_from(tuple(agent_row))
    secret = _decrypt(settings.RABS_SECRET_ENCRYPTION_KEY or settings.SECRET_KEY, encrypted)
    if secret is None:
        _remembered.pop(agent_id, None)
        return None
    key = SigningKey(agent, secret, token, generation)
    if len(_remembered) > _BOUND:
        _remembered.clear()
    _remembered[agent_id] = SigningKey(model_copy(agent), secret, token, generation)
    return key


@lru_cache(maxsize=1024)
def _decrypt(key_material: str, token: str) -> bytes | None:
    try:
        return _fernet(key_material).decrypt(token.encode())
    except InvalidToken:
        # Encrypted under another key (RABS_SECRET_ENCRYPTION_KEY changed): fail closed.
        return None


# --- Bearer tokens (MCP, A2A) ---------------------------------------------------------------

TOKEN_PREFIX = "rabs_"


def _token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def agent_token_issue(*, agent: Agent, label: str = "", expires_at: datetime | None = None) -> str:
    """A new bearer token for ``agent`` (its earlier tokens stay valid until revoked or
    expired). Only its sha256 is stored; the token is returned once."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    AgentToken.objects.create(
        agent=agent,
        token_sha256=_token_digest(token),
        prefix=token[:12],
        label=label,
        expires_at=expires_at,
    )
    return token


class TokenRefused(Exception):
    """A bearer token that does not admit its holder; ``code`` is machine-readable."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code, self.detail = code, detail


@dataclass(frozen=True)
class Bearer:
    """Who a bearer token admits: the agent at ``generation``, and the registry's generation
    token read in the same round trip."""

    agent: Agent
    generation: str | None
    registry_token: str | None
    # Kept in this process's memory, not read for this request: current only if the statement
    # that records the decision finds ``generation`` unchanged (it checks; migration 0038).
    remembered: bool = False


@dataclass(frozen=True)
class _Admitted:
    bearer: Bearer
    expires_at: datetime | None
    read_at: float  # time.monotonic()


_AGENT_BY_TOKEN = _agent_query(
    "t.id, t.revoked_at, t.expires_at, t.last_used_at",
    AgentToken._meta.db_table,
    "t.token_sha256 = %s",
)
# Tokens this process admitted, by digest. A remembered token is read again after this long
# (which also keeps ``last_used_at`` current for staff) or whenever a decision's statement finds
# its agent's generation changed.
_admitted: dict[str, _Admitted] = {}
REMEMBER_SECONDS = 60.0


def agent_token_remembered(*, token: str) -> Bearer | None:
    """What this process last admitted ``token`` as (no query), or None: then read it
    (``agent_token_bearer``). Only for a caller that has the agent's generation checked by the
    statement that acts on it, and reads the token again before it answers anything else."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    admitted = _admitted.get(_token_digest(token))
    if admitted is None or time.monotonic() - admitted.read_at > REMEMBER_SECONDS:
        return None
    if admitted.expires_at is not None and admitted.expires_at <= timezone.now():
        return None  # read again, and refused as expired
    return replace(admitted.bearer, agent=model_copy(admitted.bearer.agent))


def agent_token_bearer(*, token: str) -> Bearer:
    """The agent a bearer token admits (one query), or TokenRefused: unknown, revoked or
    expired token, or a paused agent (refused like on REST)."""
    if not token.startswith(TOKEN_PREFIX):
        raise TokenRefused("auth_unknown_token", "not a token of this broker")
    digest = _token_digest(token)
    _admitted.pop(digest, None)
    with connection.cursor() as cursor:
        cursor.execute(_AGENT_BY_TOKEN, [digest])
        row = cursor.fetchone()
    if row is None:
        raise TokenRefused("auth_unknown_token", "unknown token")
    *agent_row, token_id, revoked_at, expires_at, last_used_at, registry_token, generation = row
    agent = _agent_from(tuple(agent_row))
    now = timezone.now()
    if revoked_at is not None:
        raise TokenRefused("auth_token_revoked", "this token was revoked")
    if expires_at is not None and expires_at <= now:
        raise TokenRefused("auth_token_expired", "this token has expired")
    if agent.status == Agent.Status.PAUSED:
        raise TokenRefused("auth_agent_paused", f"{agent.agent_id} is paused by staff")
    # Once a minute is enough to show staff which tokens are in use.
    if last_used_at is None or now - last_used_at > timedelta(minutes=1):
        AgentToken.objects.filter(pk=token_id).update(last_used_at=now)
    bearer = Bearer(agent, generation, registry_token)
    if len(_admitted) > _BOUND:
        _admitted.clear()
    remembered = replace(bearer, agent=model_copy(agent), remembered=True)
    _admitted[digest] = _Admitted(remembered, expires_at, time.monotonic())
    return bearer


def agent_token_authenticate(*, token: str) -> Agent:
    """The agent a bearer token admits, read now, or TokenRefused (``agent_token_bearer``)."""
    return agent_token_bearer(token=token).agent


def agent_tokens_revoke(*, tokens: Iterable[AgentToken]) -> int:
    """Revoke tokens (staff, in the admin): refused from the next request. Returns how many."""
    ids = [t.pk for t in tokens]
    return AgentToken.objects.filter(pk__in=ids, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
