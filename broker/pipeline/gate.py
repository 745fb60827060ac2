"""The gate (ARCHITECTURE.md "The gate, decided"): static settings × dynamic trust → decision.

First match wins:

1. ``execution_mode = disabled`` → deny (decided earlier, in ``resolve_tool``).
2. a directive, constitution rule or V-Pol says deny → deny (decided earlier).
3. the call is over one of the agent's caps with ``over: review`` → pending approval, the axis
   named (``cap_review``), whatever the validation mode.
4. something flagged the call (a V-Pol review rule, the threat assessment, a directive's
   escalation): validation mode ``monitor`` → carry on (the finding is audited); ``intercept`` →
   pending approval; ``strict`` → pending approval for senior reviewers only. A directive
   escalation or a V-Pol ``senior_review`` rule always goes to senior reviewers, whatever the
   mode.
5. ``execution_mode = auto`` → execute.
6. ``execution_mode = review`` → by the effective monitoring level, the lowest of the tool's, the
   agent's and the tool's ceiling: 0 pending; 1 a sampled share pending, the rest execute; 2
   execute, then a post-execution review item; 3 execute, a sampled share gets a spot-check item;
   4 execute.

The validation mode applied is the stricter of the tool's and the governing V-Pol's.
Sampling is deterministic per call id, so audits and tests can reproduce it.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence

from brainframe.choices import ExecutionMode, ValidationMode
from brainframe.models import ApprovalRequest, Tool

from .context import Finding, Outcome, Verdict

_STRICTNESS: dict[str, int] = {
    ValidationMode.MONITOR: 0,
    ValidationMode.INTERCEPT: 1,
    ValidationMode.STRICT: 2,
}
REVIEWERS = ApprovalRequest.ReviewerGroup.REVIEWERS
SENIOR = ApprovalRequest.ReviewerGroup.SENIOR
PRE, POST, SPOT = (
    ApprovalRequest.Kind.PRE_EXECUTION,
    ApprovalRequest.Kind.POST_EXECUTION,
    ApprovalRequest.Kind.SPOT_CHECK,
)


def sampled(call_id: uuid.UUID, rate: float, *, salt: str) -> bool:
    """Deterministic Bernoulli draw: the same call id and salt always give the same answer."""
    digest = hashlib.sha256(f"{salt}:{call_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def effective_validation_mode(tool_mode: str, policy_mode: str | None) -> str:
    if policy_mode is None:
        return tool_mode
    return max(tool_mode, policy_mode, key=lambda mode: _STRICTNESS[mode])


def effective_level(tool: Tool, agent_level: int) -> int:
    return min(tool.monitoring_level, agent_level, tool.monitoring_ceiling)


def gate_decide(
    *,
    tool: Tool,
    agent_level: int,
    policy_mode: str | None,
    findings: Sequence[Finding],
    call_id: uuid.UUID,
    pre_exec_sample_rate: float,
    spot_check_rate: float,
) -> Verdict:
    if tool.execution_mode == ExecutionMode.DISABLED:
        return Verdict(Outcome.DENY, "tool_disabled", f"{tool.tool_id} is disabled")

    if findings:
        why = "; ".join(f"{f.source}: {f.detail}" for f in findings)
        if any(f.source.startswith("cap:") for f in findings):
            # Over an agent's cap (docs/access.md): a human looks, whatever the modes say.
            return Verdict(Outcome.PENDING, "cap_review", why, approval_kind=PRE)
        if any(f.senior or f.source.startswith(("directive:", "tier:")) for f in findings):
            return Verdict(
                Outcome.PENDING,
                "escalated_directive",
                why,
                reviewer_group=SENIOR,
                approval_kind=PRE,
            )
        mode = effective_validation_mode(tool.validation_mode, policy_mode)
        if mode == ValidationMode.INTERCEPT:
            return Verdict(Outcome.PENDING, "flagged_intercept", why, approval_kind=PRE)
        if mode == ValidationMode.STRICT:
            return Verdict(
                Outcome.PENDING, "flagged_strict", why, reviewer_group=SENIOR, approval_kind=PRE
            )
        # monitor: the finding is recorded with the call, and the call carries on.

    if tool.execution_mode == ExecutionMode.AUTO:
        return Verdict(Outcome.EXECUTE, "auto")

    level = effective_level(tool, agent_level)
    if level == 0:
        return Verdict(Outcome.PENDING, "level_0_review_all", approval_kind=PRE)
    if level == 1:
        if sampled(call_id, pre_exec_sample_rate, salt="pre_exec"):
            return Verdict(Outcome.PENDING, "level_1_sampled", approval_kind=PRE)
        return Verdict(Outcome.EXECUTE, "level_1_not_sampled")
    if level == 2:
        return Verdict(Outcome.EXECUTE_POST_REVIEW, "level_2_post_review", approval_kind=POST)
    if level == 3:
        if sampled(call_id, spot_check_rate, salt="spot_check"):
            return Verdict(Outcome.EXECUTE_POST_REVIEW, "level_3_spot_check", approval_kind=SPOT)
        return Verdict(Outcome.EXECUTE, "level_3_not_sampled")
    return Verdict(Outcome.EXECUTE, "level_4_autonomous")
