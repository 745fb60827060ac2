"""Less approval fatigue, still bound to exact arguments: batches decided in one action (each
member still its own decision, executed exactly once), standing approvals used and revoked, and
digest e-mails."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.db import connection
from django.test import Client
from django.utils import timezone

from brainframe.models import (
    Agent,
    ApprovalRequest,
    OriginRegistry,
    ReviewerPreference,
    StandingApproval,
    ToolCall,
    ValidationPolicy,
)
from brainframe.services.registry.policies import validation_policy_save
from brainframe.services.seed import seed_brainframe
from broker.audit.hashing import arguments_hash
from broker.pipeline.context import CallRequest
from broker.services.approvals import (
    ApprovalError,
    approval_approve_standing,
    approval_decide,
)
from broker.services.batches import approvals_decide_batch
from broker.services.calls import tool_call_submit
from broker.services.notifications import digests_send
from tests import factories as f


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    seed_brainframe()
    people = f.reviewers()
    tool = f.ToolFactory(
        tool_id="test.fleet.book",
        risk_level="write",
        execution_mode="review",
        validation_mode="intercept",
        monitoring_level=0,
        agent_access=["henry"],
        handler_config={"callable": "tests.echo"},
        input_schema={
            "type": "object",
            "required": ["vehicle_id", "date"],
            "additionalProperties": False,
            "properties": {"vehicle_id": {"type": "string"}, "date": {"type": "string"}},
        },
    )
    return {
        **people,
        "tool": tool,
        "henry": Agent.objects.get(agent_id="henry"),
        "origin": f.OriginFactory(),  # the one chain the fast approvals belong to
    }


def _submit(world: dict[str, Any], vehicle: str, date: str) -> Any:
    return tool_call_submit(
        agent=world["henry"],
        request=CallRequest(
            tool_id="test.fleet.book",
            arguments={"vehicle_id": vehicle, "date": date},
            reason="book the van for the outing",
        ),
    )


def _pending(world: dict[str, Any], vehicle: str = "VAN-1", date: str = "2026-12-01") -> Any:
    answer = _submit(world, vehicle, date)
    assert answer.status == 202, answer.body
    return ApprovalRequest.objects.get(pk=answer.body["approval_id"])


def _pending_fast(
    world: dict[str, Any], date: str, origin: OriginRegistry | None = None
) -> ApprovalRequest:
    """A pending approval and its call written directly (the race is in deciding them), in the
    world's one chain unless ``origin`` names another."""
    arguments = {"vehicle_id": "VAN-1", "date": date}
    call = f.ToolCallFactory(
        agent=world["henry"],
        tool=world["tool"],
        input=arguments,
        decision="pending_approval",
        outcome="not_run",
        r_tag=f.ReasonLogFactory(o_tag=origin or world["origin"], agent=world["henry"]),
    )
    return f.ApprovalRequestFactory(
        agent=world["henry"],
        tool=world["tool"],
        tool_call=call,
        r_tag=call.r_tag,
        arguments=arguments,
        arguments_hash=arguments_hash(arguments),
    )


@pytest.mark.django_db(transaction=True)
def test_a_batch_of_20_double_clicked_runs_each_call_exactly_once(
    world: dict[str, Any], executed: list[dict[str, Any]]
) -> None:
    approvals = [_pending_fast(world, f"2026-12-{d:02d}") for d in range(1, 21)]
    ids = [a.pk for a in approvals]
    barrier = threading.Barrier(2)

    def click() -> list[Any]:
        barrier.wait()
        try:
            return approvals_decide_batch(
                approval_ids=ids, reviewer=world["alice"], action="approve"
            )
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=2) as pool:
        first, second = [r.result() for r in [pool.submit(click), pool.submit(click)]]
    decided = Counter(item.approval_id for item in [*first, *second] if item.decided)
    assert decided == Counter({str(i): 1 for i in ids})  # each decided by one click only
    others = [item.code for item in [*first, *second] if not item.decided]
    assert others == ["already_decided"] * 20
    assert sorted(e["date"] for e in executed) == [f"2026-12-{d:02d}" for d in range(1, 21)]
    outcomes = ToolCall.objects.filter(approval__in=ids).values_list("outcome", flat=True)
    assert list(outcomes) == ["succeeded"] * 20
    assert set(ApprovalRequest.objects.filter(pk__in=ids).values_list("status", flat=True)) == {
        "approved"
    }


