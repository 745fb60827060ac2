"""The gateway's counters in Redis (shared by every web process): per-minute requests and
tokens, parallel requests, and the running spend of the budget period. One Lua script admits a
request against ``max_budget``, ``rpm_limit``, ``tpm_limit`` and ``max_parallel_requests``
atomically, reserving its estimated tokens; another settles it (true tokens, the parallel slot
back, its cost onto the spend) and tells staff once per period when spend crosses
``soft_budget``. Fixed one-minute windows; the spend is seeded from PostgreSQL when Redis has
none (a new period, a restart)."""

from __future__ import annotations

import logging
import time
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.mail import send_mail

from brainframe.models import LLMBudget
from brainframe.services.llm import LLMRefused, duration_seconds, period_start, spend

log = logging.getLogger("broker.llm")

# Returns {0} (admitted), {1} (requests/minute), {2} (tokens/minute), {3} (parallel requests),
# {4} (no running spend for this period: seed it from PostgreSQL and ask again), {5, spend}
# (over budget). The budget is checked first: a refusal for it counts against nothing.
_ADMIT = """
local rpm, tpm = tonumber(ARGV[1]), tonumber(ARGV[2])
local parallel, estimate = tonumber(ARGV[3]), tonumber(ARGV[4])
local budget = tonumber(ARGV[5])
if budget > 0 then
  local spent = redis.call('GET', KEYS[4])
  if not spent then return {4} end
  if tonumber(spent) >= budget then return {5, spent} end
end
if rpm > 0 then
  local n = redis.call('INCR', KEYS[1])
  redis.call('EXPIRE', KEYS[1], 120)
  if n > rpm then return {1} end
end
if tpm > 0 then
  local used = tonumber(redis.call('GET', KEYS[2]) or '0')
  if used + estimate > tpm and used > 0 then return {2} end
  redis.call('INCRBY', KEYS[2], estimate)
  redis.call('EXPIRE', KEYS[2], 120)
end
if parallel > 0 then
  local n = redis.call('INCR', KEYS[3])
  redis.call('EXPIRE', KEYS[3], 900)
  if n > parallel then
    redis.call('DECR', KEYS[3])
    if tpm > 0 then redis.call('DECRBY', KEYS[2], estimate) end
    return {3}
  end
end
return {0}
"""
# Settles a request: its true tokens for the estimate, its parallel slot back, and its cost onto
# the period's running spend when there is one (else the next admission seeds it from the
# record, which has this request).
_SETTLE = """
local tpm_delta, release, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
if tpm_delta ~= 0 then redis.call('INCRBY', KEYS[1], tpm_delta) end
if release > 0 then redis.call('DECR', KEYS[2]) end
if redis.call('EXISTS', KEYS[3]) == 1 then
  return redis.call('INCRBYFLOAT', KEYS[3], cost)
end
return false
"""
_scripts: dict[tuple[int, str], Any] = {}


def _script(source: str) -> Any:
    client = cache.redis()  # type: ignore[attr-defined]
    script = _scripts.get((id(client), source))
    if script is None:
        script = _scripts[(id(client), source)] = client.register_script(source)
    return script


def _keys(agent_id: str, minute: int) -> list[str]:
    return [
        cache.make_key(f"llm:rpm:{agent_id}:{minute}"),
        cache.make_key(f"llm:tpm:{agent_id}:{minute}"),
        cache.make_key(f"llm:parallel:{agent_id}"),
    ]


