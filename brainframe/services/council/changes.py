"""What the council can change: each kind of proposal's change checked (when it opens and again
when it is applied), what it would have decided on recent calls (the what-if), and applying it
through the same code as an admin edit. ``brainframe.services.council.votes`` runs the votes."""

from __future__ import annotations

import fnmatch
import re
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from brainframe.models import (
    ConstitutionRule,
    CouncilMember,
    CouncilProposal,
    PrimeDirective,
    ToolCall,
    ValidationPolicy,
)
from brainframe.safety.guardian.core import argument_strings
from brainframe.safety.policy.conditions import decision_facts, first_match, vpol_rules_errors
from brainframe.services.registry.policies import (
    GOVERNING_FIELDS,
    changes_by_proposal,
    validation_policy_save,
)

Kind = CouncilProposal.Kind
CODE = re.compile(r"^[A-Z][A-Z0-9_]*$")
DIRECTIVE_FIELDS = ("priority", "scope", "rule_text", "predicates", "escalation", "active")
VPOL_FIELDS = (*GOVERNING_FIELDS, "council_required")


class CouncilError(Exception):
    """A proposal or vote that cannot be taken; ``code`` is machine-readable, ``field`` names
    the input at fault."""

    def __init__(self, code: str, detail: str, *, field: str = "", status: int = 400) -> None:
        super().__init__(detail)
        self.code, self.detail, self.field, self.status = code, detail, field, status


def check_seatable(user: Any, *, seated: int, extra: int = 1) -> None:
    if not (user.is_active and user.is_staff):
        raise CouncilError(
            "not_staff", f"{user.get_username()} is not an active staff user", field="target"
        )
    limit = settings.RABS_COUNCIL_MAX_MEMBERS
    if seated + extra > limit:
        raise CouncilError(
            "council_full", f"the council has {seated} of {limit} seats taken", field="target"
        )


# ---------------------------------------------------------------- checking a change


def _predicates(value: Any, *, actions: tuple[str, ...], field: str) -> list[Any]:
    problems = vpol_rules_errors(value, actions=actions)
    if problems:
        raise CouncilError("invalid_predicates", "; ".join(problems), field=field)
    return list(value)


def _text(change: dict[str, Any], name: str, *, limit: int = 0) -> str:
    value = change.get(name)
    if not isinstance(value, str) or not value.strip():
        raise CouncilError("required", f"{name} is required", field=f"change.{name}")
    if limit and len(value) > limit:
        raise CouncilError(
            "too_long", f"{name}: at most {limit} characters", field=f"change.{name}"
        )
    return value.strip()


def _unknown(change: dict[str, Any], allowed: tuple[str, ...]) -> None:
    extra = sorted(set(change) - set(allowed))
    if extra:
        raise CouncilError(
            "unknown_field",
            f"not something this proposal can change: {', '.join(extra)}",
            field=f"change.{extra[0]}",
        )


def proposal_check(kind: str, target: str, change: dict[str, Any]) -> dict[str, Any]:
    """The change as it would be applied now, or CouncilError naming the field at fault."""
    if kind not in Kind.values:
        raise CouncilError("unknown_kind", f"unknown proposal kind {kind!r}", field="kind")
    if not isinstance(change, dict):
        raise CouncilError("invalid_change", "the change must be a JSON object", field="change")
    if kind == Kind.CONSTITUTION_ADD:
        return _check_constitution_add(target, change)
    if kind == Kind.CONSTITUTION_STRENGTHEN:
        return _check_strengthen(target, change)
    if kind == Kind.DIRECTIVE:
        return _check_directive(target, change)
    if kind == Kind.VPOL:
        return _check_vpol(target, change)
    return _check_seat(kind, target, change)


