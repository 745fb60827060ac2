"""The rules that govern each of an agent's tools, as constraints its runtime can select per plan
step (seed 002, "plan-driven constraint injection").

Each constraint is one rule in words — a constitution rule, a prime directive, the V-Pol that
governs some of the agent's tools — with its ``domain`` and the tools it ``governs``, worked out
here from the registry's own records, never from what an agent says:

- a V-Pol governs the tools it is the governing policy of (``governing_policy``: its tool
  patterns, else its context bucket, highest priority first);
- a directive or constitution rule governs the tools its predicates could match once the tool
  is known (``could_hold`` over the ``tool`` facts: a predicate on ``tool.external_channel``
  governs the external channels; one on the arguments alone may match any call); a rule with no
  predicates is a principle that governs every tool (``"*"``).

A rule that governs none of the agent's tools is left out. The agent's runtime shows the Dreamer
only the constraints of the current step's tools; the broker still decides every call against
every rule (layer 1), so a plan that names the wrong tools gets a worse prompt, not a way round.
"""

from __future__ import annotations

from typing import Any

from brainframe.models import Agent, ConstitutionRule, PrimeDirective, Tool, ValidationPolicy
from brainframe.safety.policy.conditions import could_hold
from brainframe.selectors import tools_for_agent

from .policies import governing_policy

EVERY_TOOL = "*"


def _tool_facts(tool: Tool) -> dict[str, Any]:
    return {
        "tool": {
            "tool_id": tool.tool_id,
            "category": tool.category,
            "risk_level": tool.risk_level,
            "data_class": tool.data_class,
            "context_bucket": tool.context_bucket,
            "external_channel": tool.external_channel,
        }
    }


def _governs(predicates: Any, tools: list[Tool]) -> list[str] | None:
    """The tools a rule's predicates could apply to; None: every tool (a principle with no
    predicates, or predicates on the call alone)."""
    conditions = [p["when"] for p in predicates or [] if isinstance(p, dict) and "when" in p]
    if not conditions:
        return None
    governed = [
        t.tool_id
        for t in tools
        if any(could_hold(c, _tool_facts(t), ("tool",)) for c in conditions)
    ]
    return None if tools and len(governed) == len(tools) else governed  # every tool: "*"


def _entry(*, kind: str, key: str, text: str, governs: list[str] | None) -> dict[str, Any] | None:
    if governs is not None and not governs:
        return None  # none of the agent's tools
    return {
        "id": f"{kind}:{key}",
        "domain": kind,
        "text": " ".join(text.split()),
        "governs": [EVERY_TOOL] if governs is None else governs,
    }


def agent_constraints(*, agent: Agent) -> list[dict[str, Any]]:
    """Every rule that governs one of ``agent``'s tools: constitution, directives, V-Pols."""
    tools = list(tools_for_agent(agent))
    out: list[dict[str, Any] | None] = []
    for rule in ConstitutionRule.objects.order_by("number"):
        out.append(
            _entry(
                kind="constitution",
                key=rule.code,
                text=f"{rule.title}: {rule.text}",
                governs=_governs(rule.predicates, tools),
            )
        )
    for directive in PrimeDirective.objects.filter(active=True).order_by("-priority", "code"):
        out.append(
            _entry(
                kind="directive",
                key=directive.code,
                text=directive.rule_text,
                governs=_governs(directive.predicates, tools),
            )
        )
    policies = list(ValidationPolicy.objects.filter(active=True))
    governed: dict[str, list[str]] = {}
    for tool in tools:
        policy = governing_policy(tool, policies)
        if policy is not None:
            governed.setdefault(policy.name, []).append(tool.tool_id)
    for policy in sorted(policies, key=lambda p: (-p.priority, p.name)):
        reasons = [
            str(r.get("reason", ""))
            for r in policy.rules or []
            if isinstance(r, dict) and r.get("mode") != "shadow"
        ]
        text = " ".join(
            [policy.description or f"Policy {policy.name}.", *[r for r in reasons if r]]
        )
        out.append(
            _entry(kind="vpol", key=policy.name, text=text, governs=governed.get(policy.name, []))
        )
    return [c for c in out if c is not None]
