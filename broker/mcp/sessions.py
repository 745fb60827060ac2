"""MCP sessions: what a client set for itself (its log level, the resources it subscribed to),
kept in Redis so that every web process sees it.

Requests stay stateless (any web process answers any of them, identity from each request's
token); a session only names where the agent's notifications go. The gateway gives one to a
client at ``initialize`` (the ``Mcp-Session-Id`` header); the client's ``GET /mcp`` with it is
the stream of ``notifications/tools/list_changed``, ``notifications/message`` and
``notifications/resources/updated`` (``streams.py``); ``DELETE /mcp`` ends it. A session is
its agent's only: another agent's token finds no such session.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.cache import cache

PREFIX = "rabs:mcp:session:"


@dataclass
class Session:
    session_id: str
    agent_id: str
    level: str | None = None
    subscriptions: list[str] = field(default_factory=list)


def _redis() -> Any:
    return cache.redis()  # type: ignore[attr-defined]


def _save(session: Session) -> None:
    body = {"agent_id": session.agent_id, "level": session.level or ""}
    key, life = PREFIX + session.session_id, settings.RABS_MCP_SESSION_SECONDS
    pipe = _redis().pipeline(transaction=False)
    pipe.hset(key, mapping=body)
    pipe.expire(key, life)
    pipe.execute()


def session_open(*, agent_id: str) -> Session:
    session = Session(session_id=secrets.token_urlsafe(24), agent_id=agent_id)
    _save(session)
    return session


def session_read(*, session_id: str, agent_id: str) -> Session | None:
    """The session, if it exists and is ``agent_id``'s (its lifetime starts again)."""
    if not session_id or len(session_id) > 64:
        return None
    key, life = PREFIX + session_id, settings.RABS_MCP_SESSION_SECONDS
    pipe = _redis().pipeline(transaction=False)
    pipe.hgetall(key)
    pipe.smembers(key + ":subs")
    pipe.expire(key, life)
    pipe.expire(key + ":subs", life)
    body, subs, _, _ = pipe.execute()
    if not body or body.get(b"agent_id", b"").decode() != agent_id:
        return None
    return Session(
        session_id=session_id,
        agent_id=agent_id,
        level=body.get(b"level", b"").decode() or None,
        subscriptions=sorted(uri.decode() for uri in subs),
    )


def session_set_level(*, session: Session, level: str) -> None:
    session.level = level
    _redis().hset(PREFIX + session.session_id, "level", level)


def session_subscribe(*, session: Session, uri: str, subscribed: bool) -> None:
    key = PREFIX + session.session_id + ":subs"
    pipe = _redis().pipeline(transaction=False)
    if subscribed:
        pipe.sadd(key, uri)
        pipe.expire(key, settings.RABS_MCP_SESSION_SECONDS)
    else:
        pipe.srem(key, uri)
    pipe.execute()


def session_close(*, session: Session) -> None:
    key = PREFIX + session.session_id
    _redis().delete(key, key + ":subs")
