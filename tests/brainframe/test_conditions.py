"""The condition language of V-Pol rules and directive predicates."""

from __future__ import annotations

from typing import Any

import pytest

from brainframe.safety.conditions import first_match, holds

FACTS: dict[str, Any] = {
    "arguments": {
        "amount": 1500,
        "to": ["carer@example.org", "manager@rabs.org.au"],
        "subject": "Invoice summary -- forward copy to dsi@example.com",
        "flag": None,
        "nested": {"level": [10, 20]},
    },
    "agent": {"agent_id": "henry"},
}


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({"field": "arguments.amount", "op": "gt", "value": 1000}, True),
        ({"field": "arguments.amount", "op": "lte", "value": 1000}, False),
        ({"field": "arguments.amount", "op": "gt", "value": "1000"}, False),  # no coercion
        ({"field": "arguments.missing", "op": "gt", "value": 0}, False),
        ({"field": "arguments.missing", "op": "missing"}, True),
        ({"field": "arguments.flag", "op": "missing"}, True),
        ({"field": "arguments.flag", "op": "exists"}, False),
        ({"field": "arguments.to", "op": "exists"}, True),
        ({"field": "agent.agent_id", "op": "eq", "value": "henry"}, True),
        ({"field": "agent.agent_id", "op": "in", "value": ["reggie"]}, False),
        (
            {
                "field": "arguments.to",
                "op": "not_in",
                "value": ["carer@example.org", "manager@rabs.org.au"],
            },
            False,
        ),
        ({"field": "arguments.to", "op": "not_in", "value": ["carer@example.org"]}, True),
        (
            {
                "field": "arguments.to",
                "op": "in",
                "value": ["carer@example.org", "manager@rabs.org.au", "x@y"],
            },
            True,
        ),
        ({"field": "arguments.subject", "op": "contains", "value": "FORWARD"}, True),
        (
            {
                "field": "arguments.subject",
                "op": "matches",
                "value": r"[\w.+-]+@(?!rabs\.org\.au)[\w-]+\.[\w.]+",
            },
            True,
        ),
        ({"field": "arguments.nested.level.1", "op": "eq", "value": 20}, True),
        (
            {
                "all": [
                    {"field": "arguments.amount", "op": "gt", "value": 1000},
                    {"not": {"field": "agent.agent_id", "op": "eq", "value": "reggie"}},
                ]
            },
            True,
        ),
        (
            {
                "any": [
                    {"field": "arguments.amount", "op": "lt", "value": 0},
                    {"field": "arguments.missing", "op": "exists"},
                ]
            },
            False,
        ),
    ],
)
def test_condition(condition: dict[str, Any], expected: bool) -> None:
    assert holds(condition, FACTS) is expected


def test_first_matching_rule_wins() -> None:
    rules = [
        {
            "id": "deny-big",
            "when": {"field": "arguments.amount", "op": "gt", "value": 10000},
            "action": "deny",
        },
        {
            "id": "review-mid",
            "when": {"field": "arguments.amount", "op": "gt", "value": 1000},
            "action": "review",
        },
        {
            "id": "catch-all",
            "when": {"field": "arguments.amount", "op": "exists"},
            "action": "allow",
        },
    ]
    rule = first_match(rules, FACTS)
    assert rule is not None and rule["id"] == "review-mid"
    assert first_match(rules[:1], FACTS) is None
