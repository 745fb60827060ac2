"""The condition language of V-Pol rules and directive predicates."""

from __future__ import annotations

from typing import Any

import pytest

from brainframe.safety.policy.conditions import could_hold, first_match, holds

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


SMS_TOOL = {"tool": {"tool_id": "comms.sms.send", "external_channel": True, "risk_level": "write"}}
EXTERNAL = {"field": "tool.external_channel", "op": "eq", "value": True}
CONSENT = {"field": "arguments.consent_pii", "op": "eq", "value": True}


@pytest.mark.parametrize(
    ("condition", "may"),
    [
        (EXTERNAL, True),
        ({"not": EXTERNAL}, False),
        ({"all": [EXTERNAL, {"not": CONSENT}]}, True),  # unknown arguments: may still hold
        ({"all": [{"not": EXTERNAL}, CONSENT]}, False),  # ruled out by the tool alone
        ({"any": [{"not": EXTERNAL}, CONSENT]}, True),
        ({"any": [{"not": EXTERNAL}, {"field": "tool.risk_level", "op": "eq", "value": "read"}]},
         False),
        ({"history": {"scope": "chain", "tool_id": "x"}}, True),
        ({"not": {"field": "context.text", "op": "matches", "value": "x"}}, True),
    ],
)  # fmt: skip
def test_whether_a_rule_can_apply_to_a_tool_at_all(condition: dict[str, Any], may: bool) -> None:
    """Three-valued: what the tool's facts decide is decided; the call's other facts are
    unknown and may go either way (per-step constraint selection, docs/agents.md)."""
    assert could_hold(condition, SMS_TOOL, ("tool",)) is may
