"""Evaluation of the condition language shared by V-Pol rules and directive predicates.

The grammar is ``brainframe.schemas.VPOL_RULES_SCHEMA``. Semantics, for a field that holds a
list: ``in`` holds when every element is in the value list; ``not_in`` when any element is
outside it (a recipient allowlist); ``contains`` and ``matches`` when any element does.
A missing field makes every comparison false except ``missing`` (and ``ne``/``not_in``, false
too: absent is not evidence).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from brainframe import fastre

MISSING: Any = object()


def resolve(facts: Mapping[str, Any], path: str) -> Any:
    value: Any = facts
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return MISSING
    return value


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _compare(op: str, actual: Any, expected: Any) -> bool:
    left, right = _number(actual), _number(expected)
    if left is None or right is None:
        return False
    if op == "gt":
        return left > right
    if op == "gte":
        return left >= right
    if op == "lt":
        return left < right
    return left <= right


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _text_contains(haystack: Any, needle: Any) -> bool:
    if isinstance(haystack, str) and isinstance(needle, str):
        return needle.lower() in haystack.lower()
    return bool(haystack == needle)


def holds(condition: Mapping[str, Any], facts: Mapping[str, Any]) -> bool:
    """Whether ``condition`` holds over ``facts``."""
    if "all" in condition:
        return all(holds(part, facts) for part in condition["all"])
    if "any" in condition:
        return any(holds(part, facts) for part in condition["any"])
    if "not" in condition:
        return not holds(condition["not"], facts)
    actual = resolve(facts, condition["field"])
    op = condition["op"]
    expected = condition.get("value")
    if op == "missing":
        return actual is MISSING or actual is None
    if actual is MISSING:
        return False
    if op == "exists":
        return actual is not None
    if op == "eq":
        return bool(actual == expected)
    if op == "ne":
        return bool(actual != expected)
    if op in ("gt", "gte", "lt", "lte"):
        return _compare(op, actual, expected)
    if op == "in":
        allowed = _items(expected)
        return all(item in allowed for item in _items(actual))
    if op == "not_in":
        allowed = _items(expected)
        return any(item not in allowed for item in _items(actual))
    if op == "contains":
        return any(_text_contains(item, expected) for item in _items(actual))
    if op == "matches":
        pattern = fastre.compiled(str(expected), re.IGNORECASE)
        return any(isinstance(item, str) and pattern.search(item) for item in _items(actual))
    raise ValueError(f"unknown operator {op!r}")


def first_match(
    rules: Sequence[Mapping[str, Any]], facts: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    """The first rule whose ``when`` holds, in order, or None."""
    for rule in rules:
        if holds(rule["when"], facts):
            return rule
    return None
