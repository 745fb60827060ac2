"""Calls whose process died mid-run are sealed as interrupted: never left running, never re-run."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from brainframe.jobs import job_run
from brainframe.models import Agent, ApprovalRequest, Tool, ToolCall
from broker.audit.record import record_decision, record_outcome
from broker.audit.verify import verify_chain
from broker.pipeline.context import CallRequest, Outcome, Verdict
from broker.services.calls import prepare
from broker.services.execution import INTERRUPTED, calls_interrupted_seal
from tests import factories as f

READ = {"date_from": "2026-03-02", "date_to": "2026-03-02"}


def _started_call(seeded: None) -> ToolCall:
    """A decision to execute, recorded, whose process then died before running the handler."""
    agent = Agent.objects.get(agent_id="henry")
    ctx = prepare(
        agent=agent,
        request=CallRequest(tool_id="roster.shift.read", arguments=READ, reason="check"),
    )
    call = record_decision(ctx, Verdict(Outcome.EXECUTE, "auto")).call
    assert call.outcome == ToolCall.Outcome.PENDING
    return call


def test_a_call_left_running_is_sealed_once_its_time_is_up(seeded: None) -> None:
    call = _started_call(seeded)
    assert calls_interrupted_seal() == []  # still within its time: it may be running
    later = timezone.now() + timedelta(minutes=5)
    assert calls_interrupted_seal(now=later) == [str(call.pk)]
    call.refresh_from_db()
    assert call.outcome == "failed" and call.error == INTERRUPTED
    assert verify_chain("henry") is None  # the seal is hashed like any outcome
    # A late result from the lost process cannot overwrite it, and nothing runs it again.
    assert not record_outcome(call, outcome="succeeded", output={}, error="", duration_ms=1)
    assert calls_interrupted_seal(now=later) == []


def test_the_claim_of_an_approved_call_marks_its_start(seeded: None) -> None:
    reviewer = f.UserFactory(username="rita")
    from django.contrib.auth.models import Group

    reviewer.groups.add(Group.objects.get(name="reviewers"))
    Tool.objects.filter(tool_id="comms.notification.push").update(
        execution_mode="review", handler_config={"callable": "nowhere.registered", "timeout_s": 600}
    )
    agent = Agent.objects.get(agent_id="henry")
    ctx = prepare(
        agent=agent,
        request=CallRequest(
            tool_id="comms.notification.push",
            arguments={"staff_ids": ["ST-1"], "message": "hi"},
            reason="tell staff",
        ),
    )
    recorded = record_decision(
        ctx, Verdict(Outcome.PENDING, "review", approval_kind="pre_execution")
    )
    approval = recorded.approval
    assert approval is not None
    # Claimed (as a worker would), then the worker is killed before it reports back.
    ApprovalRequest.objects.filter(pk=approval.pk).update(status="approved")
    ToolCall.objects.filter(pk=recorded.call.pk, outcome="not_run").update(
        outcome="pending", executed_at=timezone.now()
    )
    # Its handler may take up to 600 s: ten minutes in, it is still given the benefit of doubt.
    assert calls_interrupted_seal(now=timezone.now() + timedelta(minutes=10)) == []
    assert calls_interrupted_seal(now=timezone.now() + timedelta(minutes=13)) == [
        str(recorded.call.pk)
    ]


def test_the_minute_job_seals_them(seeded: None) -> None:
    call = _started_call(seeded)
    ToolCall.objects.filter(pk=call.pk).update(executed_at=timezone.now() - timedelta(hours=1))
    result = job_run(name="expire_approvals")
    assert result["interrupted"] == [str(call.pk)]
    assert ToolCall.objects.get(pk=call.pk).outcome == "failed"


pytestmark = pytest.mark.django_db
