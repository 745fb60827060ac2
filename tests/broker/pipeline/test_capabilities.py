"""Capability requests (seed 004): an agent asks for what it lacks with rabs.capability.request;
a reviewer approves (optionally time-boxed) or rejects with a reason the agent reads; every step
is in the audit; time-boxed grants are withdrawn by the minute job."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.utils import timezone

from brainframe.models import (
    ApprovalRequest,
    CapabilityGrant,
    MonitoringLevelChange,
    Tool,
    ToolCall,
)
from brainframe.services.access.grants import grants_expire
from broker.services.approvals import approval_decide
from tests import factories as f
from tests.signing import SignedClient

# Grants are applied by the handler on its own thread and connection: it sees committed rows.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def reviewer(seeded: None) -> Any:
    user = f.UserFactory(username="alice", email="alice@rabs.test")
    user.groups.add(Group.objects.get(name="reviewers"))
    return user


def _ask(henry: SignedClient, reason: str = "I need it for the outing", **arguments: Any) -> Any:
    return henry.post(
        "/api/v1/tool-calls/",
        {"tool_id": "rabs.capability.request", "reason": reason, "arguments": arguments},
    )


def _decide(call_id: str, reviewer: Any, action: str, **extra: Any) -> ApprovalRequest:
    approval = ApprovalRequest.objects.get(tool_call_id=call_id)
    approval_decide(approval_id=approval.pk, reviewer=reviewer, action=action, **extra)
    return approval


def test_every_agent_may_ask_and_a_human_always_decides(henry: SignedClient, reviewer: Any) -> None:
    tool = Tool.objects.get(pk="rabs.capability.request")
    assert tool.agent_access == ["*"] and tool.monitoring_ceiling == 0
    listed = {t["tool_id"] for t in henry.get("/api/v1/tools/").json()}
    assert "rabs.capability.request" in listed
    asked = _ask(henry, kind="tool", tool_id="comms.email.send")
    assert asked.status_code == 202 and asked.json()["status"] == "pending_approval"


def test_an_approved_time_boxed_grant_gives_access_until_it_runs_out(
    henry: SignedClient,
    reviewer: Any,
    django_capture_on_commit_callbacks: Any,
    executed: list[dict[str, Any]],
) -> None:
    f.ToolFactory(
        tool_id="test.reggie.lookup",
        risk_level="read",
        execution_mode="auto",
        agent_access=["reggie"],
        handler_config={"callable": "tests.echo"},
        input_schema={"type": "object"},
        output_schema={},
    )
    refused = henry.post(
        "/api/v1/tool-calls/", {"tool_id": "test.reggie.lookup", "reason": "r", "arguments": {}}
    )
    assert refused.json()["code"] == "not_allowed"
    asked = _ask(henry, kind="tool", tool_id="test.reggie.lookup", hours=2).json()
    with django_capture_on_commit_callbacks(execute=True):
        _decide(asked["call_id"], reviewer, "approve", reason="fine for today")
    done = henry.get(f"/api/v1/tool-calls/{asked['call_id']}/").json()
    assert done["status"] == "executed" and done["outcome"] == "succeeded"
    assert done["result"]["tool_ids"] == ["test.reggie.lookup"] and done["result"]["until"]
    assert "henry" in Tool.objects.get(pk="test.reggie.lookup").agent_access
    allowed = henry.post(
        "/api/v1/tool-calls/", {"tool_id": "test.reggie.lookup", "reason": "r", "arguments": {}}
    )
    assert allowed.status_code == 200
    grant = CapabilityGrant.objects.get(agent_id="henry")
    used = ToolCall.objects.get(pk=allowed.json()["call_id"])
    assert used.decision_detail == f"under grant {grant.pk}"  # the audit names the grant
    assert grant.granted_by_call_id is not None and grant.until is not None
    assert grants_expire(now=grant.until - timedelta(seconds=1)) == []
    assert grants_expire(now=grant.until + timedelta(seconds=1)) == [str(grant.pk)]
    assert "henry" not in Tool.objects.get(pk="test.reggie.lookup").agent_access
    after = henry.post(
        "/api/v1/tool-calls/", {"tool_id": "test.reggie.lookup", "reason": "r", "arguments": {}}
    )
    assert after.json()["code"] == "not_allowed"
    assert grants_expire(now=grant.until + timedelta(hours=1)) == []  # safe to run twice
    # Who asked, why, who approved: the call's audit row and its approval.
    call = ToolCall.objects.get(pk=asked["call_id"])
    assert call.r_tag.thought == "I need it for the outing" and call.outcome_hash
    assert ApprovalRequest.objects.get(tool_call=call).decided_by == reviewer


def test_a_rejection_gives_the_agent_the_reason(henry: SignedClient, reviewer: Any) -> None:
    asked = _ask(henry, kind="upstream", upstream="payroll").json()
    _decide(asked["call_id"], reviewer, "reject", reason="payroll stays with finance staff")
    polled = henry.get(f"/api/v1/tool-calls/{asked['call_id']}/").json()
    assert polled["status"] == "rejected"
    assert polled["rejection_reason"] == "payroll stays with finance staff"
    assert not CapabilityGrant.objects.exists()


def test_a_higher_level_for_one_tool_is_recorded_and_set_back(
    henry: SignedClient, reviewer: Any, django_capture_on_commit_callbacks: Any
) -> None:
    Tool.objects.filter(pk="transport.vehicle.book").update(monitoring_level=0)
    asked = _ask(henry, kind="level", tool_id="transport.vehicle.book", level=2, hours=1).json()
    with django_capture_on_commit_callbacks(execute=True):
        _decide(asked["call_id"], reviewer, "approve")
    assert Tool.objects.get(pk="transport.vehicle.book").monitoring_level == 2
    change = MonitoringLevelChange.objects.get(tool_id="transport.vehicle.book", to_level=2)
    assert change.rule == "manual" and change.changed_by == reviewer
    grant = CapabilityGrant.objects.get()
    grants_expire(now=grant.until + timedelta(seconds=1))
    assert Tool.objects.get(pk="transport.vehicle.book").monitoring_level == 0


def test_an_upstream_grant_covers_its_enabled_tools(
    henry: SignedClient, reviewer: Any, django_capture_on_commit_callbacks: Any
) -> None:
    for name, mode in (("a", "auto"), ("b", "review"), ("c", "disabled")):
        f.ToolFactory(
            tool_id=f"docs.{name}",
            handler_type="mcp",
            handler_config={"upstream": "docs", "tool": name},
            execution_mode=mode,
            agent_access=[],
        )
    asked = _ask(henry, kind="upstream", upstream="docs").json()
    with django_capture_on_commit_callbacks(execute=True):
        _decide(asked["call_id"], reviewer, "approve")
    grant = CapabilityGrant.objects.get()
    assert sorted(grant.tool_ids) == ["docs.a", "docs.b"]
    # Asked without hours: every grant ends, by default after RABS_GRANT_DEFAULT_HOURS.
    assert (
        grant.until is not None
        and abs(
            (grant.until - timezone.now()).total_seconds()
            - settings.RABS_GRANT_DEFAULT_HOURS * 3600
        )
        < 120
    )
    assert "henry" not in Tool.objects.get(pk="docs.c").agent_access


def test_a_grant_that_cannot_apply_fails_with_the_reason(
    henry: SignedClient, reviewer: Any, django_capture_on_commit_callbacks: Any
) -> None:
    asked = _ask(henry, kind="tool", tool_id="no.such.tool").json()
    with django_capture_on_commit_callbacks(execute=True):
        _decide(asked["call_id"], reviewer, "approve")
    polled = henry.get(f"/api/v1/tool-calls/{asked['call_id']}/").json()
    assert polled["outcome"] == "failed" and "no such tool" in polled["error"]


def test_invalid_requests_are_refused_with_the_field(henry: SignedClient) -> None:
    answer = _ask(henry, kind="level", tool_id="transport.vehicle.book")
    assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "/level"


def test_the_minute_job_withdraws_what_is_due(henry: SignedClient) -> None:
    tool = f.ToolFactory(tool_id="test.boxed", agent_access=["henry"])
    CapabilityGrant.objects.create(
        agent_id="henry",
        kind="tool",
        tool_ids=[tool.tool_id],
        until=timezone.now() - timedelta(minutes=1),
    )
    call_command("run_job", "expire_grants", stdout=None)
    assert "henry" not in Tool.objects.get(pk="test.boxed").agent_access
    from rabs.celery import app

    assert app.conf.beat_schedule["expire-grants"]["args"] == ("expire_grants",)
