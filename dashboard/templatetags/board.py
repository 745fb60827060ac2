"""Template filters of the board."""

from __future__ import annotations

from django import template

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
