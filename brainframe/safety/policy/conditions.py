"""The condition language shared by V-Pol rules, directive predicates and constitution rules:
its grammar (``VPOL_RULES_SCHEMA``, checked when staff save a document) and its evaluator.

Semantics, for a field that holds a list: ``in`` holds when every element is in the value list;
``not_in`` when any element is outside it (a recipient allowlist); ``contains`` and ``matches``
when any element does. A missing field makes every comparison false except ``missing`` (and
``ne``/``not_in``, false too: absent is not evidence).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

from jsonschema import Draft202012Validator

from brainframe.safety import fastre

# --- Grammar ----------------------------------------------------------------------------------
#: The roots a decision's facts have (``decision_facts``).
DECISION_ROOTS = ("arguments", "agent", "tool", "context")

_CONDITION: dict[str, Any] = {
    "oneOf": [
        {
            "type": "object",
            "required": ["all"],
            "additionalProperties": False,
            "properties": {"all": {"type": "array", "items": {"$ref": "#/$defs/condition"}}},
        },
        {
            "type": "object",
            "required": ["any"],
            "additionalProperties": False,
            "properties": {"any": {"type": "array", "items": {"$ref": "#/$defs/condition"}}},
        },
        {
            "type": "object",
            "required": ["not"],
            "additionalProperties": False,
            "properties": {"not": {"$ref": "#/$defs/condition"}},
        },
        {
            "type": "object",
            "required": ["field", "op"],
            "additionalProperties": False,
            "properties": {
                # "arguments.amount", "agent.agent_id", "tool.risk_level", "context.hour"
                "field": {"type": "string", "pattern": "^(arguments|agent|tool|context)"},
                "op": {
                    "enum": [
                        "eq",
                        "ne",
                        "gt",
                        "gte",
                        "lt",
                        "lte",
                        "in",
                        "not_in",
                        "contains",
                        "matches",
                        "exists",
                        "missing",
                    ]
                },
                "value": {},
            },
        },
        {
            "type": "object",
            "required": ["history"],
            "additionalProperties": False,
            "properties": {
                # A sequence rule (docs/access.md): how many earlier calls of the chain (its
                # O-Tag), of the agent, or of its session (the chain and the agent's recent calls
                # in any chain) match, within a window, counted from the audit.
                "history": {
                    "type": "object",
                    "required": ["scope"],
                    "additionalProperties": False,
                    "properties": {
                        "scope": {"enum": ["chain", "agent", "session"]},
                        "tool": {"type": "string", "minLength": 1, "maxLength": 120},
                        "data_class": {"type": "string"},
                        "external_channel": {"type": "boolean"},
                        "within_minutes": {"type": "integer", "minimum": 1, "maximum": 10080},
                        "at_least": {"type": "integer", "minimum": 1},
                    },
                }
            },
        },
    ]
}


def condition_schema(roots: Sequence[str], *, pattern: str | None = None) -> dict[str, Any]:
    """The condition grammar over facts with these roots (a decision's), or with fields that
    match ``pattern`` (an ACL policy's: the facts it knows by name)."""
    schema = copy.deepcopy(_CONDITION)
    field = schema["oneOf"][3]["properties"]["field"]
    field["pattern"] = pattern or rf"^({'|'.join(roots)})(\.[A-Za-z0-9_]+)*$"
    if pattern is not None:  # facts of their own: no call history to count
        del schema["oneOf"][4]
    return schema


_CONDITION = condition_schema(DECISION_ROOTS)

#: The V-Pol rule language: an ordered list; the first rule whose ``when`` holds decides.
VPOL_RULES_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "array",
    "items": {
        "type": "object",
        "required": ["id", "when", "action"],
        "additionalProperties": False,
        "properties": {
            "id": {"type": "string", "pattern": r"^[a-z0-9][a-z0-9_\-]*$"},
            "when": {"$ref": "#/$defs/condition"},
            "action": {"enum": ["allow", "review", "senior_review", "deny"]},
            # shadow: evaluated and recorded ("would have decided …"), never acted on.
            "mode": {"enum": ["enforce", "shadow"]},
            "reason": {"type": "string"},
        },
    },
    "$defs": {"condition": _CONDITION},
}


def vpol_rules_errors(
    rules: Any, *, actions: tuple[str, ...] = ("allow", "review", "senior_review", "deny")
) -> list[str]:
    """Problems with a V-Pol's ``rules`` document (see ``VPOL_RULES_SCHEMA``), or with the
    predicates of a directive or constitution rule (the same language, other actions)."""
    schema = {
        **VPOL_RULES_SCHEMA,
        "items": {
            **VPOL_RULES_SCHEMA["items"],
            "properties": {
                **VPOL_RULES_SCHEMA["items"]["properties"],
                "action": {"enum": list(actions)},
            },
        },
    }
    problems = document_errors(schema, rules)
    if not problems:
        ids = [rule["id"] for rule in rules]
        duplicates = sorted({rule_id for rule_id in ids if ids.count(rule_id) > 1})
        if duplicates:
            problems.append(f"rule ids must be unique: {', '.join(duplicates)}")
    return problems


def document_errors(schema: dict[str, Any], instance: Any) -> list[str]:
    """Every place ``instance`` breaks ``schema``, as '<path>: <message>' lines."""
    validator = Draft202012Validator(schema)
    problems = []
    for error in sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(part) for part in error.absolute_path)
        problems.append(f"{where or '(root)'}: {error.message}")
    return problems