@pytest.mark.django_db
def test_a_member_whose_policy_changed_is_left_pending_with_the_reason(
    world: dict[str, Any], executed: list[dict[str, Any]], django_capture_on_commit_callbacks: Any
) -> None:
    policy = ValidationPolicy.objects.create(name="fleet", tool_patterns=["test.fleet.*"])
    approvals = [_pending_fast(world, f"2026-12-0{d}") for d in range(1, 4)]
    ApprovalRequest.objects.filter(pk=approvals[1].pk).update(vpol=policy, vpol_version=1)
    policy.priority += 1
    validation_policy_save(policy=policy, is_new=False)
    with django_capture_on_commit_callbacks(execute=True):
        results = approvals_decide_batch(
            approval_ids=[a.pk for a in approvals], reviewer=world["bob"], action="approve"
        )
    assert [r.decided for r in results] == [True, False, True]
    assert results[1].code == "policy_changed" and "v1 → v2" in results[1].detail
    assert ApprovalRequest.objects.get(pk=approvals[1].pk).status == "pending"
    assert sorted(e["date"] for e in executed) == ["2026-12-01", "2026-12-03"]
    with pytest.raises(ApprovalError) as no_reason:
        approvals_decide_batch(
            approval_ids=[approvals[1].pk], reviewer=world["bob"], action="reject"
        )
    assert no_reason.value.code == "reason_required"


@pytest.mark.django_db
def test_the_board_groups_similar_approvals_and_decides_the_ticked(
    world: dict[str, Any], executed: list[dict[str, Any]], client: Client
) -> None:
    batch = [_pending(world, "VAN-1", f"2026-12-0{d}") for d in range(1, 4)]
    single = _pending(world, "VAN-2", "2026-12-09")  # same keys: shown in the batch too
    client.force_login(world["alice"])
    # Each call started its own chain: no batch, unless the reviewer widens them.
    assert 'class="batch"' not in client.get("/board/approvals/").content.decode()
    page = client.get("/board/approvals/", {"batches": "wide"}).content.decode()
    assert page.count('class="batch"') == 1
    section = page[page.index('id="batches"') : page.index('id="approval-list"')]
    assert "4 approvals" in section and "vehicle_id" in section and "2026-12-02" in section
    assert "from 4 chains" in section and "book the van for the outing" in section
    assert section.count('class="origin"') == 4  # each row says where it came from
    assert section.count('type="checkbox" name="approval"') == 4
    assert " checked" not in section  # nothing is ticked for the reviewer
    ticked = [a.pk for a in batch]  # the reviewer ticks three of the four
    mixed = client.post(
        "/board/approvals/batch/reject/",
        {"approval": ticked, "reason": "the van is in for service"},
    )
    assert mixed.status_code == 422 and 'data-code="mixed_chains"' in mixed.content.decode()
    response = client.post(
        "/board/approvals/batch/reject/",
        {"approval": ticked, "reason": "the van is in for service", "widened": "1"},
    )
    body = response.content.decode()
    assert response.status_code == 200 and "<strong>3</strong> rejected" in body
    assert body.count('hx-swap-oob="true"') == 3  # each decided card updates
    statuses = {a.pk: ApprovalRequest.objects.get(pk=a.pk).status for a in [*batch, single]}
    assert statuses == {**{a.pk: "rejected" for a in batch}, single.pk: "pending"}
    assert executed == []
    empty = client.post("/board/approvals/batch/approve/", {})
    assert empty.status_code == 422 and 'data-code="empty_batch"' in empty.content.decode()


@pytest.mark.django_db
def test_a_standing_approval_lets_like_calls_run_until_revoked(
    world: dict[str, Any],
    executed: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
    client: Client,
) -> None:
    first = _pending(world, "VAN-1", "2026-12-01")
    with django_capture_on_commit_callbacks(execute=True):
        _, standing = approval_approve_standing(
            approval_id=first.pk, reviewer=world["alice"], hours=4, any_keys=["date"]
        )
    assert executed == [{"vehicle_id": "VAN-1", "date": "2026-12-01"}]
    assert standing.pattern == {"vehicle_id": {"equals": "VAN-1"}, "date": {"any": True}}

    with django_capture_on_commit_callbacks(execute=True):
        answer = _submit(world, "VAN-1", "2026-12-02")  # any date, same van: runs
    assert answer.status == 200 and answer.body["status"] == "executed", answer.body
    call = ToolCall.objects.get(pk=answer.body["call_id"])
    assert call.decision_code == "standing_approval" and str(standing.pk) in call.decision_detail
    assert executed[-1] == {"vehicle_id": "VAN-1", "date": "2026-12-02"}
    assert _submit(world, "VAN-2", "2026-12-02").status == 202  # another van: review

    client.force_login(world["bob"])
    page = client.get("/board/approvals/").content.decode()
    assert f'id="standing-{standing.pk}"' in page
    revoked = client.post(f"/board/standing/{standing.pk}/revoke/")
    assert revoked.status_code == 302
    assert _submit(world, "VAN-1", "2026-12-03").status == 202  # revoked: review again
    standing.refresh_from_db()
    assert standing.uses == 1 and standing.revoked_by == world["bob"]