def _check_constitution_add(target: str, change: dict[str, Any]) -> dict[str, Any]:
    _unknown(change, ("title", "text", "enforcement", "predicates", "number"))
    if not CODE.match(target or "") or len(target) > 40:
        raise CouncilError("invalid_code", "the code is UPPER_SNAKE, at most 40", field="target")
    if ConstitutionRule.objects.filter(pk=target).exists():
        raise CouncilError("exists", f"constitution rule {target} exists", field="target")
    enforcement = change.get("enforcement")
    if enforcement not in ConstitutionRule.STRENGTH:
        raise CouncilError(
            "invalid_enforcement",
            "enforcement: record, flag or block",
            field="change.enforcement",
        )
    number = change.get("number")
    if number is None:
        last = ConstitutionRule.objects.order_by("-number").values_list("number", flat=True)
        number = (last.first() or 0) + 1
    elif not isinstance(number, int) or number < 1:
        raise CouncilError("invalid_number", "number: a positive integer", field="change.number")
    elif ConstitutionRule.objects.filter(number=number).exists():
        raise CouncilError("exists", f"rule number {number} is taken", field="change.number")
    return {
        "title": _text(change, "title", limit=120),
        "text": _text(change, "text"),
        "enforcement": enforcement,
        "predicates": _predicates(
            change.get("predicates", []), actions=("deny",), field="change.predicates"
        ),
        "number": number,
    }


def _check_strengthen(target: str, change: dict[str, Any]) -> dict[str, Any]:
    _unknown(change, ("enforcement",))
    rule = ConstitutionRule.objects.filter(pk=target).first()
    if rule is None:
        raise CouncilError("not_found", f"no constitution rule {target!r}", field="target")
    enforcement = change.get("enforcement")
    if enforcement not in ConstitutionRule.STRENGTH:
        raise CouncilError(
            "invalid_enforcement",
            "enforcement: record, flag or block",
            field="change.enforcement",
        )
    if ConstitutionRule.STRENGTH[enforcement] <= ConstitutionRule.STRENGTH[rule.enforcement]:
        raise CouncilError(
            "not_stronger",
            f"{target} is already {rule.enforcement}: rules are only ever strengthened",
            field="change.enforcement",
        )
    return {"enforcement": enforcement}


def _check_directive(target: str, change: dict[str, Any]) -> dict[str, Any]:
    _unknown(change, DIRECTIVE_FIELDS)
    if not CODE.match(target or "") or len(target) > 40:
        raise CouncilError("invalid_code", "the code is UPPER_SNAKE, at most 40", field="target")
    current = PrimeDirective.objects.filter(pk=target).first()
    if current is None:
        for name in ("priority", "scope", "rule_text"):
            if name not in change:
                raise CouncilError(
                    "required", f"a new directive needs {name}", field=f"change.{name}"
                )
    checked: dict[str, Any] = {}
    if "priority" in change:
        priority = change["priority"]
        if not isinstance(priority, int) or not 0 <= priority <= 100:
            raise CouncilError("invalid_priority", "priority: 0–100", field="change.priority")
        checked["priority"] = priority
    for name in ("scope", "rule_text"):
        if name in change:
            checked[name] = _text(change, name)
    if "predicates" in change:
        checked["predicates"] = _predicates(
            change["predicates"], actions=("deny", "escalate"), field="change.predicates"
        )
    if "escalation" in change:
        if change["escalation"] not in PrimeDirective.Escalation.values:
            raise CouncilError(
                "invalid_escalation",
                f"escalation: {', '.join(PrimeDirective.Escalation.values)}",
                field="change.escalation",
            )
        checked["escalation"] = change["escalation"]
    if "active" in change:
        if not isinstance(change["active"], bool):
            raise CouncilError("invalid_active", "active: true or false", field="change.active")
        checked["active"] = change["active"]
    if not checked:
        raise CouncilError("empty_change", "the proposal changes nothing", field="change")
    if current is not None and all(getattr(current, k) == v for k, v in checked.items()):
        raise CouncilError("empty_change", "the directive already reads so", field="change")
    return checked


