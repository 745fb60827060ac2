"""Per-agent rate limits on the agent API (Redis-backed, shared by every web process).

A sliding-window counter in place of DRF's timestamp history (a pickled list read and rewritten
whole on every request, and racy across processes): each agent has one counter per window of
the rate's period, and a request is allowed while ``previous window × (share of it still inside
the sliding window) + current window`` stays within the limit. One Redis round trip (INCR,
EXPIRE, GET in a pipeline), atomic across processes, constant memory per agent whatever the rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from ..errors import BrokerRefusal


@dataclass(frozen=True)
class RateCounts:
    """An agent's counters as one request found them (the request itself counted)."""

    at: float
    current: int
    previous: int


class AgentRateThrottle(SimpleRateThrottle):
    """``RABS_AGENT_RATE`` requests per agent (e.g. "1200/min"); over it: 429 rate_limited.

    Refused requests count too, so an agent that keeps hammering stays refused."""

    num_requests: int  # set by SimpleRateThrottle from the rate
    duration: int
    retry_after: float | None = None

    def get_rate(self) -> str | None:
        return str(settings.RABS_AGENT_RATE) if settings.RABS_AGENT_RATE else None

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        agent_id = getattr(getattr(request, "auth", None), "agent_id", None)
        return f"throttle:agent:{agent_id}" if agent_id else None

    def window_keys(self, base: str, window: int) -> tuple[str, str]:
        """The Redis keys of ``window``'s counter and of the one before it."""
        return (
            self.cache.make_key(f"{base}:{window}"),
            self.cache.make_key(f"{base}:{window - 1}"),
        )

    def count(self, pipe: Any, agent_id: str, now: float) -> None:
        """Queue this request's count on ``pipe`` (INCR, EXPIRE, GET: three of its replies)."""
        window = int(now // self.duration)
        current_key, previous_key = self.window_keys(f"throttle:agent:{agent_id}", window)
        pipe.incr(current_key)
        pipe.expire(current_key, 2 * self.duration)
        pipe.get(previous_key)

    def allow_request(self, request: Request, view: Any) -> bool:
        base = self.get_cache_key(request, view) if self.rate else None
        if base is None:
            return True
        counted = getattr(request.user, "rate_counts", None)
        if isinstance(counted, RateCounts):  # counted with the replay guard, one round trip
            now, current, previous = counted.at, counted.current, counted.previous
        else:
            now = self.timer()
            try:
                pipe = self.cache.redis().pipeline(transaction=False)  # type: ignore[attr-defined]
                self.count(pipe, str(request.auth.agent_id), now)  # type: ignore[union-attr]
                current, _, previous = pipe.execute()
            except Exception as exc:  # the limiter is down: fail closed
                raise BrokerRefusal(
                    503, "rate_limiter_unavailable", "cannot check the rate limit right now; retry"
                ) from exc
        return self.admits(now, int(current), int(previous or 0))

    def admits(self, now: float, current: int, previous: int) -> bool:
        """Whether counts taken at ``now`` are within the limit (else ``retry_after`` is set)."""
        window = int(now // self.duration)
        elapsed = (now - window * self.duration) / self.duration
        if previous * (1 - elapsed) + current <= self.num_requests:
            return True
        # Free again once the previous window's share has slid out far enough (or, when the
        # current window alone is over, when it ends).
        self.retry_after = self.duration * (1 - elapsed)
        return False

    def wait(self) -> float | None:
        return self.retry_after


def throttle_reset(agent_id: str) -> None:
    """Forget an agent's recent requests (staff lifting a limit; tests)."""
    throttle = AgentRateThrottle()
    if throttle.rate:
        window = int(throttle.timer() // throttle.duration)
        throttle.cache.redis().delete(  # type: ignore[attr-defined]
            *throttle.window_keys(f"throttle:agent:{agent_id}", window)
        )


# The replay guard and the rate count as one command: SET NX EX of the nonce, then (with a rate)
# INCR and EXPIRE of the current window's counter and GET of the previous one's. One command
# packed instead of four (the packing cost more than Redis's work), and atomic besides.
_GUARD_AND_COUNT = """
local fresh = redis.call('SET', KEYS[1], 1, 'NX', 'EX', ARGV[1])
if #KEYS == 1 then return {fresh and 1 or 0} end
local current = redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
return {fresh and 1 or 0, current, redis.call('GET', KEYS[3]) or 0}
"""
_scripts: dict[int, Any] = {}


def _guard_and_count_script() -> Any:
    client = cache.redis()  # type: ignore[attr-defined]
    script = _scripts.get(id(client))
    if script is None:
        # EVALSHA, loading the script again when Redis lost it (a restart).
        script = _scripts[id(client)] = client.register_script(_GUARD_AND_COUNT)
    return script


def replay_guard_and_count(*, agent_id: str, nonce: str, window_seconds: int) -> tuple[bool, Any]:
    """The replay guard and the rate count of one signed request, in one Redis round trip:
    (whether the nonce is fresh, the agent's RateCounts or None without a rate limit). Raises
    what Redis raises (the caller fails closed)."""
    throttle = AgentRateThrottle()
    nonce_key = cache.make_key(f"nonce:{agent_id}:{nonce}")
    now = throttle.timer()
    if not throttle.rate:
        replies = _guard_and_count_script()(keys=[nonce_key], args=[2 * window_seconds])
        return bool(replies[0]), None
    window = int(now // throttle.duration)
    current_key, previous_key = throttle.window_keys(f"throttle:agent:{agent_id}", window)
    fresh, current, previous = _guard_and_count_script()(
        keys=[nonce_key, current_key, previous_key],
        args=[2 * window_seconds, 2 * throttle.duration],
    )
    return bool(fresh), RateCounts(at=now, current=int(current), previous=int(previous or 0))
