"""Admission to the model gateway: virtual keys, upstreams, budgets.

The gateway (``broker/llm/``) admits a request with ``llm_admit`` (key, suspension, model) and
records it with ``llm_record``; the per-minute counters and the running spend of the budget
period live in Redis beside it (``broker/llm/limits.py``). Spend is kept in PostgreSQL
(``LLMRequest.cost_usd``) and summed over the period that contains now when Redis has no running
copy (periods start at the Unix epoch: ``1d`` is the UTC day).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from functools import lru_cache
from typing import Any

from django.db import connection
from django.db.models import Sum
from django.utils import timezone

from brainframe.models import (
    Agent,
    LLMBudget,
    LLMKey,
    LLMRequest,
    LLMTeam,
    LLMUpstream,
)
from brainframe.services.access.credentials import secret_open, secret_seal

KEY_PREFIX = "rabs-llm-"
_DURATION = re.compile(r"^(\d{1,4})([hd])$")


class LLMRefused(Exception):
    """A request the gateway refuses: HTTP status, OpenAI error type and code, message; and the
    agent, when the key told who was asking (such a refusal is recorded)."""

    def __init__(
        self,
        status: int,
        kind: str,
        code: str,
        message: str,
        retry_after: int | None = None,
        agent_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.kind, self.code, self.message = status, kind, code, message
        self.retry_after, self.agent_id = retry_after, agent_id


def duration_seconds(text: str) -> int:
    match = _DURATION.match(text.strip())
    if match is None:
        raise ValueError(f"{text!r}: a duration is Nh or Nd, e.g. 1d or 30d")
    number, unit = int(match.group(1)), match.group(2)
    if number < 1:
        raise ValueError(f"{text!r}: at least 1{unit}")
    return number * (3600 if unit == "h" else 86400)


def period_start(duration: str, now: datetime | None = None) -> datetime:
    seconds = duration_seconds(duration)
    now = now or timezone.now()
    start = int(now.timestamp()) // seconds * seconds
    return datetime.fromtimestamp(start, tz=now.tzinfo or timezone.get_current_timezone())


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def llm_key_issue(*, agent: Agent) -> str:
    """A new virtual key for ``agent`` (earlier ones stay valid until revoked); shown once."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    LLMKey.objects.create(agent=agent, prefix=key[: len(KEY_PREFIX) + 6], key_sha256=_digest(key))
    return key


def llm_upstream_set(
    *,
    name: str,
    base_url: str,
    served_models: list[str],
    api_key: str | None,
    price_in: Decimal | None = None,
    price_out: Decimal | None = None,
    external: bool | None = None,
) -> LLMUpstream:
    """Add or change an upstream; ``api_key`` None keeps the stored one ("" clears it)."""
    upstream = LLMUpstream.objects.filter(name=name).first() or LLMUpstream(name=name)
    upstream.base_url = base_url.rstrip("/")
    upstream.served_models = served_models
    if api_key is not None:
        upstream.api_key_encrypted = secret_seal(api_key) if api_key else ""
    if price_in is not None:
        upstream.price_in = price_in
    if price_out is not None:
        upstream.price_out = price_out
    if external is not None:
        upstream.external = external
    upstream.full_clean()
    upstream.save()
    return upstream


def upstream_api_key(upstream: LLMUpstream) -> str:
    if not upstream.api_key_encrypted:
        return ""
    key = secret_open(upstream.api_key_encrypted)
    if key is None:
        raise LLMRefused(
            503, "server_error", "upstream_key_unreadable", f"{upstream.name}'s key: set it again"
        )
    return key


@dataclass(frozen=True)
class Admitted:
    """What a request may do: whose it is, its limits, and (for a model request) where it goes."""

    agent_id: str
    key_id: str
    budget: LLMBudget
    role: str = ""
    model: str = ""
    upstream: LLMUpstream | None = None
    upstreams: list[LLMUpstream] | None = None  # every enabled one, as admission read them
    teams: list[LLMTeam] = field(default_factory=list)  # whose limits it counts against too