# --- Evaluation -------------------------------------------------------------------------------
MISSING: Any = object()


def resolve(facts: Mapping[str, Any], path: str) -> Any:
    value: Any = facts
    for part in path.split("."):
        if type(value) is dict:  # the usual case, without the Mapping check's cost
            value = value.get(part, MISSING)
            if value is MISSING:
                return MISSING
        elif isinstance(value, Mapping) and part in value:
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
    if "history" in condition:
        # A sequence rule: ``facts["history"]`` counts the audit's matching earlier calls (the
        # broker's decisions and replays give it; where it is absent nothing is counted).
        spec = condition["history"]
        count = facts.get("history")
        return count is not None and count(spec) >= spec.get("at_least", 1)
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
        if type(actual) is str:
            return pattern.search(actual)
        return any(isinstance(item, str) and pattern.search(item) for item in _items(actual))
    raise ValueError(f"unknown operator {op!r}")


def could_hold(
    condition: Mapping[str, Any], facts: Mapping[str, Any], roots: Sequence[str]
) -> bool:
    """Whether ``condition`` may hold when only the ``roots`` of ``facts`` are known (three-valued:
    a comparison of another root, or a sequence rule, is unknown and may go either way). False
    only when the known facts rule it out — e.g. ``roots=("tool",)``: whether a rule can ever
    apply to a tool, whatever the call's arguments."""
    return _partial(condition, facts, tuple(roots)) is not False


def _partial(
    condition: Mapping[str, Any], facts: Mapping[str, Any], roots: tuple[str, ...]
) -> bool | None:
    if "all" in condition:
        parts = [_partial(part, facts, roots) for part in condition["all"]]
        return False if False in parts else (None if None in parts else True)
    if "any" in condition:
        parts = [_partial(part, facts, roots) for part in condition["any"]]
        return True if True in parts else (None if None in parts else False)
    if "not" in condition:
        inner = _partial(condition["not"], facts, roots)
        return None if inner is None else not inner
    if "history" in condition or condition.get("field", "").split(".", 1)[0] not in roots:
        return None
    return holds(condition, facts)


def first_match(
    rules: Sequence[Mapping[str, Any]], facts: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    """The first rule whose ``when`` holds, in order, or None; rules in shadow mode are
    skipped (``shadow_match``)."""
    for rule in rules:
        if rule.get("mode") != "shadow" and holds(rule["when"], facts):
            return rule
    return None


def shadow_match(
    rules: Sequence[Mapping[str, Any]], facts: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    """The shadow rule that would decide if shadow rules were enforced: the first rule that
    holds, when it is a shadow one (None when an enforced rule comes first or nothing holds)."""
    for rule in rules:
        if holds(rule["when"], facts):
            return rule if rule.get("mode") == "shadow" else None
    return None


def decision_facts(
    *,
    arguments: Any,
    agent: Any,
    tool: Any,
    hour: int,
    knock_on: bool,
    task_id: str | None,
    reason: str,
    text: str,
    confidence: float | None,
) -> dict[str, Any]:
    """What V-Pol rules, directive and constitution predicates can refer to: the broker builds
    it for each decision, the council's what-if for each recorded call it replays."""
    return {
        "arguments": arguments,
        "agent": {
            "agent_id": agent.agent_id,
            "type": agent.type,
            "monitoring_level": agent.monitoring_level,
        },
        "tool": {}
        if tool is None
        else {
            "tool_id": tool.tool_id,
            "category": tool.category,
            "risk_level": tool.risk_level,
            "data_class": tool.data_class,
            "context_bucket": tool.context_bucket,
            "external_channel": tool.external_channel,
        },
        "context": {
            "hour": hour,
            "knock_on": knock_on,
            "task_id": task_id,
            "reason": reason,
            # Every string in the arguments, for predicates that look at all of it.
            "text": text,
            "confidence": confidence,
        },
    }
