"""Per-agent rate limits on the agent API (Redis-backed, shared by every web process).

A sliding-window counter: each agent has one counter per window of the rate's period, and a
request is allowed while ``previous window × (share of it still inside the sliding window) +
current window`` stays within the limit. One Redis round trip (INCR, EXPIRE, GET in a pipeline),
atomic across processes, constant memory per agent whatever the rate.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.cache import cache
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from ..errors import BrokerRefusal

_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """``"1200/min"`` → (1200, 60). The period is read by its first letter, as DRF does."""
    count, _, period = rate.partition("/")
    return int(count), _PERIODS[period[:1]]


def _key(agent_id: str, window: int) -> str:
    return cache.make_key(f"throttle:agent:{agent_id}:{window}")


def throttle_reset(agent_id: str) -> None:
    """Forget an agent's recent requests (staff lifting a limit; tests)."""
    if settings.RABS_AGENT_RATE:
        _, period = parse_rate(str(settings.RABS_AGENT_RATE))
        window = int(time.time() // period)
        cache.redis().delete(_key(agent_id, window), _key(agent_id, window - 1))  # type: ignore[attr-defined]


class AgentRateThrottle(BaseThrottle):
    """``RABS_AGENT_RATE`` requests per agent (e.g. "1200/min"); over it: 429 rate_limited.

    Refused requests count too, so an agent that keeps hammering stays refused."""

    def __init__(self) -> None:
        self.retry_after: float | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        agent_id = getattr(getattr(request, "auth", None), "agent_id", None)
        if not settings.RABS_AGENT_RATE or not agent_id:
            return True
        limit, period = parse_rate(str(settings.RABS_AGENT_RATE))
        now = time.time()
        window = int(now // period)
        current_key = _key(agent_id, window)
        try:
            pipe = cache.redis().pipeline(transaction=False)  # type: ignore[attr-defined]
            pipe.incr(current_key)
            pipe.expire(current_key, 2 * period)
            pipe.get(_key(agent_id, window - 1))
            current, _, previous = pipe.execute()
        except Exception as exc:  # the limiter is down: fail closed
            raise BrokerRefusal(
                503, "rate_limiter_unavailable", "cannot check the rate limit right now; retry"
            ) from exc
        elapsed = (now - window * period) / period
        estimated = int(previous or 0) * (1 - elapsed) + int(current)
        if estimated <= limit:
            return True
        # Free again once the previous window's share has slid out far enough (or, when the
        # current window alone is over, when it ends).
        self.retry_after = period * (1 - elapsed)
        return False

    def wait(self) -> float | None:
        return self.retry_after
