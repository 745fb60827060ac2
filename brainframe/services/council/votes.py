"""The council (seed 001 Governor): constitutional changes are voted, not clicked.

A proposal names a change only the council may make (``CouncilProposal.Kind``), is checked when
it opens and again when it is applied, and records who may vote (the members seated at that
moment) and how many votes it needs: ``yes_needed`` = ceil(RABS_COUNCIL_THRESHOLD × members)
yes votes pass it, and it counts only if ``quorum`` = ceil(RABS_COUNCIL_QUORUM × members) votes
(of any choice) were cast. It closes as soon as the outcome is certain:

- passed: the yes votes reach ``yes_needed`` before the deadline; the change is applied at once,
  in the same transaction as the deciding vote, through the same services and ratchet rules as
  an admin edit (a change that no longer applies — the rule was strengthened meanwhile — closes
  it ``failed`` with the reason);
- rejected: so many no/abstain votes that ``yes_needed`` can no longer be reached, or the
  deadline passed with the quorum met but too few yes votes;
- expired: the deadline passed before the quorum was reached.

Votes are final, append-only and hash-chained per proposal (``council_votes_verify``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.utils import timezone

from brainframe.events import CouncilChanged, emit
from brainframe.models import (
    CouncilMember,
    CouncilProposal,
    CouncilVote,
)
from brainframe.services.council.changes import (
    CouncilError,
    change_apply,
    check_seatable,
    proposal_check,
    what_if,
)

log = logging.getLogger(__name__)

Kind = CouncilProposal.Kind
Status = CouncilProposal.Status
GENESIS = "0" * 64

# ---------------------------------------------------------------- membership


def council_member_ids() -> list[int]:
    return list(CouncilMember.objects.order_by("user_id").values_list("user_id", flat=True))


def council_seated() -> bool:
    """Whether the council exists (has members). Until it does, superusers make constitutional
    changes directly: that is how a new installation seats its first members."""
    return CouncilMember.objects.exists()


def is_member(user: Any) -> bool:
    return bool(getattr(user, "pk", None)) and CouncilMember.objects.filter(user=user).exists()


def needs_council(user: Any) -> bool:
    """Whether ``user``'s constitutional change must go to the council (always, once seated;
    before that, for everyone but superusers, who cannot be outvoted by nobody)."""
    return council_seated() or not getattr(user, "is_superuser", False)


def council_seat_first(*, users: list[Any]) -> list[CouncilMember]:
    """Seat the first members of an empty council (``manage.py council seat``)."""
    with transaction.atomic():
        if CouncilMember.objects.select_for_update().exists():
            raise CouncilError(
                "council_seated", "the council has members: seats change by proposal only"
            )
        for user in users:
            check_seatable(user, seated=0, extra=len(users))
        return [CouncilMember.objects.create(user=user) for user in users]


# ---------------------------------------------------------------- proposals and votes


@dataclass(frozen=True)
class Tally:
    yes: int
    no: int
    abstain: int
    members: int
    yes_needed: int
    quorum: int
    voted_ids: frozenset[int] = field(default_factory=frozenset)

    @property
    def cast(self) -> int:
        return self.yes + self.no + self.abstain

    @property
    def passed(self) -> bool:
        return self.yes >= self.yes_needed and self.cast >= self.quorum

    @property
    def cannot_pass(self) -> bool:
        return self.yes + (self.members - self.cast) < self.yes_needed


def tally(proposal: CouncilProposal) -> Tally:
    counts = {"yes": 0, "no": 0, "abstain": 0}
    voted = set()
    for choice, member in proposal.votes.values_list("choice", "member_id"):
        counts[choice] += 1
        voted.add(member)
    return Tally(
        yes=counts["yes"],
        no=counts["no"],
        abstain=counts["abstain"],
        members=len(proposal.electorate),
        yes_needed=proposal.yes_needed,
        quorum=proposal.quorum,
        voted_ids=frozenset(voted),
    )


def proposal_open(
    *,
    kind: str,
    target: str,
    change: dict[str, Any],
    title: str,
    by: AbstractBaseUser,
    rationale: str = "",
    hours: float | None = None,
) -> CouncilProposal:
    """Open a proposal for the council's vote. Raises CouncilError for anything it cannot be."""
    if not getattr(by, "is_staff", False):
        raise CouncilError("not_staff", "only staff open proposals", status=403)
    if not title.strip():
        raise CouncilError("required", "a proposal needs a title", field="title")
    hours = settings.RABS_COUNCIL_VOTE_HOURS if hours is None else hours
    if not 0 < hours <= 24 * 30:
        raise CouncilError("invalid_hours", "the vote lasts 0–720 hours", field="hours")
    checked = proposal_check(kind, target, change)
    with transaction.atomic():
        members = list(
            CouncilMember.objects.select_for_update()
            .order_by("user_id")
            .values_list("user_id", flat=True)
        )
        if not members:
            raise CouncilError(
                "no_council",
                "the council has no members yet: seat them first (manage.py council seat USER …)",
                status=409,
            )
        count = len(members)
        proposal = CouncilProposal.objects.create(
            kind=kind,
            target=target,
            change=checked,
            title=title.strip()[:200],
            rationale=rationale,
            proposed_by=by,  # type: ignore[misc]
            electorate=members,
            yes_needed=max(1, math.ceil(settings.RABS_COUNCIL_THRESHOLD * count - 1e-9)),
            quorum=max(1, math.ceil(settings.RABS_COUNCIL_QUORUM * count - 1e-9)),
            deadline=timezone.now() + timedelta(hours=hours),
            what_if=what_if(kind, target, checked),
        )
        transaction.on_commit(lambda: _notify_members(proposal.pk, "opened"))
    return proposal


