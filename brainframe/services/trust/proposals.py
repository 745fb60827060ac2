"""Proposed rules (seed 002's flywheel; docs/access.md, "Proposed rules"): the nightly job
finds argument patterns that reviewers keep rejecting, or that the broker keeps refusing, and
proposes a V-Pol rule for each; staff try it (what-if on the board) and accept or dismiss it.

A pattern is one tool and one scalar argument value, seen in at least
``RABS_RULE_PROPOSAL_MIN`` (default 5) rejected approvals (→ a ``review`` rule) or refused calls
(→ a ``deny`` rule) in the last 30 days. A pattern proposed once (open, accepted or dismissed)
is not proposed again.
"""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import date, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from brainframe.models import ApprovalRequest, RuleProposal, Tool, ToolCall, ValidationPolicy
from brainframe.services.registry.policies import governing_policy, validation_policy_save

WINDOW_DAYS = 30


class ProposalError(Exception):
    def __init__(self, code: str, detail: str, *, status: int = 400) -> None:
        super().__init__(detail)
        self.code, self.detail, self.status = code, detail, status


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) and (
        not isinstance(value, str) or len(value) <= 200
    )


def _patterns(
    calls: list[tuple[str, str, dict[str, Any]]],
) -> dict[tuple[str, str, Any], list[str]]:
    seen: dict[tuple[str, str, Any], list[str]] = defaultdict(list)
    for call_id, tool_id, arguments in calls:
        for name, value in (arguments or {}).items():
            if _scalar(value):
                seen[(tool_id, name, value)].append(call_id)
    return seen


def proposed_rule(
    tool_id: str, argument: str, value: Any, action: str, count: int
) -> dict[str, Any]:
    slug = re.sub(r"[^a-z0-9]+", "-", f"{argument}-{value}".lower()).strip("-")[:40]
    what = "rejected by reviewers" if action == "review" else "refused"
    return {
        "id": f"proposed-{slug}",
        "when": {
            "all": [
                {"field": "tool.tool_id", "op": "eq", "value": tool_id},
                {"field": f"arguments.{argument}", "op": "eq", "value": value},
            ]
        },
        "action": action,
        "reason": f"{count} such calls were {what} in {WINDOW_DAYS} days (proposed rule)",
    }


def rules_propose(day: date) -> list[RuleProposal]:
    """The nightly job: a proposal for each new recurring pattern (idempotent)."""
    since = timezone.now() - timedelta(days=WINDOW_DAYS)
    least = settings.RABS_RULE_PROPOSAL_MIN
    rejected = [
        (str(a.tool_call_id), a.tool_id, a.arguments)
        for a in ApprovalRequest.objects.filter(
            status=ApprovalRequest.Status.REJECTED, decided_at__gte=since
        ).only("tool_call_id", "tool_id", "arguments")
    ]
    refused = [
        (str(c.pk), c.requested_tool_id, c.input)
        for c in ToolCall.objects.filter(
            decision=ToolCall.Decision.DENIED, timestamp__gte=since
        ).only("id", "requested_tool_id", "input")
    ]
    made = []
    for action, calls in (("review", rejected), ("deny", refused)):
        for (tool_id, argument, value), ids in _patterns(calls).items():
            if len(ids) < least or not Tool.objects.filter(pk=tool_id).exists():
                continue
            proposal, created = RuleProposal.objects.get_or_create(
                tool_id=tool_id,
                argument=argument,
                value=value,
                action=action,
                defaults={
                    "rule": proposed_rule(tool_id, argument, value, action, len(ids)),
                    "evidence": ids[:50],
                    "count": len(ids),
                },
            )
            if created:
                made.append(proposal)
    return made


def proposal_target(proposal: RuleProposal) -> ValidationPolicy | None:
    """The V-Pol the rule would join: the one that governs its tool, as the broker picks it
    (None: none does, and accepting makes one for the tool)."""
    tool = Tool.objects.filter(pk=proposal.tool_id).first()
    if tool is None:
        return None
    return governing_policy(tool, list(ValidationPolicy.objects.filter(active=True)))


def _new_policy_name(proposal: RuleProposal) -> str:
    return re.sub(r"[^a-z0-9_]+", "_", f"proposed_{proposal.tool_id}")[:80]


def proposal_draft(proposal: RuleProposal) -> tuple[str, bool, dict[str, Any]]:
    """(the V-Pol's name, whether it is a new one, its draft with the rule first): what the
    what-if replays and accepting saves."""
    target = proposal_target(proposal)
    if target is None:
        return (
            _new_policy_name(proposal),
            True,
            {
                "rules": [proposal.rule],
                "tool_patterns": [proposal.tool_id],
            },
        )
    return target.name, False, {"rules": [proposal.rule, *target.rules]}


def proposal_decide(*, proposal_id: Any, by: Any, accept: bool) -> RuleProposal:
    with transaction.atomic():
        proposal = RuleProposal.objects.select_for_update().filter(pk=proposal_id).first()
        if proposal is None:
            raise ProposalError("unknown_proposal", "no such proposal", status=404)
        if proposal.status != RuleProposal.Status.OPEN:
            raise ProposalError(
                "already_decided", f"this proposal is {proposal.status}", status=409
            )
        if accept:
            target = proposal_target(proposal)
            if target is None:
                target = ValidationPolicy(
                    name=_new_policy_name(proposal),
                    tool_patterns=[proposal.tool_id],
                    description="Made by accepting a proposed rule.",
                )
                is_new = True
            else:
                if target.council_required:
                    raise ProposalError(
                        "council_required",
                        f"{target.name} changes by council vote: propose the rule there",
                        status=409,
                    )
                is_new = False
            target.rules = [proposal.rule, *target.rules]
            validation_policy_save(policy=target, is_new=is_new)
            proposal.vpol = target.name
        proposal.status = RuleProposal.Status.ACCEPTED if accept else RuleProposal.Status.DISMISSED
        proposal.decided_by, proposal.decided_at = by, timezone.now()
        proposal.save()
    return proposal