_BUDGET_FIELDS = (
    "rpm_limit",
    "tpm_limit",
    "max_parallel_requests",
    "max_budget",
    "budget_duration",
    "soft_budget",
    "allowed_models",
    "aliases",
    "suspended",
    "store_bodies",
    "cache",
    "cache_threshold",
    "consent_pii",
)


def _json_object(alias: str, fields: tuple[str, ...]) -> str:
    return "json_build_object(" + ", ".join(f"'{f}', {alias}.{f}" for f in fields) + ")"


@lru_cache(maxsize=1)
def _admission_sql() -> str:
    """One statement for everything admission reads: the key, its agent, the agent's model
    access and teams, every enabled upstream (plain SQL: building it through the ORM cost more
    than running it)."""
    upstreams = _json_object("u", _UPSTREAM_FIELDS)
    teams = _json_object("t", _TEAM_FIELDS)
    budget = ", ".join(f"b.{f}" for f in _BUDGET_FIELDS)
    return (
        "SELECT k.id, k.agent_id, k.revoked_at, k.last_used_at, a.status, "
        f"b.agent_id IS NOT NULL, {budget}, "
        f"(SELECT coalesce(json_agg({upstreams} ORDER BY u.name), '[]'::json) "
        " FROM llm_upstreams u WHERE u.enabled), "
        f"(SELECT coalesce(json_agg({teams} ORDER BY t.name), '[]'::json) "
        " FROM llm_teams t JOIN llm_teams_agents m ON m.llmteam_id = t.name "
        " WHERE m.agent_id = k.agent_id) "
        "FROM llm_keys k JOIN agents a ON a.agent_id = k.agent_id "
        "LEFT JOIN llm_budgets b ON b.agent_id = k.agent_id "
        "WHERE k.key_sha256 = %s"
    )


def _decoded(value: Any) -> Any:
    # Django's psycopg set-up hands json and jsonb back as text.
    return json.loads(value) if isinstance(value, str) else value


@dataclass(frozen=True)
class _Found:
    key_id: str
    agent_id: str
    budget: LLMBudget
    upstreams: list[LLMUpstream]
    teams: list[LLMTeam]


def _authenticate(key: str) -> _Found:
    if not key.startswith(KEY_PREFIX):
        raise LLMRefused(401, "invalid_request_error", "invalid_api_key", "not a gateway key")
    with connection.cursor() as cursor:
        cursor.execute(_admission_sql(), [_digest(key)])
        row = cursor.fetchone()
    if row is None:
        raise LLMRefused(401, "invalid_request_error", "invalid_api_key", "unknown key")
    key_id, who, revoked_at, last_used_at, status, has_budget = row[:6]
    budget_values = row[6 : 6 + len(_BUDGET_FIELDS)]
    upstreams, teams = (_decoded(v) for v in row[6 + len(_BUDGET_FIELDS) :])
    if revoked_at is not None:
        raise LLMRefused(
            401, "invalid_request_error", "invalid_api_key", "this key was revoked", agent_id=who
        )
    if status == Agent.Status.PAUSED:
        raise LLMRefused(
            403, "permission_denied", "agent_paused", f"{who} is paused by staff", agent_id=who
        )
    if not has_budget:
        raise LLMRefused(
            403, "permission_denied", "no_model_access", f"{who} has no model access", agent_id=who
        )
    fields = dict(zip(_BUDGET_FIELDS, budget_values, strict=True))
    fields["allowed_models"] = _decoded(fields["allowed_models"])
    fields["aliases"] = _decoded(fields["aliases"])
    budget = LLMBudget(agent_id=who, **fields)
    if budget.suspended:
        raise LLMRefused(
            403,
            "permission_denied",
            "model_access_suspended",
            f"{who}'s model access is suspended by staff",
            agent_id=who,
        )
    now = timezone.now()
    if last_used_at is None or now - last_used_at > timedelta(minutes=1):
        LLMKey.objects.filter(pk=key_id).update(last_used_at=now)
    return _Found(
        key_id=str(key_id),
        agent_id=who,
        budget=budget,
        upstreams=[_upstream(dict(u)) for u in upstreams],
        teams=[_team(dict(t)) for t in teams],
    )


