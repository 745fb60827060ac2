"""The pipeline's stages, in order. Each passes (None) or returns a Verdict."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from jsonschema.exceptions import ValidationError
from mcp.shared.exceptions import MCPError

from brainframe.choices import TIER_REQUIRES, TRUST_RANK, ExecutionMode, PermissionTier
from brainframe.models import PrimeDirective, Tool
from brainframe.safety.policy.acl import acl_decide_cached, scope_violation, tool_permitted
from brainframe.safety.policy.caps import CapBreach, autonomy_cap, caps_compiled, per_day_breach
from brainframe.safety.policy.conditions import first_match, shadow_match
from brainframe.selectors import authority_since, executed_unreviewed_since, tool_allows
from brainframe.services.access.grants import GRANT_TOOL
from brainframe.services.access.standing import ROUTINE_REVIEW, standing_match
from brainframe.services.work.delegation import delegation_managers

from ..errors import BrokerRefusal
from ..registry import tool_upstream_checked
from ..upstream_client import UpstreamTimeout, UpstreamUnavailable
from . import threat
from .context import CallContext, Finding, Outcome, Verdict
from .gate import gate_decide
from .latch import latch_check
from .modes import check_mode
from .validation import Validators, schema_validators_by_key

Stage = Callable[[CallContext], Verdict | None]


def resolve_tool(ctx: CallContext) -> Verdict | None:
    if ctx.tool is None:
        return Verdict(
            Outcome.UNKNOWN_TOOL, "unknown_tool", f"no tool {ctx.request.tool_id!r} in the registry"
        )
    if ctx.tool.execution_mode == ExecutionMode.DISABLED:
        return Verdict(Outcome.DENY, "tool_disabled", f"{ctx.tool.tool_id} is disabled")
    if ctx.tool.handler_type == Tool.HandlerType.MCP:
        return _upstream_unchanged(ctx.tool)
    return None


def _upstream_unchanged(tool: Tool) -> Verdict | None:
    """An imported tool runs only while its upstream lists the definition staff accepted (the
    recorded listing: a dict lookup; listed again first after a change notice)."""
    try:
        _, problem = tool_upstream_checked(tool)
    except (UpstreamTimeout, UpstreamUnavailable, MCPError):
        return None  # unreachable now: the handler cannot call it either, and says so
    if problem is None:
        return None
    return Verdict(Outcome.DENY, "upstream_tool_changed", f"{tool.tool_id}: {problem}")


def check_loop_latch(ctx: CallContext) -> Verdict | None:
    """The loop latch (``latch``): an agent calling on and on with no new input is stopped.
    Not in a what-if replay (``as_of``): the latch counts live calls, not history. If the
    counter cannot be reached, nothing is decided (503, like the rate limiter)."""
    if ctx.as_of is not None:
        return None
    try:
        why = latch_check(ctx.agent.agent_id)
    except Exception as exc:
        raise BrokerRefusal(
            503, "loop_latch_unavailable", "cannot count the agent's calls right now; retry"
        ) from exc
    if why:
        return Verdict(Outcome.DENY, "loop_latched", why)
    return None


def check_allowlist(ctx: CallContext) -> Verdict | None:
    tool = ctx.tool
    assert tool is not None
    if not tool_allows(tool, ctx.agent.agent_id):
        return Verdict(
            Outcome.DENY,
            "not_allowed",
            f"{ctx.agent.agent_id} is not in {tool.tool_id}'s agent_access",
        )
    if ctx.agent_grants:
        granted = ctx.agent_grants.get((ctx.agent.agent_id, tool.tool_id))
        if granted is not None:  # on the allowlist by a grant: the audit names it
            if not granted.live(ctx.as_of or timezone.now()):
                return Verdict(
                    Outcome.DENY,
                    "not_allowed",
                    f"grant {granted.grant_id} for {tool.tool_id} has run out",
                )
            ctx.grant_ids.append(granted.grant_id)
    required = set(tool.role_requirements)
    if required and not required & ctx.requester_roles:
        who = (
            "the task's requester holds none of them"
            if ctx.task and ctx.task.on_behalf_of_id
            else "the call has no task run on behalf of a person"
        )
        return Verdict(
            Outcome.DENY,
            "role_required",
            f"{tool.tool_id} needs one of the roles {sorted(required)}; {who}",
        )
    return None


def check_permission_tier(ctx: CallContext) -> Verdict | None:
    """Executor layers 2 and 3 (seed 001): the agent's trust against the tool's tier. One step
    short asks a senior reviewer to confirm; further short (or ADMIN without system trust): no."""
    tool = ctx.tool
    assert tool is not None
    needed = TIER_REQUIRES[PermissionTier(tool.permission_tier)]
    have, want = TRUST_RANK[ctx.agent.trust_level], TRUST_RANK[needed]
    if have >= want:
        return None
    if tool.permission_tier == PermissionTier.ADMIN:
        return Verdict(
            Outcome.DENY, "tier_admin_only", f"{tool.tool_id} is an ADMIN tool: system trust only"
        )
    if want - have > 1:
        return Verdict(
            Outcome.DENY,
            "insufficient_trust",
            f"{tool.tool_id} ({tool.permission_tier}) needs {needed} trust; "
            f"{ctx.agent.agent_id} is {ctx.agent.trust_level}",
        )
    ctx.findings.append(
        Finding(
            f"tier:{tool.permission_tier}",
            f"needs {needed} trust, agent is {ctx.agent.trust_level}: a senior reviewer confirms",
        )
    )
    return None


DELEGATE_TOOL = "agents.delegate"


def _tier_allows(tool: Tool, trust_level: str) -> bool:
    return (
        TRUST_RANK[trust_level] >= TRUST_RANK[TIER_REQUIRES[PermissionTier(tool.permission_tier)]]
    )


def check_delegation(ctx: CallContext) -> Verdict | None:
    """Managers and workers (seed 003): a worker's call on delegated work is allowed only where
    every manager above it may make it too (allowlist and tier); ``agents.delegate`` beyond
    ``RABS_DELEGATION_MAX_DEPTH`` is refused. The delegation comes from the call's chain (its
    task, or its parent call's task), never from what the agent says; a call whose chain names
    no delegated work, by an agent that holds some, is held to every manager of that work, and
    may not delegate (delegating on one's own work is for an agent that holds none)."""
    tool = ctx.tool
    assert tool is not None
    if ctx.delegation is not None:
        links = [(ctx.delegation, "")]
    else:
        held = ctx.held.delegations
        if held and tool.tool_id == DELEGATE_TOOL:
            return Verdict(
                Outcome.DENY,
                "delegation_unbound",
                f"{ctx.agent.agent_id} holds work delegated by "
                f"{', '.join(sorted({d.manager_id for d in held}))}: delegate from the task it "
                "is for (task_id), so that depth and managers carry over; delegating on one's "
                "own work is for an agent that holds no delegated work",
            )
        links = [(d, " (work it holds; this call names none)") for d in held]
    for delegation, note in links:
        for link, manager in delegation_managers(delegation):
            if not tool_allows(tool, manager.agent_id) or not _tier_allows(
                tool, manager.trust_level
            ):
                return Verdict(
                    Outcome.DENY,
                    "exceeds_manager",
                    f"{ctx.agent.agent_id} works for {manager.agent_id} (delegation "
                    f"{link.pk}){note}, who may not call {tool.tool_id}: a worker never exceeds "
                    "its manager",
                )
    return _depth_verdict(tool, ctx.delegation.depth if ctx.delegation else 0)


def _depth_verdict(tool: Tool, depth: int) -> Verdict | None:
    limit = settings.RABS_DELEGATION_MAX_DEPTH
    if tool.tool_id == DELEGATE_TOOL and depth + 1 > limit:
        return Verdict(
            Outcome.DENY,
            "delegation_too_deep",
            f"this task is already {depth} delegation(s) deep; the limit is {limit}",
        )
    return None


#: The broker's own tools an ACL does not limit: a worker's calls carry the same principal and
#: are checked the same way; asking for a grant is how a person gets more; a reply goes only to
#: the person whose message the ACL already let in, on the channel it came by.
ACL_EXEMPT = frozenset({DELEGATE_TOOL, GRANT_TOOL, "channel.reply"})


def check_principal(ctx: CallContext) -> Verdict | None:
    """Who is asking (docs/access.md): in a chain a person's message started, a call is allowed
    only where the agent (the stages before) **and** that person's ACL permissions allow it,
    arguments within the person's data scopes, or where a live grant for that person does. A
    call whose chain names no person, by an agent that holds work for people, must be allowed
    for each of them (the intersection of their permissions)."""
    tool = ctx.tool
    assert tool is not None
    if tool.tool_id in ACL_EXEMPT:
        return None
    if ctx.principal is not None:
        return _check_person(ctx, ctx.principal, ctx.principal_key, "")
    for principal, key in ctx.held.principals:
        who = principal.get("name") or "a person"
        verdict = _check_person(
            ctx, principal, key, f" (work {ctx.agent.agent_id} holds for {who}; this call names "
            "no chain of its own, so it is decided under the limits of everyone it works for)",
        )  # fmt: skip
        if verdict is not None:
            return verdict
    return None


def _check_person(
    ctx: CallContext, principal: dict[str, Any], key: str | None, held: str
) -> Verdict | None:
    tool = ctx.tool
    assert tool is not None
    key = key or json.dumps(principal, sort_keys=True)
    acl = acl_decide_cached(ctx.acl, principal, key, hour=principal.get("hour", ctx.local_hour))
    ctx.acl_decision = acl
    who = principal.get("name") or f"an unknown sender ({principal.get('sender') or '?'})"
    arguments = ctx.request.arguments
    if not acl.allows or not tool_permitted(acl, tool.tool_id):
        grant = _person_grant(ctx, principal, lambda g: g.covers_tool(tool.tool_id))
        if grant is None:
            if not acl.allows:
                return Verdict(
                    Outcome.DENY,
                    "principal_denied",
                    f"the chain acts for {who}{held}, whom {acl.label()} allows nothing",
                )
            return Verdict(
                Outcome.DENY,
                "principal_not_allowed",
                f"{ctx.agent.agent_id} may call {tool.tool_id}, but the chain acts for {who}"
                f"{held} and {acl.label()} does not allow it for them: both must",
            )
        # A person no policy allows gets the narrowest scopes, widened only by the grant.
        base = acl.scopes if acl.allows else {"participant": "own", "recipient": "sender"}
        scopes = {**base, **grant.scopes}
    else:
        scopes = dict(acl.scopes)
    why = scope_violation(scopes, principal, arguments)
    if why:
        widened = _person_grant(
            ctx,
            principal,
            lambda g: bool(g.scopes)
            and scope_violation({**scopes, **g.scopes}, principal, arguments) is None,
        )
        if widened is None:
            return Verdict(
                Outcome.DENY,
                "principal_scope",
                f"the chain acts for {who}{held} ({acl.label()}): {why}",
            )
    return None


def _person_grant(ctx: CallContext, principal: dict[str, Any], fits: Callable[[Any], bool]) -> Any:
    """The first live grant for the chain's person that ``fits`` (its id noted for the audit)."""
    grants = ctx.person_grants.get(principal.get("person_id") or "")
    if not grants:
        return None
    now = ctx.as_of or timezone.now()
    for grant in grants:
        if grant.live(now) and fits(grant):
            ctx.grant_ids.append(grant.grant_id)
            return grant
    return None


def check_caps(ctx: CallContext) -> Verdict | None:
    """The agent's three-axis caps (docs/access.md): a call over one is refused or sent to
    review, the axis named. Counts are read only when a cap needs them."""
    caps = ctx.agent.caps
    if not caps:
        return None
    tool = ctx.tool
    assert tool is not None
    arguments = ctx.request.arguments
    compiled = caps_compiled(caps)
    breach = compiled.capability_or_call_breach(
        tier=tool.permission_tier, category=tool.category, arguments=arguments
    )
    if breach is None and compiled.needs_day_totals(arguments):
        now = ctx.as_of or timezone.now()
        day = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)
        amount, recipients = authority_since(ctx.agent.agent_id, day, now)
        breach = per_day_breach(caps, arguments, amount_today=amount, recipients_today=recipients)
    hourly = compiled.hourly
    if breach is None and hourly is not None:
        now = ctx.as_of or timezone.now()
        done = executed_unreviewed_since(ctx.agent.agent_id, now - timedelta(hours=1), now)
        if done >= hourly:
            breach = CapBreach(
                "autonomy",
                f"{done} calls executed with no human look in the last hour; the cap is {hourly}",
                str(caps["autonomy"].get("over") or "review"),
            )
    if breach is None:
        return None
    if breach.action == "deny":
        return Verdict(Outcome.DENY, breach.code, f"over the {breach.axis} cap: {breach.detail}")
    ctx.findings.append(Finding(f"cap:{breach.axis}", breach.detail))
    return None


