"""The gateway's counters in Redis (shared by every web process): per-minute requests and
tokens, parallel requests, and the running spend of the budget period. One Lua script admits a
request against ``max_budget``, ``rpm_limit``, ``tpm_limit`` and ``max_parallel_requests``
atomically, reserving its estimated tokens and its worst-case cost (the prompt estimate at the
input price plus ``max_tokens`` — or ``RABS_LLM_DEFAULT_MAX_OUTPUT_TOKENS`` — at the output
price) on the period's running spend; another settles it (true tokens, the parallel slot back,
the reservation replaced by its real cost) and tells staff once per period when spend crosses
``soft_budget``. So requests in flight count against the budget: however many run at once, the
spend passes the budget by at most the one request admitted last. Fixed one-minute windows; the
spend is seeded from PostgreSQL when Redis has none (a new period, a restart)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.mail import send_mail

from brainframe.models import LLMBudget, LLMTeam, LLMUpstream
from brainframe.services.llm.admission import (
    LLMRefused,
    duration_seconds,
    period_start,
    spend,
    team_spend,
)
from brainframe.services.llm.records import cost_of

log = logging.getLogger("broker.llm")

# Returns {0} (admitted), {1} (requests/minute), {2} (tokens/minute), {3} (parallel requests),
# {4} (no running spend for this period: seed it from PostgreSQL and ask again), {5, spend}
# (over budget: spend with what is reserved). The budget is checked first: a refusal for it
# counts against nothing; an admitted request's worst-case cost is reserved last.
_ADMIT = """
local rpm, tpm = tonumber(ARGV[1]), tonumber(ARGV[2])
local parallel, estimate = tonumber(ARGV[3]), tonumber(ARGV[4])
local budget, reserve = tonumber(ARGV[5]), tonumber(ARGV[6])
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
if budget > 0 and reserve > 0 then redis.call('INCRBYFLOAT', KEYS[4], ARGV[6]) end
return {0}
"""
# Settles a request: its true tokens for the estimate, its parallel slot back, and its cost in
# place of its reservation on the period's running spend when there is one (else the next
# admission seeds it from the record, which has this request).
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


@dataclass(frozen=True)
class Scope:
    """Whose limits: an agent's (its ``LLMBudget``) or a team's (an ``LLMTeam``: its agents'
    requests together). Both carry the same limit fields."""

    kind: str  # "agent" / "team"
    name: str
    limits: LLMBudget | LLMTeam

    @property
    def label(self) -> str:
        return self.name if self.kind == "agent" else f"team {self.name}"

    def spend(self) -> Decimal:
        duration = self.limits.budget_duration
        if self.kind == "agent":
            return spend(self.name, duration)
        return team_spend(self.name, duration)


def _keys(scope: Scope, minute: int) -> list[str]:
    base = f"llm:{scope.kind}:{scope.name}"
    return [
        cache.make_key(f"{base}:rpm:{minute}"),
        cache.make_key(f"{base}:tpm:{minute}"),
        cache.make_key(f"{base}:parallel"),
    ]


def _spend_key(scope: Scope) -> tuple[str, int]:
    """The running spend's key for the budget period that contains now, and its lifetime."""
    duration = scope.limits.budget_duration
    start = int(period_start(duration).timestamp())
    return (
        cache.make_key(f"llm:{scope.kind}:{scope.name}:spend:{duration}:{start}"),
        duration_seconds(duration) + 86400,
    )


def estimate_tokens(body: dict[str, Any]) -> int:
    """A request's tokens before it runs: its text at ~4 characters a token, plus what it may
    write (max_tokens, or 256)."""
    text = len(str(body.get("messages") or body.get("input") or ""))
    most = body.get("max_completion_tokens") or body.get("max_tokens") or 256
    return text // 4 + (int(most) if isinstance(most, int) and most > 0 else 256)


def worst_case_cost(upstream: LLMUpstream | None, body: dict[str, Any]) -> Decimal:
    """What a request may cost at most: its prompt (estimated) at the input price and all it
    may write (``max_completion_tokens`` / ``max_tokens``, else
    ``RABS_LLM_DEFAULT_MAX_OUTPUT_TOKENS``) at the output price."""
    if upstream is None:
        return Decimal(0)
    prompt = len(str(body.get("messages") or body.get("input") or "")) // 4
    most = body.get("max_completion_tokens") or body.get("max_tokens")
    if not isinstance(most, int) or most <= 0:
        most = settings.RABS_LLM_DEFAULT_MAX_OUTPUT_TOKENS
    return cost_of(upstream, prompt, most)


@dataclass
class _Hold:
    scope: Scope
    minute: int
    estimate: int
    spend_key: str = ""
    reserved: Decimal = Decimal(0)


class Slot:
    """An admitted request's hold on its agent's and its teams' counters until it is settled."""

    def __init__(self, holds: list[_Hold]) -> None:
        self.holds = holds
        self.settled = False

    def settle(self, tokens: int, cost: Decimal = Decimal(0)) -> None:
        if self.settled:
            return
        self.settled = True
        for hold in self.holds:
            _settle(hold, tokens, cost)


