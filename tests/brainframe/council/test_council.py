"""The council: proposals pass, fail and expire by the votes of the members seated when they
opened; passed ones are applied through the same rules as an admin edit; the admin cannot go
around it; every vote is chained."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from brainframe.models import (
    ConstitutionRule,
    CouncilMember,
    CouncilProposal,
    CouncilVote,
    PrimeDirective,
    ToolCall,
    ValidationPolicy,
)
from brainframe.models.append_only import AppendOnlyError
from brainframe.services.council.votes import (
    CouncilError,
    council_seat_first,
    council_votes_verify,
    proposal_open,
    proposal_vote,
    proposals_close_due,
)
from broker.pipeline.context import CallRequest
from broker.services.calls import tool_call_submit
from tests import factories as f

NEW_RULE = {
    "title": "No bulk exports",
    "text": "Agents do not export participant data in bulk.",
    "enforcement": "block",
    "predicates": [
        {
            "id": "bulk-export",
            "action": "deny",
            "reason": "bulk exports are not allowed",
            "when": {"field": "context.text", "op": "contains", "value": "EXPORT ALL"},
        }
    ],
}


@pytest.fixture
def council(seeded: None) -> list[Any]:
    users = [
        get_user_model().objects.create_user(
            f"m{i}", email=f"m{i}@rabs.test", is_staff=True, password="pw"
        )
        for i in range(1, 6)
    ]
    council_seat_first(users=users)
    return users


def _open(by: Any, **kwargs: Any) -> CouncilProposal:
    arguments: dict[str, Any] = {
        "kind": "constitution_add",
        "target": "NO_BULK_EXPORT",
        "change": NEW_RULE,
        "title": "Forbid bulk exports",
        "hours": 24,
    }
    arguments.update(kwargs)
    return proposal_open(by=by, **arguments)


def _vote(proposal: CouncilProposal, member: Any, choice: str) -> CouncilProposal:
    return proposal_vote(proposal_id=proposal.pk, member=member, choice=choice, comment=choice)


@pytest.mark.django_db
def test_a_passed_proposal_is_applied_and_then_decides_calls(
    council: list[Any], henry: Any, django_capture_on_commit_callbacks: Any
) -> None:
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        proposal = _open(council[0])
    assert proposal.yes_needed == 3 and proposal.quorum == 3  # 60 % of 5
    assert "Council vote" in mail.outbox[0].subject and len(mail.outbox[0].to) == 5
    _vote(proposal, council[0], "yes")
    _vote(proposal, council[1], "abstain")
    proposal = _vote(proposal, council[2], "yes")
    assert proposal.status == "open"
    assert not ConstitutionRule.objects.filter(pk="NO_BULK_EXPORT").exists()
    proposal = _vote(proposal, council[3], "yes")
    assert proposal.status == "passed", proposal.outcome
    rule = ConstitutionRule.objects.get(pk="NO_BULK_EXPORT")
    assert rule.enforcement == "block" and rule.title == "No bulk exports"
    # the broker decides with it at once
    agent = f.AgentFactory(agent_id="exporter")
    f.ToolFactory(tool_id="test.notes.read", agent_access=["exporter"], execution_mode="auto")
    answer = tool_call_submit(
        agent=agent,
        request=CallRequest(
            tool_id="test.notes.read", arguments={"q": "EXPORT ALL please"}, reason="r"
        ),
    )
    call = ToolCall.objects.filter(agent=agent).latest("timestamp")
    assert answer.status == 403 and call.decision_code == "constitution:NO_BULK_EXPORT"
    # the fifth member can no longer vote on a closed proposal
    with pytest.raises(CouncilError) as closed:
        _vote(proposal, council[4], "no")
    assert closed.value.code == "closed"
    assert council_votes_verify() == []


@pytest.mark.django_db
def test_enough_no_votes_reject_it_at_once(council: list[Any]) -> None:
    proposal = _open(council[0])
    _vote(proposal, council[0], "yes")
    _vote(proposal, council[1], "no")
    _vote(proposal, council[2], "no")
    proposal = _vote(proposal, council[3], "no")  # at most 2 yes now: 3 needed
    assert proposal.status == "rejected"
    assert "1 yes of 5: 3 needed" in proposal.outcome
    assert not ConstitutionRule.objects.filter(pk="NO_BULK_EXPORT").exists()


@pytest.mark.django_db
def test_quorum_met_but_too_few_yes_by_the_deadline_fails(council: list[Any]) -> None:
    proposal = _open(council[0])
    _vote(proposal, council[0], "yes")
    _vote(proposal, council[1], "yes")
    _vote(proposal, council[2], "no")  # 3 votes: the quorum; 2 yes of 3 needed, 2 could come
    assert CouncilProposal.objects.get(pk=proposal.pk).status == "open"
    assert proposals_close_due(now=timezone.now()) == []
    closed = proposals_close_due(now=proposal.deadline + timedelta(seconds=1))
    proposal.refresh_from_db()
    assert closed == [str(proposal.pk)] and proposal.status == "rejected"
    assert "2 yes of 5 by the deadline: 3 needed" in proposal.outcome
    assert not ConstitutionRule.objects.filter(pk="NO_BULK_EXPORT").exists()


@pytest.mark.django_db
def test_a_vote_without_quorum_expires(council: list[Any]) -> None:
    proposal = _open(council[0])
    _vote(proposal, council[0], "yes")
    _vote(proposal, council[1], "yes")
    CouncilProposal.objects.filter(pk=proposal.pk).update(
        deadline=timezone.now() - timedelta(minutes=1)
    )
    with pytest.raises(CouncilError) as late:  # a vote after the deadline closes it too
        _vote(proposal, council[2], "yes")
    assert late.value.code == "closed"
    proposal.refresh_from_db()
    assert proposal.status == "expired"
    assert proposal.outcome == "2 of 5 voted by the deadline: 3 needed"
    call_command("run_job", "close_council_votes", stdout=None)  # nothing left to close
    assert not ConstitutionRule.objects.filter(pk="NO_BULK_EXPORT").exists()


@pytest.mark.django_db
def test_who_may_vote_and_how_often(council: list[Any]) -> None:
    outsider = get_user_model().objects.create_user("outsider", is_staff=True)
    proposal = _open(council[0])
    with pytest.raises(CouncilError) as not_member:
        _vote(proposal, outsider, "yes")
    assert not_member.value.code == "not_a_member"
    _vote(proposal, council[1], "no")
    with pytest.raises(CouncilError) as twice:
        _vote(proposal, council[1], "yes")
    assert twice.value.code == "already_voted"
    with pytest.raises(CouncilError) as choice:
        _vote(proposal, council[2], "maybe")
    assert choice.value.field == "choice"
    vote = CouncilVote.objects.get(proposal=proposal)
    with pytest.raises(AppendOnlyError):
        vote.choice = "yes"
        vote.save()
    assert council_votes_verify() == []


@pytest.mark.django_db
def test_bad_proposals_are_refused_naming_the_field(council: list[Any]) -> None:
    with pytest.raises(CouncilError) as weaker:
        _open(
            council[0],
            kind="constitution_strengthen",
            target="LOOPBACK_ONLY",
            change={"enforcement": "flag"},
        )
    assert weaker.value.code == "not_stronger" and weaker.value.field == "change.enforcement"
    broken = {**NEW_RULE, "predicates": [{"id": "x", "action": "deny"}]}
    with pytest.raises(CouncilError) as invalid:
        _open(council[0], change=broken)
    assert invalid.value.field == "change.predicates"
    with pytest.raises(CouncilError) as unknown:
        _open(council[0], kind="directive", target="PRIVACY_NO_PII", change={"colour": "red"})
    assert unknown.value.field == "change.colour"
    assert not CouncilProposal.objects.exists()


@pytest.mark.django_db
def test_seating_a_member_by_proposal_keeps_earlier_electorates(council: list[Any]) -> None:
    newcomer = get_user_model().objects.create_user("newcomer", is_staff=True)
    earlier = _open(council[0])
    seat = proposal_open(
        kind="seat", target="newcomer", change={}, title="Seat newcomer", by=council[0]
    )
    for member in council[:3]:
        seat = _vote(seat, member, "yes")
    assert seat.status == "passed" and CouncilMember.objects.filter(user=newcomer).exists()
    with pytest.raises(CouncilError):
        _vote(earlier, newcomer, "yes")  # seated after it opened
    later = _open(council[0], target="NO_BULK_EXPORT_2")
    assert len(later.electorate) == 6 and later.yes_needed == 4


@pytest.mark.django_db
def test_the_admin_opens_a_proposal_instead_of_changing_the_rules(
    council: list[Any], client: Client
) -> None:
    admin_user = get_user_model().objects.create_superuser("root", "root@rabs.test", "pw")
    client.force_login(admin_user)
    # a new constitution rule
    response = client.post(
        "/admin/brainframe/constitutionrule/add/",
        {
            "code": "NO_BULK_EXPORT",
            "number": 40,
            "title": NEW_RULE["title"],
            "text": NEW_RULE["text"],
            "enforcement": "block",
            "predicates": '[{"id": "bulk", "action": "deny", "when": '
            '{"field": "context.text", "op": "contains", "value": "EXPORT ALL"}}]',
        },
    )
    assert response.status_code == 302
    assert not ConstitutionRule.objects.filter(pk="NO_BULK_EXPORT").exists()
    proposal = CouncilProposal.objects.get(target="NO_BULK_EXPORT")
    assert response["Location"].endswith(f"/councilproposal/{proposal.pk}/change/")
    assert proposal.kind == "constitution_add" and proposal.proposed_by == admin_user
    # strengthening an existing rule
    rule = ConstitutionRule.objects.exclude(enforcement="block").first()
    assert rule is not None
    client.post(f"/admin/brainframe/constitutionrule/{rule.pk}/change/", {"enforcement": "block"})
    rule.refresh_from_db()
    assert rule.enforcement != "block"
    assert CouncilProposal.objects.filter(kind="constitution_strengthen", target=rule.pk).exists()
    # a prime directive's priority
    directive = PrimeDirective.objects.order_by("code").first()
    assert directive is not None
    page = client.get(f"/admin/brainframe/primedirective/{directive.pk}/change/")
    assert page.status_code == 200
    form = {
        "code": directive.code,
        "priority": (directive.priority + 1) % 101,
        "scope": directive.scope,
        "rule_text": directive.rule_text,
        "predicates": __import__("json").dumps(directive.predicates),
        "escalation": directive.escalation,
        "active": "on" if directive.active else "",
    }
    client.post(f"/admin/brainframe/primedirective/{directive.pk}/change/", form)
    before = directive.priority
    directive.refresh_from_db()
    assert directive.priority == before
    assert CouncilProposal.objects.get(kind="directive").change == {"priority": form["priority"]}
    deleting = client.get(f"/admin/brainframe/primedirective/{directive.pk}/delete/")
    assert deleting.status_code == 403
    # a V-Pol marked as needing the council: the rules wait, the description is saved
    policy = ValidationPolicy.objects.create(
        name="council-held", tool_patterns=["roster.*"], council_required=True
    )
    client.post(
        f"/admin/brainframe/validationpolicy/{policy.pk}/change/",
        {
            "name": "council-held",
            "description": "now described",
            "rules": "[]",
            "context_bucket": "",
            "tool_patterns": "roster.*,notes.*",
            "enforcement_mode": "intercept",
            "priority": 50,
            "active": "on",
            "council_required": "on",
        },
    )
    policy.refresh_from_db()
    assert policy.tool_patterns == ["roster.*"] and policy.description == "now described"
    vpol = CouncilProposal.objects.get(kind="vpol")
    assert vpol.change == {"tool_patterns": ["roster.*", "notes.*"]}
    # and once the council passes it, the change is made (version bumped as for an edit)
    for member in council[:3]:
        vpol = _vote(vpol, member, "yes")
    policy.refresh_from_db()
    assert vpol.status == "passed" and policy.tool_patterns == ["roster.*", "notes.*"]
    assert policy.version == 2
    # seats are not edited in the admin once the council sits
    assert client.get("/admin/brainframe/councilmember/add/").status_code == 403


@pytest.mark.django_db
def test_the_board_shows_open_proposals_with_what_if_and_takes_votes(
    council: list[Any], client: Client, henry: Any
) -> None:
    agent = f.AgentFactory(agent_id="exporter")
    f.ToolFactory(tool_id="test.notes.read", agent_access=["exporter"], execution_mode="auto")
    for text in ("EXPORT ALL now", "one note", "EXPORT ALL again"):
        tool_call_submit(
            agent=agent,
            request=CallRequest(tool_id="test.notes.read", arguments={"q": text}, reason="r"),
        )
    proposal = _open(council[0])
    assert proposal.what_if["changed"] == 2 and proposal.what_if["calls"] >= 3
    assert {e["would"] for e in proposal.what_if["examples"]} == {"block"}
    client.force_login(council[1])
    page = client.get("/board/council/").content.decode()
    assert proposal.title in page and "would have been decided differently" in page
    assert f'id="tally-{proposal.pk}"' in page and 'name="choice"' in page
    voted = client.post(
        f"/board/council/{proposal.pk}/vote/", {"choice": "yes", "comment": "agreed"}
    )
    assert voted.status_code == 200
    body = voted.content.decode()
    assert "1 yes" in body and "agreed" in body and 'name="choice"' not in body
    again = client.post(f"/board/council/{proposal.pk}/vote/", {"choice": "no"})
    assert again.status_code == 409 and 'data-code="already_voted"' in again.content.decode()


@pytest.mark.django_db
def test_an_empty_council_is_seated_once_by_command(seeded: None) -> None:
    for name in ("a1", "a2"):
        get_user_model().objects.create_user(name, is_staff=True)
    call_command("council", "seat", "a1", "a2", stdout=None)
    assert CouncilMember.objects.count() == 2
    with pytest.raises(Exception, match="council_seated"):
        call_command("council", "seat", "a1", stdout=None)


@pytest.mark.django_db
def test_verify_audit_finds_a_rewritten_vote(council: list[Any]) -> None:
    from django.db import connection

    proposal = _open(council[0])
    _vote(proposal, council[0], "no")
    _vote(proposal, council[1], "no")
    call_command("verify_audit", stdout=None)  # intact
    with connection.cursor() as cursor:  # what only a database owner could do
        cursor.execute("SET session_replication_role = replica")
        cursor.execute(
            "UPDATE council_votes SET choice = 'yes' WHERE proposal_id = %s AND seq = 1",
            [proposal.pk],
        )
        cursor.execute("SET session_replication_role = DEFAULT")
    assert any("row hash" in p for p in council_votes_verify())
    with pytest.raises(Exception, match="FAILED"):
        call_command("verify_audit", stdout=None, stderr=None)


@pytest.mark.django_db
def test_each_vote_updates_the_tally_on_open_boards(council: list[Any]) -> None:
    from brainframe.events import CouncilChanged, event_from_wire
    from brainframe.services.council.votes import tally
    from dashboard.live.render import render_event

    proposal = _vote(_open(council[0]), council[1], "yes")
    event = CouncilChanged.of(proposal, tally(proposal))
    assert event_from_wire(event.wire()) == event  # travels over the channel layer
    html = render_event(event, council[2])
    assert f'id="tally-{proposal.pk}"' in html and 'hx-swap-oob="true"' in html
    assert "<strong>1 yes</strong>" in html and "3 yes of 5 pass it" in html
