"""Template filters of the board."""

from __future__ import annotations

import json
from datetime import datetime

from django import template
from django.utils import timezone

register = template.Library()

_UNITS = (("d", 86400), ("h", 3600), ("min", 60), ("s", 1))


@register.filter
def duration(seconds: int | None) -> str:
    """A span of seconds as its two largest units: ``2 d 3 h``, ``4 h 12 min``, ``35 s``."""
    if seconds is None:
        return "—"
    left, parts = max(0, int(seconds)), list[str]()
    for unit, size in _UNITS:
        if left >= size or (unit == "s" and not parts):
            parts.append(f"{left // size} {unit}")
            left %= size
        if len(parts) == 2:
            break
    return " ".join(parts)


@register.filter
def overdue(moment: datetime | None) -> bool:
    """Whether ``moment`` (a timeout) has passed."""
    return moment is not None and moment <= timezone.now()


@register.filter
def short_id(value: object) -> str:
    """The first 8 characters of an id (a UUID's first group): the full one goes in a title or
    a copy button beside it."""
    return str(value)[:8]


@register.filter
def wait_time(seconds: float | None) -> str:
    """A service level's time in minutes or hours (``45 s`` under a minute, ``12 min``,
    ``2 h 5 min``, ``3 d 4 h``); "—" when there is none."""
    if seconds is None:
        return "—"
    return duration(round(float(seconds)))


@register.filter
def as_json(value: object) -> str:
    """A document (a condition, arguments) as JSON, the way staff write it: not Python's repr."""
    return json.dumps(value, ensure_ascii=False, sort_keys=False)


@register.filter
def when(value: object) -> str:
    """An ISO date and time (as a resource carries it) as the board shows times."""
    if not value:
        return "—"
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return timezone.localtime(moment).strftime("%d %b %Y %H:%M")


_CONDITION_ORDER = ("all", "any", "not", "history", "field", "op", "value")


def _in_order(value: object) -> object:
    if isinstance(value, dict):
        rank = {key: n for n, key in enumerate(_CONDITION_ORDER)}
        keys = sorted(value, key=lambda k: (rank.get(k, len(rank)), str(k)))
        return {key: _in_order(value[key]) for key in keys}
    if isinstance(value, list):
        return [_in_order(item) for item in value]
    return value


@register.filter
def as_condition(value: object) -> str:
    """A condition as staff write it in the condition language: JSON, each comparison in the
    order it reads (``field``, ``op``, ``value``) whatever order the database keeps."""
    return json.dumps(_in_order(value), ensure_ascii=False)
