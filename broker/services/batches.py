"""Batches: approvals a reviewer saw together (the board's batches, the admin's bulk actions, the
reviewer API), decided each on its own by ``approvals.approval_decide``, and never calls of
different chains unless the reviewer widened the batch on purpose."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from brainframe.models import ApprovalRequest

from .approvals import ApprovalError, approval_decide


@dataclass(frozen=True)
class BatchItem:
    """One member of a batch decision: decided, or left open with the reason."""

    approval_id: str
    decided: bool
    code: str = ""
    detail: str = ""


def chains_of(approval_ids: list[Any]) -> dict[str, Any]:
    """Each approval's chain (the O-Tag of its R-Tag; its own id when it has none)."""
    rows = ApprovalRequest.objects.filter(pk__in=approval_ids).values_list("pk", "r_tag__o_tag_id")
    return {str(pk): o_tag or f"approval:{pk}" for pk, o_tag in rows}


def approvals_decide_batch(
    *,
    approval_ids: list[Any],
    reviewer: AbstractBaseUser,
    action: str,
    reason: str = "",
    across_chains: bool = False,
) -> list[BatchItem]:
    """Approve, reject or escalate the approvals the reviewer saw together (the board's batches,
    the admin's bulk actions), each as its own decision:
    bound to its own arguments and policy version, in its own transaction, executed exactly once
    (the same ``approval_decide`` as one card). A member that cannot be decided (its policy
    changed, someone decided it meanwhile, it expired) is left as it is and reported with the
    reason. Calls of different chains are decided together only when the reviewer widened the
    batch (``across_chains``); otherwise nothing is decided (``mixed_chains``)."""
    if action not in ("approve", "reject", "escalate"):
        raise ApprovalError(
            "unknown_action", "a batch is approved, rejected or escalated", status=400
        )
    if action == "reject" and not reason.strip():
        raise ApprovalError(
            "reason_required", "a rejection needs a reason the agent will see", status=400
        )
    if not approval_ids:
        raise ApprovalError(
            "empty_batch",
            "nothing was ticked, so nothing was decided",
            status=400,
            errors=[{"path": "approval_ids", "message": "tick the calls to decide"}],
        )
    chains = set(chains_of(list(approval_ids)).values())
    if len(chains) > 1 and not across_chains:
        raise ApprovalError(
            "mixed_chains",
            f"these calls come from {len(chains)} different chains, so nothing was decided; "
            "decide each chain's calls on their own, or widen the batch to decide them together",
            status=400,
            errors=[{"path": "approval_ids", "message": f"{len(chains)} chains"}],
        )
    results = []
    for approval_id in dict.fromkeys(str(i) for i in approval_ids):
        try:
            approval_decide(
                approval_id=approval_id, reviewer=reviewer, action=action, reason=reason
            )
        except ApprovalError as exc:
            results.append(BatchItem(approval_id, False, exc.code, exc.detail))
        except ApprovalRequest.DoesNotExist:
            results.append(BatchItem(approval_id, False, "not_found", "no such approval"))
        else:
            results.append(BatchItem(approval_id, True))
    return results