def _tool_validators(tool: Tool) -> Validators:
    # The schema text is serialised once per loaded tool instance.
    key = tool.__dict__.get("_schema_key")
    if key is None:
        key = tool.__dict__["_schema_key"] = json.dumps(tool.input_schema, sort_keys=True)
    return schema_validators_by_key(key)


def _error_path(error: ValidationError) -> str:
    parts = [str(part) for part in error.absolute_path]
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [name for name in error.validator_value if name not in error.instance]
        if missing:
            parts.append(str(missing[0]))
    return "/" + "/".join(parts)


def validate_arguments(ctx: CallContext) -> Verdict | None:
    tool = ctx.tool
    assert tool is not None
    fast, validator = _tool_validators(tool)
    if fast.is_valid(ctx.request.arguments):
        return None
    errors = sorted(validator.iter_errors(ctx.request.arguments), key=_error_path)
    if not errors:
        return None
    return Verdict(
        Outcome.INVALID,
        "invalid_arguments",
        f"{len(errors)} argument error(s) against {tool.tool_id}'s input schema",
        errors=tuple({"path": _error_path(e), "message": e.message} for e in errors[:50]),
    )


def assess_threat(ctx: CallContext) -> Verdict | None:
    ctx.threat = threat.assess(ctx)
    action = ctx.threat.get("action")
    if action == "block":
        patterns = ", ".join(ctx.threat.get("patterns", [])) or "threat patterns"
        return Verdict(Outcome.DENY, "threat_blocked", f"blocked: {patterns}")
    if action == "flag":
        patterns = ", ".join(ctx.threat.get("patterns", []))
        ctx.findings.append(Finding("threat", f"risk {ctx.threat.get('risk')}: {patterns}"))
    return None


