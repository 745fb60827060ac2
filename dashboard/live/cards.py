"""An approval card's context: the same for a page, an answer to a decision and a pushed update
(one template, ``dashboard/partials/approval_card.html``)."""

from __future__ import annotations

import json
from typing import Any

from brainframe.models import ApprovalRequest, ReasonLog, ToolCall
from brainframe.services.registry.tools import reviewer_summary
from broker.services.approvals import awaiting_worker, can_decide
from broker.services.why import why_here
from dashboard.data import selectors

Status = ApprovalRequest.Status


def progress(approval: ApprovalRequest) -> str:
    """Where an approved call is: ``waiting`` (no worker took it up), ``starting``, ``running``,
    ``ran``, ``failed``, ``cancelled``; "" for anything else (open, rejected, post-execution)."""
    if approval.status not in (Status.APPROVED, Status.MODIFIED):
        return ""
    call = approval.tool_call if approval.tool_call_id else None
    if approval.kind != ApprovalRequest.Kind.PRE_EXECUTION or call is None:
        return ""
    outcome = call.outcome
    if outcome == ToolCall.Outcome.NOT_RUN:
        return "waiting" if awaiting_worker(approval, call) else "starting"
    return {
        ToolCall.Outcome.PENDING: "running",
        ToolCall.Outcome.SUCCEEDED: "ran",
        ToolCall.Outcome.CANCELLED: "cancelled",
    }.get(ToolCall.Outcome(outcome), "failed")


def may_add_reviewers(user: Any) -> bool:
    """Whether ``user`` can put people (themselves included) in the reviewer groups."""
    return bool(user.is_authenticated and user.is_staff and user.has_perm("auth.change_user"))


def card_context(
    approval: ApprovalRequest,
    user: Any,
    *,
    chain: list[ReasonLog] | None = None,
    groups: set[str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Everything the card shows. Reads the approval's agent, tool, V-Pol, call and R-Tag:
    select them with it (``selectors.CARD_RELATED``)."""
    return {
        "approval": approval,
        "chain": selectors.chain_for(approval) if chain is None else chain,
        "can_decide": can_decide(user, approval, groups=groups),
        "can_stand": selectors.can_stand(approval),
        "arguments_json": json.dumps(approval.arguments, indent=2, ensure_ascii=False),
        "why": why_here(approval),
        "what": reviewer_summary(approval.tool),
        "origin": selectors.origin_label(approval),
        "progress": progress(approval),
        "may_add_reviewers": may_add_reviewers(user),
        "user_id": getattr(user, "pk", None),
        **extra,
    }
