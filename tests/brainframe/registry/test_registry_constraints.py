"""The rules that govern each of an agent's tools, as its runtime selects them per plan step
(``brainframe.services.registry.constraints``): worked out from the registry's own records."""

from __future__ import annotations

from typing import Any

import pytest

from brainframe.models import Agent, Tool, ValidationPolicy
from brainframe.selectors import tools_for_agent
from brainframe.services.registry.constraints import agent_constraints

pytestmark = pytest.mark.django_db


def _by_id(agent_id: str) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in agent_constraints(agent=Agent.objects.get(agent_id=agent_id))}


def test_each_rule_governs_the_tools_its_records_say(seeded: None) -> None:
    henry = Agent.objects.get(agent_id="henry")
    mine = set(tools_for_agent(henry).values_list("tool_id", flat=True))
    rules = _by_id("henry")
    # A directive on external channels governs exactly Henry's external-channel tools.
    external = set(
        Tool.objects.filter(tool_id__in=mine, external_channel=True).values_list(
            "tool_id", flat=True
        )
    )
    assert external and set(rules["directive:PRIVACY_NO_PII"]["governs"]) == external
    # One on the billing bucket, the billing tools; one on any call's text, every tool.
    billing = set(
        Tool.objects.filter(tool_id__in=mine, context_bucket="billing_finance").values_list(
            "tool_id", flat=True
        )
    )
    assert set(rules["directive:NDIS_COMPLIANCE"]["governs"]) == billing
    assert rules["directive:SAFETY_FIRST"]["governs"] == ["*"]
    # A principle without predicates governs every tool; a rule on tools Henry has none of is
    # not his to read.
    assert rules["constitution:LEAST_PRIVILEGE"]["governs"] == ["*"]
    assert "constitution:AUDIT_IMMUTABLE" not in rules
    # A V-Pol governs the tools it is the governing policy of (highest priority first).
    assert "transport.vehicle.book" in rules["vpol:scheduling_write"]["governs"]
    assert "transport.vehicle.availability" in rules["vpol:scheduling_write"]["governs"]
    assert rules["vpol:finance_limits"]["text"].startswith("Money movements")
    assert (
        "Amounts above $10,000 are processed by finance staff."
        in (rules["vpol:finance_limits"]["text"])
    )
    ValidationPolicy.objects.create(
        name="vehicle_bookings",
        description="Vans: accessible only.",
        tool_patterns=["transport.vehicle.book"],
        priority=90,
        rules=[
            {
                "id": "shadowed",
                "when": {"field": "arguments.passengers", "op": "gt", "value": 3},
                "action": "deny",
                "reason": "a rule still in shadow mode",
                "mode": "shadow",
            }
        ],
    )
    rules = _by_id("henry")
    assert rules["vpol:vehicle_bookings"]["governs"] == ["transport.vehicle.book"]
    assert "shadow" not in rules["vpol:vehicle_bookings"]["text"]  # not enforced: not told
    assert "transport.vehicle.book" not in rules["vpol:scheduling_write"]["governs"]


def test_the_context_carries_the_constraints(henry: Any) -> None:
    context = henry.get("/api/v1/context/").json()
    ids = {c["id"] for c in context["constraints"]}
    assert {"directive:PRIVACY_NO_PII", "vpol:external_comms"} <= ids
    assert context["directives_preamble"]  # the whole preamble stays for one-model agents