def check_directives(ctx: CallContext) -> Verdict | None:
    """Constitution rules, then prime directives: append-only, ordered block predicates."""
    facts = ctx.facts()
    for code, enforcement, predicates in ctx.constitution:
        rule = first_match(predicates, facts)
        if rule is None or enforcement == "record":
            continue
        reason = rule.get("reason") or f"violates constitutional rule {code}"
        if enforcement == "block":
            return Verdict(Outcome.DENY, f"constitution:{code}", reason)
        ctx.findings.append(Finding(f"constitution:{code}", reason))
    for code, escalation, predicates in ctx.directives:
        rule = first_match(predicates, facts)
        if rule is None:
            continue
        reason = rule.get("reason") or f"violates {code}"
        if rule["action"] == "deny":
            return Verdict(Outcome.DENY, f"directive:{code}", reason)
        ctx.findings.append(
            Finding(
                f"directive:{code}",
                reason,
                safety_level_zero=escalation == PrimeDirective.Escalation.SAFETY_LEVEL_ZERO,
            )
        )
    return None


def evaluate_vpol(ctx: CallContext) -> Verdict | None:
    if ctx.vpol is None:
        return None
    rules = ctx.vpol.rules
    if any(r.get("mode") == "shadow" for r in rules):
        shadow = shadow_match(rules, ctx.facts())
        if shadow is not None:
            ctx.shadow = {
                "policy": ctx.vpol.name,
                "rule": shadow["id"],
                "would": shadow["action"],
                "reason": shadow.get("reason") or "",
            }
    rule = first_match(rules, ctx.facts())
    if rule is None or rule["action"] == "allow":
        return None
    reason = rule.get("reason") or f"rule {rule['id']}"
    if rule["action"] == "deny":
        return Verdict(Outcome.DENY, f"policy:{ctx.vpol.name}", reason)
    senior = rule["action"] == "senior_review"
    ctx.findings.append(Finding(f"vpol:{rule['id']}", reason, senior=senior))
    return None