_UPSTREAM_FIELDS = (
    "name",
    "base_url",
    "api_key_encrypted",
    "served_models",
    "price_in",
    "price_out",
    "external",
    "enabled",
)


_TEAM_FIELDS = (
    "name",
    "allowed_models",
    "rpm_limit",
    "tpm_limit",
    "max_parallel_requests",
    "max_budget",
    "budget_duration",
    "soft_budget",
    "suspended",
)


def _team(fields: dict[str, Any]) -> LLMTeam:
    """A team from its JSON copy (money arrives as JSON numbers)."""
    fields["allowed_models"] = _decoded(fields["allowed_models"])
    for money in ("max_budget", "soft_budget"):
        if fields[money] is not None:  # as the column keeps it: four places
            fields[money] = Decimal(str(fields[money])).quantize(Decimal("0.0001"))
    return LLMTeam(**fields)


def team_spend(team: str, duration: str) -> Decimal:
    """What the team's agents' requests cost in the budget period that contains now."""
    total = LLMRequest.objects.filter(
        agent__llm_teams=team, created_at__gte=period_start(duration)
    ).aggregate(total=Sum("cost_usd"))["total"]
    return Decimal(total or 0)


def _upstream(fields: dict[str, Any]) -> LLMUpstream:
    """An upstream from its JSON copy (prices arrive as JSON numbers)."""
    for price in ("price_in", "price_out"):
        fields[price] = Decimal(str(fields[price])).quantize(Decimal("0.0001"))
    return LLMUpstream(**fields)


def allowed_models(
    budget: LLMBudget,
    upstreams: list[LLMUpstream] | None = None,
    teams: list[LLMTeam] | None = None,
) -> dict[str, LLMUpstream]:
    """Model → upstream for every model this agent may use: served by an enabled upstream, in
    its own allowlist and in each of its teams' (an empty allowlist allows every model)."""
    served: dict[str, LLMUpstream] = {}
    if upstreams is None:
        upstreams = list(LLMUpstream.objects.filter(enabled=True).order_by("name"))
    for upstream in upstreams:
        for model in upstream.served_models:
            served.setdefault(str(model), upstream)
    for allowlist in [budget.allowed_models] + [t.allowed_models for t in teams or []]:
        if allowlist:
            served = {m: u for m, u in served.items() if m in allowlist}
    return served


def spend(agent_id: str, duration: str) -> Decimal:
    """What the agent's requests cost in the budget period that contains now (the record's
    sum; the gateway keeps a running copy in Redis, seeded from this)."""
    total = LLMRequest.objects.filter(
        agent_id=agent_id, created_at__gte=period_start(duration)
    ).aggregate(total=Sum("cost_usd"))["total"]
    return Decimal(total or 0)


def llm_admit(*, key: str, model: str | None) -> Admitted:
    """Admit one request (``model`` None: listing models) or raise LLMRefused."""
    found = _authenticate(key)
    budget, upstreams, teams = found.budget, found.upstreams, found.teams
    if model is None:
        return Admitted(
            agent_id=found.agent_id,
            key_id=found.key_id,
            budget=budget,
            upstreams=upstreams,
            teams=teams,
        )
    role = model if model in budget.aliases else ""
    target = str(budget.aliases[model]) if role else model
    upstream = allowed_models(budget, upstreams, teams).get(target)
    if upstream is None:
        raise LLMRefused(
            404,
            "invalid_request_error",
            "model_not_found",
            f"The model `{model}` does not exist or you do not have access to it.",
            agent_id=found.agent_id,
        )
    return Admitted(
        agent_id=found.agent_id,
        key_id=found.key_id,
        budget=budget,
        role=role,
        model=target,
        upstream=upstream,
        upstreams=upstreams,
        teams=teams,
    )