def _settle(hold: _Hold, tokens: int, cost: Decimal) -> None:
    limits = hold.scope.limits
    tpm_key, parallel_key = _keys(hold.scope, hold.minute)[1:]
    # The period the request was admitted in: its reservation is there.
    spend_key = hold.spend_key or _spend_key(hold.scope)[0]
    after = _script(_SETTLE)(
        keys=[tpm_key, parallel_key, spend_key],
        args=[
            tokens - hold.estimate if limits.tpm_limit else 0,
            1 if limits.max_parallel_requests else 0,
            str(cost - hold.reserved),
        ],
    )
    soft = limits.soft_budget
    if soft is not None and after is not None and cost > 0:
        spent = Decimal(after.decode() if isinstance(after, bytes) else str(after))
        if spent - cost < soft <= spent:
            soft_budget_crossed(hold.scope, spent)


def soft_budget_crossed(scope: Scope, spent: Decimal) -> None:
    """Tell staff, once per period, that an agent's or a team's spend crossed its soft budget."""
    key, lifetime = _spend_key(scope)
    if not cache.redis().set(key + ":soft", 1, nx=True, ex=lifetime):  # type: ignore[attr-defined]
        return
    staff = get_user_model().objects.filter(is_staff=True, is_active=True)
    recipients = sorted({user.email for user in staff if user.email})
    if not recipients:
        return
    limits = scope.limits
    try:
        send_mail(
            f"{scope.label} crossed its soft model budget",
            f"{scope.label} has spent USD {spent:.4f} on models this {limits.budget_duration} "
            f"period (soft budget {limits.soft_budget}, hard budget "
            f"{limits.max_budget if limits.max_budget is not None else 'none'}).",
            settings.RABS_NOTIFY_FROM_EMAIL,
            recipients,
        )
    except Exception:  # the mail is a courtesy; the gateway goes on
        log.warning("could not send the soft-budget mail", exc_info=True)


def _admit_one(scope: Scope, body: dict[str, Any], now: float, reserve: Decimal) -> _Hold:
    limits = scope.limits
    minute = int(now // 60)
    estimate = estimate_tokens(body) if limits.tpm_limit else 0
    spend_key, lifetime = _spend_key(scope)
    reserved = reserve if limits.max_budget else Decimal(0)
    args = [
        limits.rpm_limit or 0,
        limits.tpm_limit or 0,
        limits.max_parallel_requests or 0,
        estimate,
        str(limits.max_budget or 0),
        str(reserved),
    ]
    keys = [*_keys(scope, minute), spend_key]
    verdict = _script(_ADMIT)(keys=keys, args=args)
    if int(verdict[0]) == 4:
        cache.redis().set(spend_key, str(scope.spend()), nx=True, ex=lifetime)  # type: ignore[attr-defined]
        verdict = _script(_ADMIT)(keys=keys, args=args)
    code = int(verdict[0])
    retry = int(60 - now % 60) + 1
    who = scope.label
    if code == 5:
        spent = Decimal(verdict[1].decode() if isinstance(verdict[1], bytes) else verdict[1])
        raise LLMRefused(
            429,
            "budget_exceeded",
            "budget_exceeded",
            f"Budget has been exceeded{'' if scope.kind == 'agent' else f' for {who}'}! "
            f"Current cost: {spent:.6f}, "
            f"Max budget: {limits.max_budget} per {limits.budget_duration}",
        )
    if code in (1, 2):
        what = f"{limits.rpm_limit} requests" if code == 1 else f"{limits.tpm_limit} tokens"
        raise LLMRefused(
            429,
            "rate_limit_exceeded",
            "rate_limit_exceeded",
            f"Rate limit reached for {who}: {what} per minute.",
            retry_after=retry,
        )
    if code == 3:
        raise LLMRefused(
            429,
            "rate_limit_exceeded",
            "rate_limit_exceeded",
            f"Too many parallel requests for {who}: at most {limits.max_parallel_requests}.",
            retry_after=1,
        )
    return _Hold(scope, minute, estimate, spend_key, reserved)


def admit(
    agent_id: str,
    budget: LLMBudget,
    body: dict[str, Any],
    teams: Sequence[LLMTeam] = (),
    upstream: LLMUpstream | None = None,
) -> Slot:
    """Admit a request against its agent's limits, then each of its teams'; a refusal by any
    gives back what the others reserved. ``upstream``: where it goes (its prices make the
    worst-case cost reserved against budgets)."""
    now = time.time()
    reserve = worst_case_cost(upstream, body)
    holds = [_admit_one(Scope("agent", agent_id, budget), body, now, reserve)]
    try:
        for team in teams:
            if team.suspended:
                raise LLMRefused(
                    403,
                    "permission_denied",
                    "model_access_suspended",
                    f"team {team.name}'s model access is suspended by staff",
                )
            holds.append(_admit_one(Scope("team", team.name, team), body, now, reserve))
    except LLMRefused:
        for hold in holds:  # nothing was used: the reservations back, the slots free
            _settle(hold, 0, Decimal(0))
        raise
    return Slot(holds)
