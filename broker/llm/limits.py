"""The gateway's per-minute counters and parallel-request gauge, in Redis (shared by every web
process): one Lua script admits a request against ``rpm_limit``, ``tpm_limit`` and
``max_parallel_requests`` atomically, reserving its estimated tokens; ``settle`` puts the true
count in their place and releases the parallel slot. Fixed one-minute windows."""

from __future__ import annotations

import time
from typing import Any

from django.core.cache import cache

from brainframe.models import LLMBudget
from brainframe.services.llm import LLMRefused

# Returns 0 (admitted), 1 (requests/minute), 2 (tokens/minute), 3 (parallel requests).
_ADMIT = """
local rpm, tpm = tonumber(ARGV[1]), tonumber(ARGV[2])
local parallel, estimate = tonumber(ARGV[3]), tonumber(ARGV[4])
if rpm > 0 then
  local n = redis.call('INCR', KEYS[1])
  redis.call('EXPIRE', KEYS[1], 120)
  if n > rpm then return 1 end
end
if tpm > 0 then
  local used = tonumber(redis.call('GET', KEYS[2]) or '0')
  if used + estimate > tpm and used > 0 then return 2 end
  redis.call('INCRBY', KEYS[2], estimate)
  redis.call('EXPIRE', KEYS[2], 120)
end
if parallel > 0 then
  local n = redis.call('INCR', KEYS[3])
  redis.call('EXPIRE', KEYS[3], 900)
  if n > parallel then
    redis.call('DECR', KEYS[3])
    if tpm > 0 then redis.call('DECRBY', KEYS[2], estimate) end
    return 3
  end
end
return 0
"""
_scripts: dict[int, Any] = {}


def _script() -> Any:
    client = cache.redis()  # type: ignore[attr-defined]
    script = _scripts.get(id(client))
    if script is None:
        script = _scripts[id(client)] = client.register_script(_ADMIT)
    return script


def _keys(agent_id: str, minute: int) -> list[str]:
    return [
        cache.make_key(f"llm:rpm:{agent_id}:{minute}"),
        cache.make_key(f"llm:tpm:{agent_id}:{minute}"),
        cache.make_key(f"llm:parallel:{agent_id}"),
    ]


def estimate_tokens(body: dict[str, Any]) -> int:
    """A request's tokens before it runs: its text at ~4 characters a token, plus what it may
    write (max_tokens, or 256)."""
    text = len(str(body.get("messages") or body.get("input") or ""))
    most = body.get("max_completion_tokens") or body.get("max_tokens") or 256
    return text // 4 + (int(most) if isinstance(most, int) and most > 0 else 256)


class Slot:
    """An admitted request's hold on its counters until it is settled."""

    def __init__(self, agent_id: str, minute: int, estimate: int, budget: LLMBudget) -> None:
        self.agent_id, self.minute, self.estimate, self.budget = agent_id, minute, estimate, budget
        self.settled = False

    def settle(self, tokens: int) -> None:
        if self.settled:
            return
        self.settled = True
        tpm_key, parallel_key = _keys(self.agent_id, self.minute)[1:]
        pipe = cache.redis().pipeline(transaction=False)  # type: ignore[attr-defined]
        if self.budget.tpm_limit:
            pipe.incrby(tpm_key, tokens - self.estimate)
        if self.budget.max_parallel_requests:
            pipe.decr(parallel_key)
        pipe.execute()


def admit(agent_id: str, budget: LLMBudget, body: dict[str, Any]) -> Slot:
    now = time.time()
    minute = int(now // 60)
    estimate = estimate_tokens(body) if budget.tpm_limit else 0
    verdict = _script()(
        keys=_keys(agent_id, minute),
        args=[
            budget.rpm_limit or 0,
            budget.tpm_limit or 0,
            budget.max_parallel_requests or 0,
            estimate,
        ],
    )
    retry = int(60 - now % 60) + 1
    if verdict == 1:
        raise LLMRefused(
            429,
            "rate_limit_exceeded",
            "rate_limit_exceeded",
            f"Rate limit reached for {agent_id}: {budget.rpm_limit} requests per minute.",
            retry_after=retry,
        )
    if verdict == 2:
        raise LLMRefused(
            429,
            "rate_limit_exceeded",
            "rate_limit_exceeded",
            f"Rate limit reached for {agent_id}: {budget.tpm_limit} tokens per minute.",
            retry_after=retry,
        )
    if verdict == 3:
        raise LLMRefused(
            429,
            "rate_limit_exceeded",
            "rate_limit_exceeded",
            f"Too many parallel requests for {agent_id}: at most {budget.max_parallel_requests}.",
            retry_after=1,
        )
    return Slot(agent_id, minute, estimate, budget)