@pytest.mark.django_db
def test_a_standing_approval_is_refused_when_too_broad_or_for_a_changed_policy(
    world: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    first = _pending(world)
    with pytest.raises(ApprovalError) as broad:
        approval_approve_standing(
            approval_id=first.pk, reviewer=world["alice"], hours=4, any_keys=["vehicle_id", "date"]
        )
    assert broad.value.code == "too_broad"
    with pytest.raises(ApprovalError) as long:
        approval_approve_standing(
            approval_id=first.pk, reviewer=world["alice"], hours=1000, any_keys=["date"]
        )
    assert long.value.code == "invalid_hours"
    assert ApprovalRequest.objects.get(pk=first.pk).status == "pending"  # nothing half-done
    assert not StandingApproval.objects.exists()
    # it lapses by itself
    with django_capture_on_commit_callbacks(execute=True):
        _, standing = approval_approve_standing(
            approval_id=first.pk, reviewer=world["alice"], hours=1, any_keys=["date"]
        )
    StandingApproval.objects.filter(pk=standing.pk).update(
        until=timezone.now() - timedelta(seconds=1)
    )
    assert _submit(world, "VAN-1", "2026-12-05").status == 202


@pytest.mark.django_db
def test_digests_gather_each_item_once_per_reviewer(
    world: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    ReviewerPreference.objects.create(user=world["bob"], digest="15min")
    ReviewerPreference.objects.create(user=world["dana"], digest="hourly")
    mail.outbox.clear()
    approvals = [_pending(world, "VAN-1", f"2026-12-0{d}") for d in range(1, 4)]
    immediate = [m for m in mail.outbox if "Approval needed" in m.subject]
    assert len(immediate) == 3 and all(m.to == ["alice@rabs.test"] for m in immediate)
    with django_capture_on_commit_callbacks(execute=True):  # to the seniors: dana's digest
        approval_decide(
            approval_id=approvals[0].pk, reviewer=world["alice"], action="escalate", reason="?"
        )
    mail.outbox.clear()
    now = timezone.now()
    assert digests_send(now=now) == {"bob@rabs.test": 3, "dana@rabs.test": 3}
    digests = {m.to[0]: m for m in mail.outbox}
    assert len(mail.outbox) == 2 and digests["bob@rabs.test"].subject == (
        "Approvals digest: 3 item(s)"
    )
    lines = [line for line in digests["dana@rabs.test"].body.splitlines() if line.startswith("- ")]
    assert len(lines) == 3  # the escalated item once, with both its events
    assert sum("escalated (created, escalated)" in line for line in lines) == 1
    assert digests_send(now=now + timedelta(minutes=1)) == {}  # nothing new, and not yet due
    _pending(world, "VAN-1", "2026-12-09")
    assert digests_send(now=now + timedelta(minutes=5)) == {}  # due only after 15 minutes
    assert digests_send(now=now + timedelta(minutes=16)) == {"bob@rabs.test": 1}
    assert digests_send(now=now + timedelta(minutes=61)) == {"dana@rabs.test": 1}
    assert len([m for m in mail.outbox if m.subject.startswith("Approvals digest")]) == 4


@pytest.mark.django_db
def test_the_admin_bulk_actions_decide_each_selected_item_once(
    world: dict[str, Any], executed: list[dict[str, Any]], django_capture_on_commit_callbacks: Any
) -> None:
    world["alice"].is_staff = True
    world["alice"].is_superuser = True
    world["alice"].save()
    client = Client()
    client.force_login(world["alice"])
    approvals = [_pending_fast(world, f"2026-12-1{d}") for d in range(3)]
    url = "/admin/brainframe/approvalrequest/"
    chosen = [str(a.pk) for a in approvals[:2]]
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url, {"action": "approve_selected", "_selected_action": chosen})
    with django_capture_on_commit_callbacks(execute=True):  # again: nothing runs twice
        again = client.post(
            url, {"action": "approve_selected", "_selected_action": chosen}, follow=True
        )
    assert "already approved by alice" in again.content.decode()
    assert sorted(e["date"] for e in executed) == ["2026-12-10", "2026-12-11"]
    asked = client.post(url, {"action": "reject_selected", "_selected_action": [approvals[2].pk]})
    assert b"rejection_reason" in asked.content  # asks for the reason first
    client.post(
        url,
        {
            "action": "reject_selected",
            "_selected_action": [approvals[2].pk],
            "confirm": "1",
            "rejection_reason": "van unavailable",
        },
    )
    rejected = ApprovalRequest.objects.get(pk=approvals[2].pk)
    assert rejected.status == "rejected" and rejected.decision_reason == "van unavailable"


@pytest.mark.django_db
def test_the_reviewer_api_decides_batches_and_keeps_standing_approvals(
    world: dict[str, Any], executed: list[dict[str, Any]]
) -> None:
    client = Client()
    client.force_login(world["bob"])
    batch = [_pending_fast(world, f"2026-12-2{d}") for d in range(3)]
    answer = client.post(
        "/api/v1/review/approvals/batch/",
        {"action": "approve", "approval_ids": [str(a.pk) for a in batch]},
        content_type="application/json",
    )
    assert answer.status_code == 200
    assert [r["decided"] for r in answer.json()["results"]] == [True, True, True]
    bad = client.post(
        "/api/v1/review/approvals/batch/",
        {"action": "approve", "approval_ids": []},
        content_type="application/json",
    )
    assert bad.status_code == 400 and bad.json()["field"] == "approval_ids"
    pending = _pending(world, "VAN-7", "2026-12-30")
    stood = client.post(
        f"/api/v1/review/approvals/{pending.pk}/standing/",
        {"hours": 2, "any": ["date"]},
        content_type="application/json",
    )
    assert stood.status_code == 200, stood.json()
    standing_id = stood.json()["standing"]["id"]
    assert stood.json()["approval"]["status"] == "approved"
    assert [s["id"] for s in client.get("/api/v1/review/standing/").json()] == [standing_id]
    too_broad = client.post(
        f"/api/v1/review/approvals/{_pending(world, 'VAN-8').pk}/standing/",
        {"hours": 2, "any": ["date", "vehicle_id"]},
        content_type="application/json",
    )
    assert too_broad.status_code == 400 and too_broad.json()["code"] == "too_broad"
    revoked = client.post(f"/api/v1/review/standing/{standing_id}/revoke/")
    assert revoked.status_code == 200 and revoked.json()["revoked_at"]
    assert client.get("/api/v1/review/standing/").json() == []
    outsider = Client()
    outsider.force_login(f.UserFactory(username="nobody"))
    assert outsider.get("/api/v1/review/standing/").status_code == 403


@pytest.mark.django_db
def test_a_reviewer_chooses_a_digest_on_the_board(world: dict[str, Any]) -> None:
    client = Client()
    client.force_login(world["bob"])
    page = client.get("/board/approvals/").content.decode()
    assert 'id="digest"' in page and '<option value="immediate" selected>' in page
    saved = client.post("/board/preferences/digest/", {"digest": "hourly"})
    assert saved.status_code == 302
    assert ReviewerPreference.objects.get(user=world["bob"]).digest == "hourly"
    bad = client.post("/board/preferences/digest/", {"digest": "weekly"})
    assert bad.status_code == 400 and bad.json()["field"] == "digest"


@pytest.mark.django_db
def test_a_batch_never_mixes_chains_unless_widened(
    world: dict[str, Any], executed: list[dict[str, Any]], django_capture_on_commit_callbacks: Any
) -> None:
    """Whoever asks (the board, the admin, the reviewer API): calls of two chains are decided
    together only when the reviewer says so; otherwise nothing is decided."""
    ours = [_pending_fast(world, f"2026-11-0{d}") for d in (1, 2)]
    theirs = _pending_fast(world, "2026-11-09", origin=f.OriginFactory())
    ids = [a.pk for a in [*ours, theirs]]
    with pytest.raises(ApprovalError) as refused:
        approvals_decide_batch(approval_ids=ids, reviewer=world["alice"], action="approve")
    assert refused.value.code == "mixed_chains" and "2 different chains" in refused.value.detail
    assert refused.value.errors[0]["path"] == "approval_ids"
    assert set(ApprovalRequest.objects.filter(pk__in=ids).values_list("status", flat=True)) == {
        "pending"
    }
    api = Client()
    api.force_login(world["bob"])
    answer = api.post(
        "/api/v1/review/approvals/batch/",
        {"action": "approve", "approval_ids": [str(i) for i in ids]},
        content_type="application/json",
    )
    assert answer.status_code == 400 and answer.json()["code"] == "mixed_chains"
    world["alice"].is_staff = world["alice"].is_superuser = True
    world["alice"].save()
    admin = Client()
    admin.force_login(world["alice"])
    url = "/admin/brainframe/approvalrequest/"
    said = admin.post(
        url, {"action": "approve_selected", "_selected_action": [str(i) for i in ids]}, follow=True
    )
    assert "Nothing was approved" in said.content.decode() and executed == []
    with django_capture_on_commit_callbacks(execute=True):
        widened = api.post(
            "/api/v1/review/approvals/batch/",
            {"action": "approve", "approval_ids": [str(i) for i in ids], "across_chains": True},
            content_type="application/json",
        )
    assert [r["decided"] for r in widened.json()["results"]] == [True, True, True]
    assert sorted(e["date"] for e in executed) == ["2026-11-01", "2026-11-02", "2026-11-09"]