def gate(ctx: CallContext) -> Verdict:
    assert ctx.tool is not None
    return gate_decide(
        tool=ctx.tool,
        agent_level=min(ctx.agent.monitoring_level, autonomy_cap(ctx.agent.caps or {})),
        policy_mode=ctx.vpol.enforcement_mode if ctx.vpol else None,
        findings=ctx.findings,
        call_id=ctx.call_id,
        pre_exec_sample_rate=settings.RABS_PRE_EXEC_SAMPLE_RATE,
        spot_check_rate=settings.RABS_SPOT_CHECK_RATE,
    )


STAGES: tuple[Stage, ...] = (
    resolve_tool,
    check_loop_latch,
    check_allowlist,
    check_mode,
    check_permission_tier,
    check_delegation,
    check_principal,
    check_caps,
    validate_arguments,
    assess_threat,
    check_directives,
    evaluate_vpol,
)


def standing_approval(ctx: CallContext, verdict: Verdict) -> Verdict:
    """A call the gate sends to routine review (its trust level, nothing flagged) runs when a
    reviewer's live standing approval covers it; its audit row names that approval."""
    if (
        verdict.outcome != Outcome.PENDING
        or verdict.code not in ROUTINE_REVIEW
        or verdict.reviewer_group != "reviewers"
        or ctx.findings
        or ctx.tool is None
        or ctx.tags is None
    ):
        return verdict
    standing = standing_match(
        agent_id=ctx.agent.agent_id,
        tool_id=ctx.tool.tool_id,
        arguments=ctx.request.arguments,
        vpol_id=ctx.tags.vpol_id,
        vpol_version=ctx.tags.vpol_version,
    )
    if standing is None:
        return verdict
    return Verdict(
        Outcome.EXECUTE,
        "standing_approval",
        f"standing approval {standing.pk} (until {standing.until:%Y-%m-%d %H:%M %Z})",
    )


def decide(ctx: CallContext) -> Verdict:
    """Run the stages in order; the first verdict wins, otherwise the gate decides (and a
    standing approval may stand in for the routine review it asks for)."""
    for stage in STAGES:
        verdict = stage(ctx)
        if verdict is not None:
            ctx.verdict = _with_grants(ctx, verdict)
            return ctx.verdict
    ctx.verdict = _with_grants(ctx, standing_approval(ctx, gate(ctx)))
    return ctx.verdict


def _with_grants(ctx: CallContext, verdict: Verdict) -> Verdict:
    """The grants a call used, named in its audited detail (docs/access.md, "Grants")."""
    if not ctx.grant_ids:
        return verdict
    used = "under grant " + ", ".join(dict.fromkeys(ctx.grant_ids))
    return dataclasses.replace(
        verdict, detail=f"{verdict.detail}; {used}" if verdict.detail else used
    )