def _check_vpol(target: str, change: dict[str, Any]) -> dict[str, Any]:
    _unknown(change, VPOL_FIELDS)
    policy = ValidationPolicy.objects.filter(name=target).first()
    if policy is None:
        raise CouncilError("not_found", f"no V-Pol named {target!r}", field="target")
    checked = dict(change)
    if "rules" in checked:
        checked["rules"] = _predicates(
            checked["rules"], actions=("allow", "deny", "review"), field="change.rules"
        )
    for name, kind in (("active", bool), ("council_required", bool), ("priority", int)):
        if name in checked and not isinstance(checked[name], kind):
            raise CouncilError("invalid", f"{name}: wrong type", field=f"change.{name}")
    if "enforcement_mode" in checked and checked["enforcement_mode"] not in (
        "monitor",
        "intercept",
        "strict",
    ):
        raise CouncilError(
            "invalid",
            "enforcement_mode: monitor, intercept or strict",
            field="change.enforcement_mode",
        )
    if "tool_patterns" in checked and not (
        isinstance(checked["tool_patterns"], list)
        and all(isinstance(p, str) and p for p in checked["tool_patterns"])
    ):
        raise CouncilError(
            "invalid", "tool_patterns: a list of glob patterns", field="change.tool_patterns"
        )
    if not checked or all(getattr(policy, k) == v for k, v in checked.items()):
        raise CouncilError("empty_change", "the proposal changes nothing", field="change")
    return checked


def _check_seat(kind: str, target: str, change: dict[str, Any]) -> dict[str, Any]:
    _unknown(change, ())
    user = get_user_model().objects.filter(username=target).first()
    if user is None:
        raise CouncilError("not_found", f"no user {target!r}", field="target")
    seated = CouncilMember.objects.filter(user=user).exists()
    if kind == Kind.SEAT:
        if seated:
            raise CouncilError("already_seated", f"{target} is on the council", field="target")
        check_seatable(user, seated=CouncilMember.objects.count())
    else:
        if not seated:
            raise CouncilError("not_seated", f"{target} is not on the council", field="target")
        if CouncilMember.objects.count() <= 1:
            raise CouncilError(
                "last_member", "the council's last member cannot be unseated", field="target"
            )
    return {}


# ---------------------------------------------------------------- what-if


def _call_facts(call: ToolCall) -> dict[str, Any]:
    """A recorded call's facts (its agent's level as it is now; no reason or confidence)."""
    arguments = call.input if isinstance(call.input, dict) else {}
    return decision_facts(
        arguments=arguments,
        agent=call.agent,
        tool=call.tool,
        hour=timezone.localtime(call.timestamp).hour,
        knock_on=False,
        task_id=str(call.task_id) if call.task_id else None,
        reason="",
        text="\n".join(argument_strings(arguments)),
        confidence=None,
    )


def _verdict(rules: list[Any], facts: dict[str, Any], *, default: str) -> str:
    rule = first_match(rules, facts)
    return default if rule is None else str(rule.get("action", default))


