"""Standing approvals: "approve this, and calls exactly like it for the next N hours".

A reviewer approving a call may leave a standing approval behind: for the same agent and tool,
the same argument keys, each value either exactly the approved one or — where the reviewer
ticked it — any value (any ``date`` but the same ``vehicle_id``), under the same V-Pol version,
until a time at most RABS_STANDING_APPROVAL_MAX_HOURS away. It stands in for the reviewer only
where the gate would send the call to ordinary review because of the trust level
(``ROUTINE_REVIEW``): a call something flagged, one for senior reviewers, or one a rule denies is
decided as before. A call it lets through is recorded with decision code ``standing_approval``
and the standing approval's id in its audit row. Revoking takes effect on the next call.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from brainframe.models import ApprovalRequest, StandingApproval

#: The gate's codes for "review because of the trust level" (nothing flagged the call).
ROUTINE_REVIEW = frozenset({"level_0_review_all", "level_1_sampled"})


class StandingRefused(Exception):
    def __init__(self, code: str, detail: str, *, field: str = "") -> None:
        super().__init__(detail)
        self.code, self.detail, self.field = code, detail, field


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def pattern_of(arguments: dict[str, Any], any_keys: list[str] | tuple[str, ...]) -> dict[str, Any]:
    return {
        key: {"any": True} if key in any_keys else {"equals": value}
        for key, value in arguments.items()
    }


def pattern_matches(pattern: dict[str, Any], arguments: dict[str, Any]) -> bool:
    if set(pattern) != set(arguments):
        return False
    return all(
        rule.get("any") is True or _same(rule.get("equals"), arguments[key])
        for key, rule in pattern.items()
    )


def standing_check(
    approval: ApprovalRequest, *, hours: float, any_keys: list[str] | tuple[str, ...]
) -> dict[str, Any]:
    """The pattern a standing approval from ``approval`` would have, or StandingRefused."""
    limit = settings.RABS_STANDING_APPROVAL_MAX_HOURS
    if not 0 < hours <= limit:
        raise StandingRefused(
            "invalid_hours", f"hours: more than 0, at most {limit:g}", field="hours"
        )
    if approval.kind != ApprovalRequest.Kind.PRE_EXECUTION:
        raise StandingRefused("not_pre_execution", "only a call waiting to run can stand")
    code = approval.tool_call.decision_code if approval.tool_call else ""
    if code not in ROUTINE_REVIEW or approval.reviewer_group != "reviewers":
        raise StandingRefused(
            "flagged_call",
            "this call was flagged or escalated (not routine review): decide it on its own",
        )
    arguments = approval.arguments if isinstance(approval.arguments, dict) else {}
    unknown = sorted(set(any_keys) - set(arguments))
    if unknown:
        raise StandingRefused(
            "unknown_argument", f"the call has no argument {unknown[0]!r}", field="any"
        )
    if arguments and set(any_keys) == set(arguments):
        raise StandingRefused(
            "too_broad", "keep at least one argument fixed to its approved value", field="any"
        )
    return pattern_of(arguments, any_keys)


def standing_grant(
    *,
    approval: ApprovalRequest,
    by: Any,
    hours: float,
    any_keys: list[str] | tuple[str, ...] = (),
) -> StandingApproval:
    """Create the standing approval (call inside the transaction that approves ``approval``)."""
    pattern = standing_check(approval, hours=hours, any_keys=any_keys)
    return StandingApproval.objects.create(
        agent_id=approval.agent_id,
        tool_id=approval.tool_id,
        pattern=pattern,
        vpol_id=approval.vpol_id,
        vpol_version=approval.vpol_version,
        from_approval=approval,
        granted_by=by,
        until=timezone.now() + timedelta(hours=hours),
    )


def standing_match(
    *,
    agent_id: str,
    tool_id: str,
    arguments: dict[str, Any],
    vpol_id: Any,
    vpol_version: int | None,
    now: datetime | None = None,
) -> StandingApproval | None:
    """The live standing approval covering this call (counted as used), or None."""
    now = now or timezone.now()
    live = StandingApproval.objects.filter(
        agent_id=agent_id, tool_id=tool_id, revoked_at__isnull=True, until__gt=now
    ).order_by("until")
    for standing in live:
        if standing.vpol_id != vpol_id or standing.vpol_version != vpol_version:
            continue
        if pattern_matches(standing.pattern, arguments):
            StandingApproval.objects.filter(pk=standing.pk).update(uses=F("uses") + 1)
            return standing
    return None


def standing_revoke(*, standing: StandingApproval, by: Any, reason: str = "") -> bool:
    """Revoke at once (the next call is decided as if it never existed). False if it already was."""
    with transaction.atomic():
        locked = StandingApproval.objects.select_for_update().get(pk=standing.pk)
        if locked.revoked_at is not None:
            return False
        locked.revoked_at, locked.revoked_by = timezone.now(), by
        locked.revoked_reason = (reason or "revoked")[:200]
        locked.save(update_fields=["revoked_at", "revoked_by", "revoked_reason"])
    return True


def standing_live(*, now: datetime | None = None) -> list[StandingApproval]:
    now = now or timezone.now()
    return list(
        StandingApproval.objects.filter(revoked_at__isnull=True, until__gt=now)
        .select_related("agent", "tool", "granted_by")
        .order_by("until")
    )