def _vote_hash(prev: str, seq: int, content: dict[str, Any]) -> str:
    body = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{prev}:{seq}:{body}".encode()).hexdigest()


def _vote_content(vote: CouncilVote) -> dict[str, Any]:
    return {
        "proposal": str(vote.proposal_id),
        "member": vote.member_id,
        "choice": vote.choice,
        "comment": vote.comment,
        "cast_at": vote.cast_at.isoformat(),
    }


def proposal_vote(
    *, proposal_id: Any, member: AbstractBaseUser, choice: str, comment: str = ""
) -> CouncilProposal:
    """Cast ``member``'s vote; closes (and applies) the proposal when the outcome is certain."""
    if choice not in CouncilVote.Choice.values:
        raise CouncilError("invalid_choice", "vote yes, no or abstain", field="choice")
    now = timezone.now()
    with transaction.atomic():
        proposal = CouncilProposal.objects.select_for_update().get(pk=proposal_id)
        if proposal.status != Status.OPEN:
            raise CouncilError(
                "closed", f"the proposal is {proposal.get_status_display().lower()}", status=409
            )
        late = proposal.deadline <= now
        if late:  # closed now (committed), then refused
            _close_due(proposal, now)
    if late:
        raise CouncilError("closed", "the vote's deadline has passed", status=409)
    with transaction.atomic():
        proposal = CouncilProposal.objects.select_for_update().get(pk=proposal_id)
        if proposal.status != Status.OPEN:
            raise CouncilError(
                "closed", f"the proposal is {proposal.get_status_display().lower()}", status=409
            )
        if member.pk not in proposal.electorate:
            raise CouncilError(
                "not_a_member", "only members seated when it opened vote on it", status=403
            )
        last = proposal.votes.order_by("-seq").values_list("seq", "row_hash").first()
        seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS)
        vote = CouncilVote(
            proposal=proposal,
            member=member,  # type: ignore[misc]
            choice=choice,
            comment=comment[:4000],
            cast_at=now,
            seq=seq,
            prev_hash=prev,
        )
        vote.row_hash = _vote_hash(prev, seq, _vote_content(vote))
        try:
            with transaction.atomic():
                vote.save()
        except IntegrityError:
            raise CouncilError(
                "already_voted", "you have voted on this proposal", status=409
            ) from None
        result = tally(proposal)
        if result.passed:
            _apply(proposal, now)
        elif result.cannot_pass:
            _close(
                proposal,
                Status.REJECTED,
                now,
                f"{result.yes} yes of {result.members}: {result.yes_needed} needed",
            )
        transaction.on_commit(lambda: _notify_members(proposal.pk, "vote"))
    return proposal


