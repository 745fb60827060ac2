"""The approval queue's decisions: approve, reject, modify, escalate, expire (seed 000 §13).

An approval is bound to the exact tool, arguments and policy version it was created for.
Deciding locks the row, so two reviewers (or a double click) cannot both decide; executing an
approved call (``execution.approved_call_execute``) is claimed with a conditional UPDATE on the
call's outcome, so it runs at most once however often the job is retried, and the recovery sweep
here makes sure it runs at least once.

Expiry is a rule of authority, not of housekeeping: an approval past its ``timeout_at`` cannot be
decided whether or not beat has run ``approvals_expire`` yet. Deciding one expires it then and
there (audited as beat's expiry is) and answers ``expired``. Several approvals decided together
are ``batches``'.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction
from django.utils import timezone

from brainframe.choices import ExecutionMode
from brainframe.events import (
    ApprovalDecided,
    ApprovalEscalated,
    ApprovalEvent,
    ApprovalExpired,
    emit,
)
from brainframe.models import (
    ApprovalRequest,
    OriginRegistry,
    StandingApproval,
    ToolCall,
    ValidationPolicy,
)
from brainframe.services.access.grants import (
    GRANT_TOOL,
    may_approve_person_grant,
    person_grant_owners,
)
from brainframe.services.access.standing import StandingRefused, standing_check, standing_grant
from brainframe.services.memory.cards import card_from_decision
from brainframe.services.trust.alignment import alignment_signal

from ..audit.hashing import arguments_hash
from ..audit.record import record_cancelled
from ..pipeline.context import CallContext, CallRequest
from ..pipeline.stages import check_directives, evaluate_vpol, validate_arguments
from ..queue import EXECUTE_APPROVED_CALL, enqueue
from ..registry import registry_snapshot
from .notifications import notify_enqueue

log = logging.getLogger(__name__)

#: An approved call not started this long after the decision is shown as waiting for a worker.
WORKER_WAIT_SECONDS = 5

Status = ApprovalRequest.Status
Kind = ApprovalRequest.Kind
OPEN = (Status.PENDING, Status.ESCALATED)
REVIEWER_GROUPS = (ApprovalRequest.ReviewerGroup.REVIEWERS, ApprovalRequest.ReviewerGroup.SENIOR)


class ApprovalError(Exception):
    """A decision that cannot be made; ``code`` is machine-readable."""

    def __init__(
        self,
        code: str,
        detail: str,
        *,
        status: int = 409,
        errors: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__(detail)
        self.code, self.detail, self.status, self.errors = code, detail, status, errors or []


def reviewer_groups(user: AbstractBaseUser | AnonymousUser) -> set[str]:
    if not user.is_authenticated:
        return set()
    groups = user.groups  # type: ignore[attr-defined]
    return set(groups.filter(name__in=REVIEWER_GROUPS).values_list("name", flat=True))


def can_decide(
    user: AbstractBaseUser | AnonymousUser,
    approval: ApprovalRequest,
    *,
    groups: set[str] | None = None,
) -> bool:
    """Whether ``user`` may decide ``approval``. ``groups``: the user's reviewer groups when the
    caller already read them (a page of cards reads them once)."""
    if groups is None:
        groups = reviewer_groups(user)
    if approval.reviewer_group == ApprovalRequest.ReviewerGroup.SENIOR:
        return ApprovalRequest.ReviewerGroup.SENIOR in groups
    return bool(groups)


def chain_originator_ids(approval: ApprovalRequest) -> set[int]:
    """Users who set this chain in motion: the person the task runs for, and the staff member
    named on a manual origin. They may never approve their own chain."""
    ids: set[int] = set()
    if approval.task_id and approval.task and approval.task.on_behalf_of_id:
        ids.add(approval.task.on_behalf_of_id)
    if approval.r_tag_id:
        origin = OriginRegistry.objects.filter(reasons__id=approval.r_tag_id).first()
        user_id = (origin.metadata or {}).get("user_id") if origin else None
        if isinstance(user_id, int):
            ids.add(user_id)
    return ids


@dataclass(frozen=True)
class Decided:
    approval: ApprovalRequest
    enqueued_execution: bool


def _lock_open(approval_id: Any, user: AbstractBaseUser) -> ApprovalRequest:
    approval = (
        ApprovalRequest.objects.select_for_update(of=("self",))
        .select_related("tool", "agent", "task", "tool_call", "decided_by")
        .get(pk=approval_id)
    )
    if approval.status not in OPEN:
        who = approval.decided_by.get_username() if approval.decided_by else "the system"
        raise ApprovalError("already_decided", f"already {approval.status} by {who}", status=409)
    if not can_decide(user, approval):
        group = approval.get_reviewer_group_display()
        raise ApprovalError("not_a_reviewer", f"only {group} may decide this", status=403)
    if user.pk in chain_originator_ids(approval):
        raise ApprovalError(
            "own_chain", "you started this chain; another reviewer must decide", status=403
        )
    return approval


def _check_binding(approval: ApprovalRequest) -> None:
    """The call is still the one that was reviewed: same arguments, tool live, same policy."""
    if arguments_hash(approval.arguments) != approval.arguments_hash:
        raise ApprovalError("arguments_changed", "the stored arguments no longer match their hash")
    if approval.tool.execution_mode == ExecutionMode.DISABLED:
        raise ApprovalError("tool_disabled", f"{approval.tool_id} was disabled since")
    if approval.vpol_id is not None:
        version = (
            ValidationPolicy.objects.filter(pk=approval.vpol_id)
            .values_list("version", flat=True)
            .first()
        )
        if version != approval.vpol_version:
            raise ApprovalError(
                "policy_changed",
                f"the governing policy changed (v{approval.vpol_version} → v{version}); reject "
                "it and let the agent resubmit under the current policy",
            )


def _check_grant_approver(
    approval: ApprovalRequest, reviewer: AbstractBaseUser, modified: dict[str, Any] | None
) -> None:
    """A grant for a person is approved by someone their ACL policy names as an owner, or by
    staff with the permission for it (docs/access.md, "Temporary grants")."""
    arguments = modified if modified is not None else approval.arguments
    if approval.tool_id != GRANT_TOOL or (arguments or {}).get("kind") != "person":
        return
    call = approval.tool_call
    if call is None:
        return
    person, owners = person_grant_owners(call)
    if person is None:  # no person behind the chain: the grant itself will be refused
        return
    if not may_approve_person_grant(reviewer, call):
        who = " or ".join(owners) if owners else "nobody"
        raise ApprovalError(
            "not_grant_owner",
            f"a grant for a person is approved by the owners their access policy names ({who}) "
            "or by staff with the permission to approve person grants",
            status=403,
        )


def _recheck_arguments(approval: ApprovalRequest, arguments: dict[str, Any]) -> None:
    """Edited arguments go through the schema, directives and V-Pol again before they can run."""
    ctx = CallContext(
        call_id=approval.tool_call_id or approval.id,
        agent=approval.agent,
        request=CallRequest(tool_id=approval.tool_id, arguments=arguments, reason=approval.reason),
        tool=approval.tool,
        task=approval.task,
        vpol=approval.vpol,
    )
    registry = registry_snapshot()
    ctx.directives, ctx.constitution = registry.directives, registry.constitution
    for stage in (validate_arguments, check_directives, evaluate_vpol):
        verdict = stage(ctx)
        if verdict is not None:
            raise ApprovalError(
                verdict.code, verdict.detail, status=400, errors=list(verdict.errors)
            )


def _overdue_message(approval: ApprovalRequest, now: Any) -> str:
    late = max(1, round((now - approval.timeout_at).total_seconds() / 60))
    at = timezone.localtime(approval.timeout_at).strftime("%H:%M")
    minutes = "a minute" if late == 1 else f"{late} minutes"
    return (
        f"this approval expired at {at} ({minutes} ago) without a decision, so it can no longer "
        "be decided; it is now marked expired, the call was not run and the agent is told so"
    )


def _expire_if_overdue(
    approval_id: Any, reviewer: AbstractBaseUser, action: str, *, now: Any
) -> None:
    """An open approval past its timeout at ``now`` is expired, in its own transaction (so
    that it stays expired when the decision is refused), and the decision refused with
    ``expired``. Nothing happens to one that is not open or not overdue."""
    with transaction.atomic():
        approval = (
            ApprovalRequest.objects.select_for_update(of=("self",))
            .filter(pk=approval_id, status__in=OPEN, timeout_at__lte=now)
            .first()
        )
        if approval is None:
            return
        _lock_open(approval_id, reviewer)  # the same refusals first: not theirs to decide
        who = reviewer.get_username()
        _expire(
            [approval.pk],
            now=now,
            why=f"expired without a decision; {who} tried to {action} it after its timeout",
        )
    raise ApprovalError("expired", _overdue_message(approval, now), status=409)


def approval_decide(
    *,
    approval_id: Any,
    reviewer: AbstractBaseUser,
    action: str,
    reason: str = "",
    arguments: dict[str, Any] | None = None,
    lesson: str = "",
) -> Decided:
    """Decide an open approval. ``action``: approve, reject, modify or escalate. ``lesson``
    (with reject or modify): a learning card for the agent, made in the same transaction.
    One past its timeout is expired instead, and the decision refused (``expired``)."""
    if action not in ("approve", "reject", "modify", "escalate"):
        raise ApprovalError("unknown_action", f"unknown action {action!r}", status=400)
    if action == "reject" and not reason.strip():
        raise ApprovalError(
            "reason_required", "a rejection needs a reason the agent will see", status=400
        )
    # The decision's time is taken once: not overdue then, it is decided as of then.
    now = timezone.now()
    _expire_if_overdue(approval_id, reviewer, action, now=now)
    with transaction.atomic():
        approval = _lock_open(approval_id, reviewer)
        pre_execution = approval.kind == Kind.PRE_EXECUTION
        if action == "modify":
            if not pre_execution:
                raise ApprovalError(
                    "not_modifiable", "the call already ran; approve or reject", status=400
                )
            if not isinstance(arguments, dict):
                raise ApprovalError(
                    "invalid_arguments", "modify needs the edited arguments", status=400
                )
            _recheck_arguments(approval, arguments)
        if action in ("approve", "modify") and pre_execution:
            _check_binding(approval)
            _check_grant_approver(approval, reviewer, arguments if action == "modify" else None)

        if action == "escalate":
            if approval.reviewer_group == ApprovalRequest.ReviewerGroup.SENIOR:
                raise ApprovalError("already_at_top", "already with the senior reviewers")
            minutes = (
                approval.tool.approval_timeout_minutes or settings.RABS_APPROVAL_TIMEOUT_MINUTES
            )
            approval.status = Status.ESCALATED
            approval.reviewer_group = ApprovalRequest.ReviewerGroup.SENIOR
            approval.escalation_count += 1
            approval.timeout_at = now + timedelta(minutes=minutes)
            approval.decision_reason = reason
            approval.save(
                update_fields=[
                    "status",
                    "reviewer_group",
                    "escalation_count",
                    "timeout_at",
                    "decision_reason",
                ]
            )
            event: type[ApprovalEvent] = ApprovalEscalated
        else:
            approval.status = {
                "approve": Status.APPROVED,
                "reject": Status.REJECTED,
                "modify": Status.MODIFIED,
            }[action]
            approval.decided_by = reviewer  # type: ignore[assignment]
            approval.decided_at = now
            approval.decision_reason = reason
            approval.modified_arguments = arguments if action == "modify" else None
            approval.save(
                update_fields=[
                    "status",
                    "decided_by",
                    "decided_at",
                    "decision_reason",
                    "modified_arguments",
                ]
            )
            event = ApprovalDecided
            if action == "reject" and pre_execution and approval.tool_call is not None:
                record_cancelled(approval.tool_call, f"rejected: {reason}")
            if lesson.strip() and action in ("reject", "modify") and approval.tool_call:
                card_from_decision(approval=approval, lesson=lesson, user=reviewer)

        runs = action in ("approve", "modify") and pre_execution
        if runs:
            transaction.on_commit(lambda: _enqueue_execution(approval.pk))
        emit(event.of(approval))  # kept with the decision; published once it commits
        transaction.on_commit(lambda: _after_decision(approval.pk, event))
    return Decided(approval=approval, enqueued_execution=runs)


def _enqueue_execution(approval_id: Any) -> None:
    try:
        enqueue(EXECUTE_APPROVED_CALL, str(approval_id))
    except Exception:  # the broker is down: the recovery sweep will enqueue it again
        log.warning("could not enqueue execution of approval %s", approval_id, exc_info=True)


def _after_decision(approval_id: Any, event: type[ApprovalEvent]) -> None:
    approval = ApprovalRequest.objects.get(pk=approval_id)
    alignment_signal(call_id=approval.tool_call_id)
    if event is ApprovalEscalated:
        notify_enqueue(approval_id=approval_id, event="escalated")


def _expire(expired: list[Any], *, now: Any, why: str = "expired without a decision") -> None:
    """Within the caller's transaction, with the rows locked: mark them expired (one
    statement), seal their calls as cancelled, log the expiries; notify once it commits."""
    ApprovalRequest.objects.filter(pk__in=expired).update(
        status=Status.EXPIRED, decided_at=now, decision_reason=why
    )
    for approval in ApprovalRequest.objects.filter(
        pk__in=expired, kind=Kind.PRE_EXECUTION
    ).select_related("tool_call"):
        if approval.tool_call is not None:
            record_cancelled(approval.tool_call, why)
    emit(
        *(
            ApprovalExpired.of(approval)
            for approval in ApprovalRequest.objects.filter(pk__in=expired).order_by("pk")
        )
    )

    def notify() -> None:
        for approval_id in expired:
            notify_enqueue(approval_id=approval_id, event="expired")

    transaction.on_commit(notify)


def approvals_expire(*, now: Any = None) -> list[str]:
    """Mark overdue open approvals expired; cancel their calls; notify (beat, every minute)."""
    now = now or timezone.now()
    with transaction.atomic():
        expired = list(
            ApprovalRequest.objects.select_for_update(skip_locked=True)
            .filter(status__in=OPEN, timeout_at__lte=now)
            .values_list("id", flat=True)
        )
        if not expired:
            return []
        _expire(expired, now=now)
    return [str(i) for i in expired]


def awaiting_worker(approval: ApprovalRequest, call: ToolCall | None, *, now: Any = None) -> bool:
    """Approved (or modified) to run, not started ``WORKER_WAIT_SECONDS`` after the decision:
    no worker has picked it up (none runs, or all are busy)."""
    if (
        call is None
        or approval.kind != Kind.PRE_EXECUTION
        or approval.status not in (Status.APPROVED, Status.MODIFIED)
        or call.outcome != ToolCall.Outcome.NOT_RUN
        or approval.decided_at is None
    ):
        return False
    now = now or timezone.now()
    return (now - approval.decided_at).total_seconds() >= WORKER_WAIT_SECONDS


WAITING_FOR_WORKER = "approved — waiting for a worker"


def approvals_recover(*, now: Any = None, grace: timedelta = timedelta(minutes=1)) -> list[str]:
    """Approved calls whose execution never started (a lost job, a crashed worker before the
    claim): enqueue them again. The claim makes this safe to run any number of times."""
    now = now or timezone.now()
    stuck = ApprovalRequest.objects.filter(
        status__in=(Status.APPROVED, Status.MODIFIED),
        kind=Kind.PRE_EXECUTION,
        decided_at__lte=now - grace,
        tool_call__outcome=ToolCall.Outcome.NOT_RUN,
    ).values_list("id", flat=True)
    ids = [str(i) for i in stuck]
    for approval_id in ids:
        _enqueue_execution(approval_id)
    return ids


def approval_approve_standing(
    *,
    approval_id: Any,
    reviewer: AbstractBaseUser,
    hours: float,
    any_keys: list[str],
    reason: str = "",
) -> tuple[Decided, StandingApproval]:
    """Approve this call and leave a standing approval for calls exactly like it (the same
    agent, tool and argument keys; each value the approved one unless listed in ``any_keys``)
    for ``hours``. Both or neither: one transaction (one past its timeout expires first, on
    its own, and nothing is approved)."""
    _expire_if_overdue(approval_id, reviewer, "approve", now=timezone.now())
    with transaction.atomic():
        approval = ApprovalRequest.objects.select_related("tool_call").get(pk=approval_id)
        try:
            standing_check(approval, hours=hours, any_keys=any_keys)
        except StandingRefused as exc:
            raise ApprovalError(
                exc.code,
                exc.detail,
                status=400,
                errors=[{"path": exc.field, "message": exc.detail}],
            ) from None
        decided = approval_decide(
            approval_id=approval_id, reviewer=reviewer, action="approve", reason=reason
        )
        standing = standing_grant(
            approval=decided.approval, by=reviewer, hours=hours, any_keys=any_keys
        )
    return decided, standing