def _spend_key(agent_id: str, duration: str) -> tuple[str, int]:
    """The running spend's key for the budget period that contains now, and its lifetime."""
    start = int(period_start(duration).timestamp())
    return (
        cache.make_key(f"llm:spend:{agent_id}:{duration}:{start}"),
        duration_seconds(duration) + 86400,
    )


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

    def settle(self, tokens: int, cost: Decimal = Decimal(0)) -> None:
        if self.settled:
            return
        self.settled = True
        tpm_key, parallel_key = _keys(self.agent_id, self.minute)[1:]
        spend_key, _ = _spend_key(self.agent_id, self.budget.budget_duration)
        after = _script(_SETTLE)(
            keys=[tpm_key, parallel_key, spend_key],
            args=[
                tokens - self.estimate if self.budget.tpm_limit else 0,
                1 if self.budget.max_parallel_requests else 0,
                str(cost),
            ],
        )
        soft = self.budget.soft_budget
        if soft is not None and after is not None and cost > 0:
            spent = Decimal(after.decode() if isinstance(after, bytes) else str(after))
            if spent - cost < soft <= spent:
                soft_budget_crossed(self.agent_id, self.budget, spent)


def soft_budget_crossed(agent_id: str, budget: LLMBudget, spent: Decimal) -> None:
    """Tell staff, once per period, that an agent's spend crossed its soft budget."""
    key, lifetime = _spend_key(agent_id, budget.budget_duration)
    if not cache.redis().set(key + ":soft", 1, nx=True, ex=lifetime):  # type: ignore[attr-defined]
        return
    staff = get_user_model().objects.filter(is_staff=True, is_active=True)
    recipients = sorted({user.email for user in staff if user.email})
    if not recipients:
        return
    try:
        send_mail(
            f"{agent_id} crossed its soft model budget",
            f"{agent_id} has spent USD {spent:.4f} on models this {budget.budget_duration} "
            f"period (soft budget {budget.soft_budget}, hard budget "
            f"{budget.max_budget if budget.max_budget is not None else 'none'}).",
            settings.RABS_NOTIFY_FROM_EMAIL,
            recipients,
        )
    except Exception:  # the mail is a courtesy; the gateway goes on
        log.warning("could not send the soft-budget mail", exc_info=True)


def admit(agent_id: str, budget: LLMBudget, body: dict[str, Any]) -> Slot:
    now = time.time()
    minute = int(now // 60)
    estimate = estimate_tokens(body) if budget.tpm_limit else 0
    spend_key, lifetime = _spend_key(agent_id, budget.budget_duration)
    args = [
        budget.rpm_limit or 0,
        budget.tpm_limit or 0,
        budget.max_parallel_requests or 0,
        estimate,
        str(budget.max_budget or 0),
    ]
    keys = [*_keys(agent_id, minute), spend_key]
    verdict = _script(_ADMIT)(keys=keys, args=args)
    if int(verdict[0]) == 4:
        cache.redis().set(  # type: ignore[attr-defined]
            spend_key, str(spend(agent_id, budget.budget_duration)), nx=True, ex=lifetime
        )
        verdict = _script(_ADMIT)(keys=keys, args=args)
    code = int(verdict[0])
    retry = int(60 - now % 60) + 1
    if code == 5:
        spent = Decimal(verdict[1].decode() if isinstance(verdict[1], bytes) else verdict[1])
        raise LLMRefused(
            429,
            "budget_exceeded",
            "budget_exceeded",
            f"Budget has been exceeded! Current cost: {spent:.6f}, "
            f"Max budget: {budget.max_budget} per {budget.budget_duration}",
        )
    if code == 1:
        raise LLMRefused(
            429,
            "rate_limit_exceeded",
            "rate_limit_exceeded",
            f"Rate limit reached for {agent_id}: {budget.rpm_limit} requests per minute.",
            retry_after=retry,
        )
    if code == 2:
        raise LLMRefused(
            429,
            "rate_limit_exceeded",
            "rate_limit_exceeded",
            f"Rate limit reached for {agent_id}: {budget.tpm_limit} tokens per minute.",
            retry_after=retry,
        )
    if code == 3:
        raise LLMRefused(
            429,
            "rate_limit_exceeded",
            "rate_limit_exceeded",
            f"Too many parallel requests for {agent_id}: at most {budget.max_parallel_requests}.",
            retry_after=1,
        )
    return Slot(agent_id, minute, estimate, budget)
