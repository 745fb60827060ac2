"""Every row of the gate's truth table (README "The gate")."""

from __future__ import annotations

import uuid

import pytest

from brainframe.models import Tool
from broker.pipeline.context import Finding
from broker.pipeline.gate import effective_validation_mode, gate_decide, sampled

FLAG = [Finding("vpol:over-1k", "amount above $1,000")]
DIRECTIVE = [Finding("directive:SAFETY_FIRST", "risk to safety")]


def _tool(
    mode: str = "review", validation: str = "intercept", level: int = 0, ceiling: int = 4
) -> Tool:
    return Tool(
        tool_id="t",
        execution_mode=mode,
        validation_mode=validation,
        monitoring_level=level,
        monitoring_ceiling=ceiling,
        risk_level="write",
    )


def _decide(
    tool: Tool,
    *,
    findings: list[Finding] | None = None,
    agent_level: int = 4,
    policy_mode: str | None = None,
    call_id: uuid.UUID | None = None,
    pre: float = 0.25,
    spot: float = 0.10,
) -> tuple[str, str, str, str]:
    verdict = gate_decide(
        tool=tool,
        agent_level=agent_level,
        policy_mode=policy_mode,
        findings=findings or [],
        call_id=call_id or uuid.uuid4(),
        pre_exec_sample_rate=pre,
        spot_check_rate=spot,
    )
    return verdict.outcome, verdict.code, verdict.approval_kind, verdict.reviewer_group


# (row, tool, findings, expected outcome, approval kind, reviewer group)
ROWS = [
    ("disabled", _tool(mode="disabled"), [], "deny", "", "reviewers"),
    (
        "flag+monitor, auto",
        _tool(mode="auto", validation="monitor"),
        FLAG,
        "execute",
        "",
        "reviewers",
    ),
    (
        "flag+intercept",
        _tool(mode="auto", validation="intercept"),
        FLAG,
        "pending_approval",
        "pre_execution",
        "reviewers",
    ),
    (
        "flag+strict",
        _tool(mode="auto", validation="strict"),
        FLAG,
        "pending_approval",
        "pre_execution",
        "senior_reviewers",
    ),
    (
        "directive escalation, even in monitor",
        _tool(mode="auto", validation="monitor"),
        DIRECTIVE,
        "pending_approval",
        "pre_execution",
        "senior_reviewers",
    ),
    ("auto", _tool(mode="auto", level=0), [], "execute", "", "reviewers"),
    ("review L0", _tool(level=0), [], "pending_approval", "pre_execution", "reviewers"),
    ("review L2", _tool(level=2), [], "execute_post_review", "post_execution", "reviewers"),
    ("review L4", _tool(level=4), [], "execute", "", "reviewers"),
    (
        "review L4, ceiling 2",
        _tool(level=4, ceiling=2),
        [],
        "execute_post_review",
        "post_execution",
        "reviewers",
    ),
    (
        "flag+monitor, review L0",
        _tool(validation="monitor", level=0),
        FLAG,
        "pending_approval",
        "pre_execution",
        "reviewers",
    ),
]


@pytest.mark.parametrize(
    ("row", "tool", "findings", "outcome", "kind", "group"), ROWS, ids=[r[0] for r in ROWS]
)
def test_truth_table(
    row: str, tool: Tool, findings: list[Finding], outcome: str, kind: str, group: str
) -> None:
    got = _decide(tool, findings=findings)
    assert (got[0], got[2], got[3]) == (outcome, kind, group)


def test_level_1_holds_a_sampled_share_before_execution() -> None:
    ids = [uuid.UUID(int=i) for i in range(2000)]
    outcomes = [_decide(_tool(level=1), call_id=i, pre=0.25)[0] for i in ids]
    held = outcomes.count("pending_approval") / len(ids)
    assert 0.21 < held < 0.29
    assert set(outcomes) == {"pending_approval", "execute"}
    # Deterministic per call id: the same call always gets the same answer.
    assert outcomes == [_decide(_tool(level=1), call_id=i, pre=0.25)[0] for i in ids]


def test_level_3_spot_checks_a_sampled_share_after_execution() -> None:
    ids = [uuid.UUID(int=i) for i in range(2000)]
    results = [_decide(_tool(level=3), call_id=i, spot=0.10) for i in ids]
    checked = [r for r in results if r[0] == "execute_post_review"]
    assert all(r[2] == "spot_check" for r in checked)
    assert 0.07 < len(checked) / len(ids) < 0.13
    assert {r[0] for r in results} == {"execute", "execute_post_review"}


def test_effective_level_is_the_lowest_of_tool_agent_and_ceiling() -> None:
    assert _decide(_tool(level=4), agent_level=0)[0] == "pending_approval"
    assert _decide(_tool(level=0), agent_level=4)[0] == "pending_approval"
    assert _decide(_tool(level=3, ceiling=2), agent_level=3)[2] == "post_execution"


def test_stricter_of_tool_and_policy_validation_mode_applies() -> None:
    assert effective_validation_mode("monitor", "strict") == "strict"
    assert effective_validation_mode("strict", "monitor") == "strict"
    assert effective_validation_mode("intercept", None) == "intercept"
    tool = _tool(mode="auto", validation="monitor")
    assert _decide(tool, findings=FLAG, policy_mode="intercept")[0] == "pending_approval"


def test_sampling_rates_are_respected_at_the_extremes() -> None:
    call = uuid.uuid4()
    assert sampled(call, 1.0, salt="x") and not sampled(call, 0.0, salt="x")