def what_if(kind: str, target: str, change: dict[str, Any]) -> dict[str, Any]:
    """What the change would have decided on the recorded calls of the last
    RABS_COUNCIL_WHAT_IF_DAYS days (at most RABS_COUNCIL_WHAT_IF_CALLS, newest first), next to
    what the rules in force decided: a replay of the predicates on each call's recorded
    arguments, tool and agent (the agent's level as it is now)."""
    days, limit = settings.RABS_COUNCIL_WHAT_IF_DAYS, settings.RABS_COUNCIL_WHAT_IF_CALLS
    since = timezone.now() - timedelta(days=days)
    before: list[Any]
    after: list[Any]
    patterns: list[str] | None = None
    if kind == Kind.CONSTITUTION_ADD:
        before, after = [], change["predicates"]
        label_before, label_after = "—", change["enforcement"]
    elif kind == Kind.CONSTITUTION_STRENGTHEN:
        rule = ConstitutionRule.objects.get(pk=target)
        before = after = rule.predicates
        label_before, label_after = rule.enforcement, change["enforcement"]
    elif kind == Kind.DIRECTIVE:
        current = PrimeDirective.objects.filter(pk=target).first()
        before = current.predicates if current is not None and current.active else []
        active = change.get("active", current.active if current else True)
        after = change.get("predicates", current.predicates if current else []) if active else []
        label_before = label_after = ""
    elif kind == Kind.VPOL:
        policy = ValidationPolicy.objects.get(name=target)
        before = policy.rules if policy.active else []
        active = change.get("active", policy.active)
        after = change.get("rules", policy.rules) if active else []
        patterns = list(change.get("tool_patterns", policy.tool_patterns))
        label_before = label_after = ""
    else:
        return {}
    if not before and not after:
        return {"calls": 0, "since": since.isoformat(), "changed": 0, "examples": []}
    calls = (
        ToolCall.objects.filter(timestamp__gte=since)
        .select_related("agent", "tool")
        .order_by("-timestamp")[:limit]
    )
    seen = changed = 0
    examples: list[dict[str, Any]] = []
    for call in calls:
        if patterns is not None and not any(
            fnmatch.fnmatchcase(call.requested_tool_id, p) for p in patterns
        ):
            continue
        seen += 1
        facts = _call_facts(call)
        was = _verdict(before, facts, default="no match")
        would = _verdict(after, facts, default="no match")
        if label_before or label_after:  # the constitution: match → its enforcement
            was = label_before if was != "no match" and label_before != "—" else "no match"
            would = label_after if would != "no match" else "no match"
        if was == would:
            continue
        changed += 1
        if len(examples) < 10:
            examples.append(
                {
                    "call_id": str(call.pk),
                    "tool_id": call.requested_tool_id,
                    "agent_id": call.agent_id,
                    "at": call.timestamp.isoformat(),
                    "decided": call.decision,
                    "was": was,
                    "would": would,
                }
            )
    return {"calls": seen, "since": since.isoformat(), "changed": changed, "examples": examples}


# ---------------------------------------------------------------- applying


def change_apply(proposal: CouncilProposal, change: dict[str, Any]) -> str:
    """Make the (checked) change of a passed proposal; returns what was done."""
    with changes_by_proposal(proposal.pk):
        return str(_APPLY[proposal.kind](proposal, change))


def _apply_constitution_add(proposal: CouncilProposal, change: dict[str, Any]) -> str:
    rule = ConstitutionRule.objects.create(code=proposal.target, **change)
    return f"constitution rule {rule.number} {rule.code} added ({rule.enforcement})"


def _apply_strengthen(proposal: CouncilProposal, change: dict[str, Any]) -> str:
    rule = ConstitutionRule.objects.select_for_update().get(pk=proposal.target)
    before, rule.enforcement = rule.enforcement, change["enforcement"]
    rule.save(update_fields=["enforcement"])
    return f"{rule.code}: {before} → {rule.enforcement}"


def _apply_directive(proposal: CouncilProposal, change: dict[str, Any]) -> str:
    directive = PrimeDirective.objects.select_for_update().filter(pk=proposal.target).first()
    created = directive is None
    directive = directive or PrimeDirective(code=proposal.target)
    for name, value in change.items():
        setattr(directive, name, value)
    directive.save()
    return f"directive {directive.code} {'added' if created else 'changed'}: {', '.join(change)}"


def _apply_vpol(proposal: CouncilProposal, change: dict[str, Any]) -> str:
    policy = ValidationPolicy.objects.get(name=proposal.target)
    for name, value in change.items():
        setattr(policy, name, value)
    validation_policy_save(policy=policy, is_new=False)
    return f"V-Pol {policy.name} now v{policy.version}: {', '.join(change)}"


def _apply_seat(proposal: CouncilProposal, change: dict[str, Any]) -> str:
    user = get_user_model().objects.get(username=proposal.target)
    if proposal.kind == Kind.SEAT:
        CouncilMember.objects.create(user=user, seated_by=proposal)
        return f"{proposal.target} seated"
    CouncilMember.objects.filter(user=user).delete()
    return f"{proposal.target} unseated"


_APPLY: dict[str, Any] = {
    Kind.CONSTITUTION_ADD: _apply_constitution_add,
    Kind.CONSTITUTION_STRENGTHEN: _apply_strengthen,
    Kind.DIRECTIVE: _apply_directive,
    Kind.VPOL: _apply_vpol,
    Kind.SEAT: _apply_seat,
    Kind.UNSEAT: _apply_seat,
}
