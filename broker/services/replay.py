"""What-if replay (docs/access.md, "What-if"): the real pipeline, dry-run, over recorded calls.

Each recorded call is decided twice by ``decide`` (the same stages as a live call), from what the
audit kept (its tool, arguments, reason and confidence, task, knock-on parent, O-Tag and
principal, the hour it came and its call id, so sampling draws the same), once under the rules in
force and once with the draft in their place. Only the draft differs between the two, so the
calls whose verdict changes are exactly the ones the draft changes. Nothing is written: the
stages only read (a cap's or a sequence rule's counts are taken as of the call's time).
"""

from __future__ import annotations

import copy
import dataclasses
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from brainframe.instances import model_copy
from brainframe.models import Agent, PrimeDirective, ToolCall, ValidationPolicy
from brainframe.safety.policy.acl import acl_parse
from brainframe.safety.policy.caps import caps_errors
from brainframe.safety.policy.conditions import vpol_rules_errors
from brainframe.services.work.delegation import delegation_of_task

from ..errors import BrokerRefusal
from ..pipeline.context import CallContext, CallRequest, ChainTags, Verdict
from ..pipeline.stages import decide
from ..registry import governing_policy, registry_snapshot

KINDS = ("vpol", "directive", "acl", "caps")


@dataclass
class Rules:
    """What the stages decide under: the registry's policies, directives, constitution and ACL,
    and agents' caps where a draft changes them (else the agent's own)."""

    policies: list[ValidationPolicy]
    directives: list[tuple[str, str, list[Any]]]
    constitution: list[tuple[str, str, list[Any]]]
    acl: list[dict[str, Any]]
    caps: dict[str, dict[str, Any]] = field(default_factory=dict)


def rules_in_force() -> Rules:
    snapshot = registry_snapshot()
    return Rules(
        policies=list(snapshot.policies),
        directives=list(snapshot.directives),
        constitution=list(snapshot.constitution),
        acl=list(snapshot.acl),
    )


class DraftError(BrokerRefusal):
    def __init__(self, detail: str, *, field: str = "draft"):
        super().__init__(400, "invalid_draft", detail, field=field)


def with_draft(rules: Rules, *, kind: str, target: str, draft: Any) -> Rules:
    """``rules`` with the draft in place of its target (checked as the admin checks it).

    - ``vpol``: target a V-Pol's id or name; draft its fields (``rules``, ``enforcement_mode``,
      ``tool_patterns``, ``priority``, ``active``);
    - ``directive``: target a directive's code; draft ``predicates``, ``escalation``, ``active``;
    - ``acl``: target a policy's name (or a new one); draft the YAML document;
    - ``caps``: target an agent id; draft its caps document."""
    if kind not in KINDS:
        raise DraftError(f"kind is one of {', '.join(KINDS)}", field="kind")
    changed = dataclasses.replace(rules, caps=dict(rules.caps))
    if kind == "vpol":
        changed.policies = _vpol_draft(rules.policies, target, draft)
    elif kind == "directive":
        changed.directives = _directive_draft(rules.directives, target, draft)
    elif kind == "acl":
        changed.acl = _acl_draft(rules.acl, target, draft)
    else:
        if not Agent.objects.filter(pk=target).exists():
            raise DraftError(f"no agent {target!r}", field="id")
        problems = caps_errors(draft)
        if problems:
            raise DraftError("; ".join(problems))
        changed.caps[target] = dict(draft)
    return changed


def _dict_draft(draft: Any) -> dict[str, Any]:
    if not isinstance(draft, dict):
        raise DraftError("the draft is a mapping of the fields to change")
    return draft


def _vpol_draft(
    policies: list[ValidationPolicy], target: str, draft: Any
) -> list[ValidationPolicy]:
    draft = _dict_draft(draft)
    allowed = {"rules", "enforcement_mode", "tool_patterns", "priority", "active"}
    unknown = sorted(set(draft) - allowed)
    if unknown:
        raise DraftError(f"a V-Pol draft changes {', '.join(sorted(allowed))}; not {unknown[0]}")
    if "rules" in draft:
        problems = vpol_rules_errors(draft["rules"])
        if problems:
            raise DraftError("; ".join(f"rules/{problem}" for problem in problems))
    current = _policy(target, new_ok="tool_patterns" in draft)
    policy = model_copy(current)
    for name, value in draft.items():
        setattr(policy, name, value)
    policy.version = current.version + 1
    kept = [p for p in policies if p.pk != current.pk]
    return [*kept, policy] if policy.active else kept


def _policy(target: str, *, new_ok: bool = False) -> ValidationPolicy:
    """The V-Pol by id or name; with ``new_ok``, an unsaved new one of that name (a draft that
    names its tools)."""
    query: dict[str, Any]
    try:
        query = {"pk": uuid.UUID(target)}
    except ValueError:
        query = {"name": target}
    policy = ValidationPolicy.objects.filter(**query).first()
    if policy is None:
        if new_ok and "name" in query:
            return ValidationPolicy(name=target, version=0)
        raise DraftError(f"no V-Pol {target!r}", field="id")
    return policy