def _close(proposal: CouncilProposal, status: str, now: datetime, outcome: str) -> None:
    proposal.status, proposal.closed_at, proposal.outcome = status, now, outcome
    proposal.save(update_fields=["status", "closed_at", "outcome"])
    if status != Status.OPEN:
        transaction.on_commit(lambda: _notify_members(proposal.pk, "closed"))


def _close_due(proposal: CouncilProposal, now: datetime) -> None:
    result = tally(proposal)
    if result.cast < result.quorum:
        _close(
            proposal,
            Status.EXPIRED,
            now,
            f"{result.cast} of {result.members} voted by the deadline: {result.quorum} needed",
        )
    else:
        _close(
            proposal,
            Status.REJECTED,
            now,
            f"{result.yes} yes of {result.members} by the deadline: {result.yes_needed} needed",
        )


def proposals_close_due(*, now: datetime | None = None) -> list[str]:
    """Close every open proposal whose deadline passed (the minute job). Safe to run twice."""
    now = now or timezone.now()
    closed = []
    for pk in CouncilProposal.objects.filter(status=Status.OPEN, deadline__lte=now).values_list(
        "pk", flat=True
    ):
        with transaction.atomic():
            proposal = CouncilProposal.objects.select_for_update().get(pk=pk)
            if proposal.status == Status.OPEN:
                _close_due(proposal, now)
                closed.append(str(pk))
    return closed


def _apply(proposal: CouncilProposal, now: datetime) -> None:
    """Apply a passed proposal (inside the deciding vote's transaction). A change that no longer
    holds closes it ``failed`` with the reason; the votes stand either way."""
    try:
        with transaction.atomic():
            checked = proposal_check(proposal.kind, proposal.target, proposal.change)
            outcome = change_apply(proposal, checked)
    except CouncilError as exc:
        _close(proposal, Status.FAILED, now, f"{exc.code}: {exc.detail}")
        return
    _close(proposal, Status.PASSED, now, outcome)


# ---------------------------------------------------------------- audit and notifications


def council_votes_verify() -> list[str]:
    """Problems in the votes' hash chains (empty when every chain holds)."""
    problems: list[str] = []
    prev: dict[Any, tuple[int, str]] = {}
    for vote in CouncilVote.objects.order_by("proposal_id", "seq").iterator():
        seq, last = prev.get(vote.proposal_id, (0, GENESIS))
        if vote.seq != seq + 1 or vote.prev_hash != last:
            problems.append(f"council vote {vote.pk}: chain broken before seq {vote.seq}")
        if vote.row_hash != _vote_hash(vote.prev_hash, vote.seq, _vote_content(vote)):
            problems.append(f"council vote {vote.pk}: row hash does not match its content")
        prev[vote.proposal_id] = (vote.seq, vote.row_hash)
    return problems


def _notify_members(proposal_id: Any, what: str) -> None:
    """Tell the council (board event always; e-mail on opening and closing)."""
    proposal = CouncilProposal.objects.filter(pk=proposal_id).first()
    if proposal is None:
        return
    try:
        emit(CouncilChanged.of(proposal, tally(proposal)))
    except Exception:
        log.warning("could not publish the council event for %s", proposal_id, exc_info=True)
    if what == "vote":
        return
    users = get_user_model().objects.filter(pk__in=proposal.electorate, is_active=True)
    emails = sorted({u.email for u in users if u.email})
    if not emails:
        return
    link = f"{settings.RABS_PUBLIC_URL.rstrip('/')}/board/council/#proposal-{proposal.pk}"
    if what == "opened":
        subject = f"Council vote: {proposal.title}"
        body = (
            f"{proposal.get_kind_display()} — {proposal.target}\n\n{proposal.rationale}\n\n"
            f"Vote before {timezone.localtime(proposal.deadline):%Y-%m-%d %H:%M %Z}: "
            f"{proposal.yes_needed} of {len(proposal.electorate)} yes votes pass it.\n\n{link}\n"
        )
    else:
        subject = f"Council: {proposal.title} — {proposal.get_status_display().lower()}"
        body = f"{proposal.outcome}\n\n{link}\n"
    try:
        send_mail(subject, body, settings.RABS_NOTIFY_FROM_EMAIL, emails)
    except Exception:
        log.warning("could not e-mail the council about %s", proposal_id, exc_info=True)
