"""Three-axis caps (seed 002): capability × autonomy × authority, each capped on its own per
agent (``Agent.caps``). docs/access.md is the reference.

- capability: the highest permission tier and the tool categories the agent may use at all;
- autonomy: the highest monitoring level any tool may run at for this agent (graduation never
  lifts past it), and how many calls an hour may execute with no human look;
- authority: what one call, and one day of calls, may carry: amounts, record counts, external
  recipients.

A call over a cap is refused (``over: deny``) or sent to review (``over: review``) with the axis
named. Defaults: capability denies, autonomy and authority send to review.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from brainframe.choices import PermissionTier

from .acl import RECIPIENT_ARGUMENTS
from .conditions import document_errors

#: Argument names that carry money (authority's amounts).
AMOUNT_ARGUMENTS = ("amount", "total", "amount_aud")
#: Numeric argument names that say how many records a call touches.
COUNT_ARGUMENTS = ("count", "limit", "max_records")

_TIERS = [t.value for t in PermissionTier]
_OVER = {"enum": ["deny", "review"]}
_LIMIT = {"type": "number", "minimum": 0}

CAPS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "capability": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_tier": {"enum": _TIERS},
                "categories": {"type": "array", "items": {"type": "string"}},
                "over": _OVER,
            },
        },
        "autonomy": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_level": {"type": "integer", "minimum": 0, "maximum": 4},
                "unreviewed_per_hour": {"type": "integer", "minimum": 0},
                "over": _OVER,
            },
        },
        "authority": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_amount": _LIMIT,
                "max_amount_per_day": _LIMIT,
                "max_records": {"type": "integer", "minimum": 0},
                "max_recipients": {"type": "integer", "minimum": 0},
                "max_recipients_per_day": {"type": "integer", "minimum": 0},
                "over": _OVER,
            },
        },
    },
}

_DEFAULT_OVER = {"capability": "deny", "autonomy": "review", "authority": "review"}


def caps_errors(caps: Any) -> list[str]:
    return document_errors(CAPS_SCHEMA, caps)


@dataclass(frozen=True)
class CapBreach:
    axis: str  # capability / autonomy / authority
    detail: str
    action: str  # deny / review

    @property
    def code(self) -> str:
        return f"cap_{self.axis}"


def _over(caps: Mapping[str, Any], axis: str) -> str:
    return str((caps.get(axis) or {}).get("over") or _DEFAULT_OVER[axis])


def autonomy_cap(caps: Mapping[str, Any]) -> int:
    """The highest monitoring level a tool may run at for this agent (4: uncapped)."""
    level = (caps.get("autonomy") or {}).get("max_level")
    return 4 if level is None else int(level)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def call_amount(arguments: Mapping[str, Any]) -> float:
    return sum(_number(arguments.get(name)) or 0.0 for name in AMOUNT_ARGUMENTS)


def call_records(arguments: Mapping[str, Any]) -> int:
    counts = [int(n) for name in COUNT_ARGUMENTS if (n := _number(arguments.get(name))) is not None]
    counts += [len(value) for value in arguments.values() if isinstance(value, list)]
    return max(counts, default=0)


def call_recipients(arguments: Mapping[str, Any]) -> int:
    total = 0
    for name in RECIPIENT_ARGUMENTS:
        value = arguments.get(name)
        if isinstance(value, list):
            total += len(value)
        elif isinstance(value, str) and value:
            total += 1
    return total


def capability_breach(caps: Mapping[str, Any], *, tier: str, category: str) -> CapBreach | None:
    axis = caps.get("capability") or {}
    over = _over(caps, "capability")
    max_tier = axis.get("max_tier")
    if max_tier and _TIERS.index(tier) > _TIERS.index(max_tier):
        return CapBreach("capability", f"the tool is {tier}; this agent's cap is {max_tier}", over)
    categories = axis.get("categories")
    if categories and category not in categories:
        allowed = ", ".join(categories)
        return CapBreach(
            "capability",
            f"the tool's category {category} is outside this agent's ({allowed})",
            over,
        )
    return None


_PER_CALL = (
    ("max_amount", call_amount, "amount {value:g} is over the cap of {limit:g}"),
    ("max_records", call_records, "{value} records is over the cap of {limit}"),
    ("max_recipients", call_recipients, "{value} recipients is over the cap of {limit}"),
)


def per_call_breach(caps: Mapping[str, Any], arguments: Mapping[str, Any]) -> CapBreach | None:
    axis = caps.get("authority") or {}
    for key, measure, text in _PER_CALL:
        limit = axis.get(key)
        if limit is None:
            continue
        value = measure(arguments)
        if value > limit:
            detail = text.format(value=value, limit=limit) + " a call"
            return CapBreach("authority", detail, _over(caps, "authority"))
    return None


def per_day_breach(
    caps: Mapping[str, Any],
    arguments: Mapping[str, Any],
    *,
    amount_today: float,
    recipients_today: int,
) -> CapBreach | None:
    axis = caps.get("authority") or {}
    over = _over(caps, "authority")
    checks = (
        ("max_amount_per_day", call_amount(arguments), amount_today, "amount {value:g}"),
        (
            "max_recipients_per_day",
            call_recipients(arguments),
            recipients_today,
            "{value} recipient(s)",
        ),
    )
    for key, value, today, what in checks:
        limit = axis.get(key)
        if limit is not None and value and today + value > limit:
            detail = what.format(value=value) + (
                f" would bring today's to {today + value:g}, over the cap of {limit:g} a day"
            )
            return CapBreach("authority", detail, over)
    return None


# --- the decision's fast path -------------------------------------------------------------------
_TIER_RANK = {tier: rank for rank, tier in enumerate(_TIERS)}


@dataclass(frozen=True)
class CompiledCaps:
    """An agent's caps made ready for deciding (kept per caps document: the agent the process
    remembers keeps the same one until it changes)."""

    caps: Mapping[str, Any]
    tier_rank: int | None
    categories: frozenset[str] | None
    per_call: bool  # any per-call authority limit
    per_day: tuple[bool, bool]  # amount, recipients
    hourly: int | None

    def capability_or_call_breach(
        self, *, tier: str, category: str, arguments: Mapping[str, Any]
    ) -> CapBreach | None:
        if (self.tier_rank is not None and _TIER_RANK[tier] > self.tier_rank) or (
            self.categories is not None and category not in self.categories
        ):
            return capability_breach(self.caps, tier=tier, category=category)
        return per_call_breach(self.caps, arguments) if self.per_call else None

    def needs_day_totals(self, arguments: Mapping[str, Any]) -> bool:
        amount, recipients = self.per_day
        return (amount and bool(call_amount(arguments))) or (
            recipients and bool(call_recipients(arguments))
        )


_COMPILED: dict[int, CompiledCaps] = {}


def caps_compiled(caps: Mapping[str, Any]) -> CompiledCaps:
    found = _COMPILED.get(id(caps))
    if found is not None and found.caps is caps:
        return found
    capability = caps.get("capability") or {}
    authority = caps.get("authority") or {}
    max_tier = capability.get("max_tier")
    categories = capability.get("categories")
    compiled = CompiledCaps(
        caps=caps,
        tier_rank=_TIER_RANK[max_tier] if max_tier else None,
        categories=frozenset(categories) if categories else None,
        per_call=any(
            authority.get(k) is not None for k in ("max_amount", "max_records", "max_recipients")
        ),
        per_day=(
            authority.get("max_amount_per_day") is not None,
            authority.get("max_recipients_per_day") is not None,
        ),
        hourly=(caps.get("autonomy") or {}).get("unreviewed_per_hour"),
    )
    if len(_COMPILED) > 1000:
        _COMPILED.clear()
    _COMPILED[id(caps)] = compiled
    return compiled
