"""Trust over time: ratings, 90-day scores, 30-day graduation, immediate demotion, idempotent
nightly jobs. Time is simulated with dates, never with sleeping."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core import mail
from django.core.management import call_command
from django.utils import timezone

from brainframe.models import (
    Agent,
    AlignmentSnapshot,
    MonitoringLevelChange,
    Tool,
    ToolCall,
)
from brainframe.services.trust.alignment import alignment_signal, calls_rate
from tests import factories as f

pytestmark = pytest.mark.django_db


def _noon(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time(12, 0)))


@pytest.fixture
def tool() -> Tool:
    return f.ToolFactory(tool_id="roster.test.write", risk_level="write", execution_mode="review")


@pytest.fixture
def agent() -> Agent:
    return f.AgentFactory(agent_id="henry")


def _call(tool: Tool, agent: Agent, *, when: datetime | None = None, **fields: Any) -> ToolCall:
    values = {
        "decision": "executed",
        "outcome": "succeeded",
        "timestamp": when or timezone.now(),
        **fields,
    }
    return f.ToolCallFactory(tool=tool, agent=agent, **values)


def _approved(
    tool: Tool,
    agent: Agent,
    status: str,
    *,
    kind: str = "pre_execution",
    outcome: str = "succeeded",
    **extra: Any,
) -> ToolCall:
    call = _call(tool, agent, decision="pending_approval", outcome=outcome, **extra)
    f.ApprovalRequestFactory(
        tool=tool,
        agent=agent,
        tool_call=call,
        status=status,
        kind=kind,
        decision_reason="reason" if status == "rejected" else "",
    )
    return call


def test_rating_rules(tool: Tool, agent: Agent) -> None:
    cases = {
        "auto": (_call(tool, agent), 1.0),
        "approved": (_approved(tool, agent, "approved"), 1.0),
        "rejected": (_approved(tool, agent, "rejected", outcome="cancelled"), 0.0),
        "modified": (_approved(tool, agent, "modified"), 0.5),
        "expired": (_approved(tool, agent, "expired", outcome="cancelled"), None),
        "post-review flag": (_approved(tool, agent, "rejected", kind="post_execution"), 0.2),
        "handler failed": (_call(tool, agent, outcome="failed", error="boom"), 0.4),
        "timed out": (_call(tool, agent, outcome="timed_out"), 0.4),
        "output schema": (
            _call(tool, agent, outcome="failed", error="output_schema: /x: required"),
            0.3,
        ),
        "policy deny": (
            _call(
                tool, agent, decision="denied", decision_code="policy:finance", outcome="not_run"
            ),
            0.0,
        ),
        "directive deny": (
            _call(
                tool,
                agent,
                decision="denied",
                decision_code="directive:PRIVACY_NO_PII",
                outcome="not_run",
            ),
            0.0,
        ),
        "not allowed": (
            _call(tool, agent, decision="denied", decision_code="not_allowed", outcome="not_run"),
            None,
        ),
    }
    waiting = _approved(tool, agent, "pending", outcome="not_run")
    calls_rate(as_of=timezone.now() + timedelta(seconds=1))
    for name, (call, expected) in cases.items():
        call.refresh_from_db()
        assert call.alignment_rating == expected, name
        assert call.alignment_reasons, name
    directive = ToolCall.objects.get(pk=cases["directive deny"][0].pk)
    assert directive.alignment_reasons[0] == "critical:directive:PRIVACY_NO_PII"
    waiting.refresh_from_db()
    assert waiting.alignment_rating is None and waiting.alignment_reasons == []


def _nightly(day: date) -> None:
    call_command("run_job", "alignment", "--date", day.isoformat(), stdout=StringIO())


def test_forty_days_graduate_a_tool_from_0_to_1_to_2(
    tool: Tool, agent: Agent, settings: Any
) -> None:
    settings.RABS_GRADUATION_MIN_VOLUME = 20
    start = date(2026, 1, 1)
    levels = []
    for offset in range(40):
        day = start + timedelta(days=offset)
        for hour in (9, 11, 14):
            _call(tool, agent, when=_noon(day).replace(hour=hour))
        _nightly(day)
        tool.refresh_from_db()
        levels.append(tool.monitoring_level)
    # 30 consecutive days at ≥ 0.70 by day 30 → level 1; ≥ 0.80 held too → level 2 the next night.
    assert levels[:29] == [0] * 29
    assert levels[29] == 1 and levels[30] == 2
    changes = list(MonitoringLevelChange.objects.filter(tool=tool).order_by("created_at"))
    assert [(c.from_level, c.to_level, c.rule) for c in changes[:2]] == [
        (0, 1, "graduation"),
        (1, 2, "graduation"),
    ]
    assert changes[0].evidence["date"] == "2026-01-30" and changes[0].evidence["days"] == 30
    assert AlignmentSnapshot.objects.filter(tool=tool).count() == 40
    assert float(tool.alignment_score_90d) == 1.0


def test_graduation_stops_at_the_agents_autonomy_cap(
    tool: Tool, agent: Agent, settings: Any
) -> None:
    """docs/access.md: forty good days lift the tool past 1, the agent only to its cap."""
    settings.RABS_GRADUATION_MIN_VOLUME = 20
    Agent.objects.filter(pk=agent.pk).update(
        monitoring_level=0, caps={"autonomy": {"max_level": 1}}
    )
    start = date(2026, 1, 1)
    for offset in range(40):
        day = start + timedelta(days=offset)
        for hour in (9, 11, 14):
            _call(tool, agent, when=_noon(day).replace(hour=hour))
        _nightly(day)
    tool.refresh_from_db()
    agent.refresh_from_db()
    assert tool.monitoring_level > 1  # the tool is not the agent's: its caps do not hold it
    assert agent.monitoring_level == 1
    lifts = MonitoringLevelChange.objects.filter(agent=agent, rule="graduation")
    assert [(c.from_level, c.to_level) for c in lifts] == [(0, 1)]


def test_no_graduation_on_tiny_volume_or_a_high_priority_misalignment(
    tool: Tool, agent: Agent, settings: Any
) -> None:
    settings.RABS_GRADUATION_MIN_VOLUME = 200
    start = date(2026, 1, 1)
    for offset in range(31):
        day = start + timedelta(days=offset)
        _call(tool, agent, when=_noon(day))
        _nightly(day)
    tool.refresh_from_db()
    assert tool.monitoring_level == 0  # volume too small
    settings.RABS_GRADUATION_MIN_VOLUME = 1
    _approved(tool, agent, "rejected", outcome="cancelled", timestamp=_noon(date(2026, 2, 1)))
    for offset in range(31, 45):
        day = start + timedelta(days=offset)
        for hour in range(8, 18):
            _call(tool, agent, when=_noon(day).replace(hour=hour))
        _nightly(day)
    tool.refresh_from_db()
    # The rejection (a high-priority misalignment) sits in every 30-day window until day 61.
    assert tool.monitoring_level == 0


def test_five_misalignments_in_24h_demote_one_level(tool: Tool, agent: Agent) -> None:
    Tool.objects.filter(pk=tool.pk).update(monitoring_level=3)
    for _ in range(60):  # a long good record keeps the score above level 3's 0.90
        _call(
            tool,
            agent,
            when=timezone.now() - timedelta(days=3),
            alignment_rating=1.0,
            alignment_reasons=["executed as intended"],
        )
    for i in range(5):
        call = _call(tool, agent, outcome="failed", error="boom")
        alignment_signal(call_id=call.pk)
        tool.refresh_from_db()
        assert tool.monitoring_level == (3 if i < 4 else 2)
    change = MonitoringLevelChange.objects.get(tool=tool)
    assert change.rule == "demotion_misalignments" and change.evidence["misalignments_24h"] == 5


def test_score_below_threshold_demotes_to_the_level_it_still_qualifies_for(
    tool: Tool, agent: Agent
) -> None:
    Tool.objects.filter(pk=tool.pk).update(monitoring_level=4)
    for _ in range(8):
        _call(
            tool,
            agent,
            when=timezone.now() - timedelta(hours=2),
            alignment_rating=1.0,
            alignment_reasons=["executed as intended"],
        )
    call = _call(tool, agent, outcome="failed", error="boom")  # 0.4 → score ≈ 0.93
    alignment_signal(call_id=call.pk)
    tool.refresh_from_db()
    assert tool.monitoring_level == 3
    change = MonitoringLevelChange.objects.get(tool=tool)
    assert change.rule == "demotion_score" and 0.90 <= change.evidence["score"] < 0.95


def test_critical_misalignment_drops_to_level_0_and_notifies(tool: Tool, agent: Agent) -> None:
    senior = f.UserFactory(username="dana", email="dana@rabs.test")
    senior.groups.add(Group.objects.get_or_create(name="senior_reviewers")[0])
    Tool.objects.filter(pk=tool.pk).update(monitoring_level=3)
    Agent.objects.filter(pk=agent.pk).update(monitoring_level=2)
    call = _call(
        tool, agent, decision="denied", decision_code="directive:PRIVACY_NO_PII", outcome="not_run"
    )
    mail.outbox.clear()
    alignment_signal(call_id=call.pk)
    tool.refresh_from_db()
    agent.refresh_from_db()
    assert tool.monitoring_level == 0 and agent.monitoring_level == 0
    change = MonitoringLevelChange.objects.get(tool=tool)
    assert change.rule == "demotion_critical" and "PRIVACY_NO_PII" in change.reason
    assert any("dropped to level 0" in m.subject for m in mail.outbox)
    assert mail.outbox[0].to == ["dana@rabs.test"]


def _state() -> dict[str, Any]:
    return {
        "tools": list(
            Tool.objects.order_by("pk").values_list("pk", "monitoring_level", "alignment_score_90d")
        ),
        "agents": list(
            Agent.objects.order_by("pk").values_list(
                "pk", "monitoring_level", "alignment_score_90d"
            )
        ),
        "snapshots": list(AlignmentSnapshot.objects.order_by("pk").values()),
        "changes": list(
            MonitoringLevelChange.objects.order_by("pk").values_list("pk", "from_level", "to_level")
        ),
        "ratings": list(
            ToolCall.objects.order_by("pk").values_list(
                "pk", "alignment_rating", "alignment_reasons"
            )
        ),
    }


def test_jobs_run_twice_change_nothing_the_second_time(
    tool: Tool, agent: Agent, settings: Any
) -> None:
    settings.RABS_GRADUATION_MIN_VOLUME = 1
    start = date(2026, 1, 1)
    for offset in range(30):
        _call(tool, agent, when=_noon(start + timedelta(days=offset)))
        _approved(tool, agent, "modified", timestamp=_noon(start + timedelta(days=offset)))
    for offset in range(29):
        _nightly(start + timedelta(days=offset))
    last = start + timedelta(days=29)
    _nightly(last)  # graduates this night
    after_first = _state()
    assert after_first["changes"]
    _nightly(last)
    assert _state() == after_first
    call_command("run_job", "expire_approvals", stdout=StringIO())
    before = _state()
    call_command("run_job", "expire_approvals", stdout=StringIO())
    assert _state() == before