def _directive_draft(
    directives: list[tuple[str, str, list[Any]]], target: str, draft: Any
) -> list[tuple[str, str, list[Any]]]:
    draft = _dict_draft(draft)
    current = PrimeDirective.objects.filter(pk=target).first()
    predicates = draft.get("predicates", current.predicates if current else [])
    problems = vpol_rules_errors(predicates, actions=("deny", "escalate"))
    if problems:
        raise DraftError("; ".join(f"predicates/{problem}" for problem in problems))
    escalation = draft.get("escalation", current.escalation if current else "senior_review")
    active = draft.get("active", current.active if current else True)
    kept = [d for d in directives if d[0] != target]
    return [*kept, (target, escalation, predicates)] if active and predicates else kept


def _acl_draft(acl: list[dict[str, Any]], target: str, draft: Any) -> list[dict[str, Any]]:
    if not isinstance(draft, str):
        raise DraftError("an ACL draft is the policy's YAML document")
    spec = acl_parse(draft)
    if spec["name"] != target:
        raise DraftError(f"the draft is named {spec['name']!r}, not {target!r}", field="id")
    kept = [s for s in acl if s["name"] != target]
    version = max((s.get("version") or 0 for s in acl if s["name"] == target), default=0) + 1
    specs = [*kept, {**spec, "version": version}]
    return sorted(specs, key=lambda s: (-s["priority"], s["name"]))


# --- deciding a recorded call --------------------------------------------------------------------


def replay_call(call: ToolCall, rules: Rules) -> Verdict:
    """The verdict ``decide`` gives the recorded call under ``rules`` (nothing written)."""
    agent: Agent = model_copy(call.agent)
    if call.agent_id in rules.caps:
        agent.caps = rules.caps[call.agent_id]
    reason = call.r_tag
    request = CallRequest(
        tool_id=call.requested_tool_id,
        arguments=call.input if isinstance(call.input, dict) else {},
        reason=reason.thought if reason else "",
        confidence=reason.confidence if reason else None,
        task_id=call.task_id,
        parent_r_tag=reason.parent_id if reason else None,
        face=call.face,
    )
    ctx = CallContext(call_id=call.pk, agent=agent, request=request)
    ctx.tool = registry_snapshot().tool(call.requested_tool_id)
    ctx.task = call.task
    if ctx.task is not None and ctx.task.on_behalf_of is not None:
        ctx.requester_roles = frozenset(ctx.task.on_behalf_of.groups.values_list("name", flat=True))
    ctx.parent = reason.parent if reason else None
    # Decided on the recorded chain: its task's delegation. What the agent held at the time (a
    # chain naming no person or no delegated work) is not reconstructed (docs/access.md).
    ctx.delegation = delegation_of_task(call.task_id) if call.task_id else None
    ctx.vpol = governing_policy(ctx.tool, rules.policies) if ctx.tool else None
    ctx.directives, ctx.constitution, ctx.acl = rules.directives, rules.constitution, rules.acl
    snapshot = registry_snapshot()
    ctx.person_grants, ctx.agent_grants = snapshot.person_grants, snapshot.agent_grants
    ctx.principal = call.o_tag.principal if call.o_tag else None
    ctx.local_hour = timezone.localtime(call.timestamp).hour
    ctx.as_of = call.timestamp
    ctx.tags = ChainTags(
        o_tag_id=call.o_tag_id or uuid.uuid4(),
        vpol_id=ctx.vpol.pk if ctx.vpol else None,
        vpol_version=ctx.vpol.version if ctx.vpol else None,
    )
    return decide(ctx)


@dataclass
class Replay:
    since: datetime
    calls: int = 0
    transitions: Counter[str] = field(default_factory=Counter)
    changed: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "since": self.since.isoformat(),
            "calls": self.calls,
            "changed": len(self.changed),
            "transitions": dict(self.transitions.most_common()),
            "affected": self.changed,
        }


def recorded_calls(since: datetime) -> Iterable[ToolCall]:
    return (
        ToolCall.objects.filter(timestamp__gte=since)
        .select_related("agent", "task__on_behalf_of", "r_tag__parent", "o_tag")
        .order_by("timestamp")
        .iterator(chunk_size=500)
    )


def policy_replay(*, kind: str, target: str, draft: Any, days: int = 30) -> Replay:
    """What the draft would have changed over the last ``days`` days of recorded calls: counts
    by transition (``execute → pending_approval``, …) and every call whose verdict changes."""
    before = rules_in_force()
    after = with_draft(before, kind=kind, target=target, draft=copy.deepcopy(draft))
    report = Replay(since=timezone.now() - timedelta(days=days))
    for call in recorded_calls(report.since):
        report.calls += 1
        was, would = replay_call(call, before), replay_call(call, after)
        if (was.outcome, was.code) == (would.outcome, would.code):
            continue
        if was.outcome == would.outcome:  # the same outcome for another reason
            report.transitions[f"{was.outcome} ({was.code}) → {would.outcome} ({would.code})"] += 1
        else:
            report.transitions[f"{was.outcome} → {would.outcome}"] += 1
        report.changed.append(
            {
                "call_id": str(call.pk),
                "at": call.timestamp.isoformat(),
                "agent_id": call.agent_id,
                "tool_id": call.requested_tool_id,
                "recorded": call.decision,
                "was": f"{was.outcome} ({was.code})" if was.code else was.outcome,
                "would": f"{would.outcome} ({would.code})" if would.code else would.outcome,
                "why": would.detail,
                "link": f"/board/calls/{call.pk}/chain/",
            }
        )
    return report
