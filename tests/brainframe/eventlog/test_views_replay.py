"""Materialized views of the event log: kept current as events are kept; drop their rows,
replay, and they are back exactly as they were."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from brainframe.models import Agent, AgentTask, KanbanCard, PlanRecord
from brainframe.services.work.tasks import task_announce, task_claim, task_complete, task_fail
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db


def _rows(model: Any) -> list[tuple[Any, ...]]:
    fields = [f.attname for f in model._meta.concrete_fields]
    return sorted(model.objects.values_list(*fields))


def _replay(*args: str) -> str:
    out = StringIO()
    call_command("replay_events", *args, stdout=out)
    return out.getvalue()


def test_the_kanban_view_follows_tasks_and_replays_identically(seeded: None) -> None:
    henry = Agent.objects.get(agent_id="henry")
    tasks = []
    for n in range(6):
        task = AgentTask.objects.create(agent=henry, title=f"task {n}", priority=10 * n)
        task_announce(task)
        tasks.append(task)
    task_claim(agent=henry, task_id=tasks[0].task_id)
    task_complete(agent=henry, task_id=tasks[0].task_id, result={"ok": True})
    task_claim(agent=henry, task_id=tasks[1].task_id)
    task_fail(agent=henry, task_id=tasks[1].task_id, reason="no bus")
    moved = tasks[2]
    moved.agent_id = "reggie"
    moved.save(update_fields=["agent"])
    task_announce(moved, also_agent_id="henry")

    cards = {c.task_id: c for c in KanbanCard.objects.all()}
    assert cards[tasks[0].task_id].status == "done"
    assert cards[tasks[1].task_id].status == "failed"
    assert cards[moved.task_id].agent_id == "reggie" and cards[moved.task_id].title == "task 2"
    assert cards[tasks[5].task_id].priority == 50 and cards[tasks[4].task_id].status == "todo"

    # The view and the tasks agree (the demo's tasks included: every saved task is an event).
    assert {(str(c.task_id), c.agent_id, c.status) for c in KanbanCard.objects.all()} == {
        (str(t.task_id), t.agent_id, t.status) for t in AgentTask.objects.all()
    }
    before = _rows(KanbanCard)
    KanbanCard.objects.all().delete()
    assert f"kanban: {len(before)} row(s) rebuilt" in _replay("--view", "kanban")
    assert _rows(KanbanCard) == before

    # Only what changed since a moment: the rest stays as it is.
    cutoff = timezone.now()
    task_claim(agent=henry, task_id=tasks[3].task_id)
    after = _rows(KanbanCard)
    KanbanCard.objects.filter(updated_at__gte=cutoff).delete()
    assert KanbanCard.objects.count() == len(after) - 1
    assert "1 row(s)" in _replay("--view", "kanban", "--since", cutoff.isoformat())
    assert _rows(KanbanCard) == after


def test_the_agent_cards_view_follows_status_and_tasks_and_replays_identically(
    henry: SignedClient,
) -> None:
    from brainframe.models import AgentCard
    from brainframe.services.registry.agents import agent_set_paused

    agent = Agent.objects.get(agent_id="henry")
    for n in range(3):
        task_announce(AgentTask.objects.create(agent=agent, title=f"card task {n}"))
    first = AgentTask.objects.filter(agent=agent, title="card task 0").get()
    task_claim(agent=agent, task_id=first.task_id)
    assert (
        henry.post("/api/v1/heartbeat/", {"status": "active", "uptime_seconds": 5}).status_code
        == 200
    )
    henry.post("/api/v1/heartbeat/", {"status": "active", "uptime_seconds": 35})  # no change
    card = AgentCard.objects.get(agent_id="henry")
    assert card.status == "active"
    live = {}
    for task in AgentTask.objects.filter(agent=agent):
        live[task.status] = live.get(task.status, 0) + 1
    assert card.counts == live  # the view counts what the tasks say
    agent_set_paused(agents=[Agent.objects.get(agent_id="reggie")], paused=True)
    assert AgentCard.objects.get(agent_id="reggie").status == "paused"
    from brainframe.models import EventLogEntry

    changes = EventLogEntry.objects.filter(name="agent:status_changed", agent_id="henry")
    assert [c.payload["status"] for c in changes] == ["active"]  # once: only a change is kept

    before = _rows(AgentCard)
    AgentCard.objects.all().delete()
    assert f"agents: {len(before)} row(s) rebuilt" in _replay("--view", "agents")
    assert _rows(AgentCard) == before


def test_the_plan_history_view_replays_identically(henry: SignedClient) -> None:
    task = AgentTask.objects.create(agent_id="henry", title="outing")
    steps = [
        {"id": "s1", "intent": "find a bus", "tools": ["transport.vehicle.availability"]},
        {
            "id": "s2",
            "intent": "book it",
            "tools": ["transport.vehicle.book"],
            "depends_on": ["s1"],
        },
    ]

    def report(event: str, plan: str, **more: Any) -> None:
        body = {"event": event, "plan_id": plan, "task_id": str(task.task_id), **more}
        response = henry.post("/api/v1/plans/events/", body)
        assert response.status_code == 201, response.content

    report("plan_saved", "plan-a", goal="book the outing bus", steps=steps)
    report("step_started", "plan-a", step="s1")
    report("step_finished", "plan-a", step="s1", status="achieved")
    report("plan_saved", "plan-b", goal="book the outing bus, again", steps=steps)
    report("step_started", "plan-b", step="s1")
    report("step_finished", "plan-b", step="s1", status="achieved")
    report("step_started", "plan-b", step="s2")
    report("step_finished", "plan-b", step="s2", status="achieved")
    report("plan_failed", "plan-a", status="failed", detail="replaced after a denial")

    plans = {p.plan_id: p for p in PlanRecord.objects.all()}
    assert plans["plan-a"].status == "failed" and plans["plan-a"].steps_finished == {
        "s1": "achieved"
    }
    assert plans["plan-b"].status == "finished"
    assert [s["id"] for s in plans["plan-b"].steps] == ["s1", "s2"]

    before = _rows(PlanRecord)
    PlanRecord.objects.all().delete()
    assert "plans: 2 row(s) rebuilt" in _replay("--view", "plans")
    assert _rows(PlanRecord) == before

    # Another agent's task is not Henry's to report on.
    other = AgentTask.objects.create(agent_id="reggie", title="not Henry's")
    refused = henry.post(
        "/api/v1/plans/events/",
        {"event": "plan_saved", "plan_id": "p-x", "task_id": str(other.task_id)},
    )
    assert refused.status_code == 404


def test_an_unknown_view_or_time_is_refused(seeded: None) -> None:
    with pytest.raises(CommandError):
        _replay("--view", "nonsense")
    with pytest.raises(CommandError, match="not an ISO 8601 date"):
        _replay("--view", "kanban", "--since", "yesterday-ish")


def test_the_alignment_view_is_recomputed_identically_from_the_audit(settings: Any) -> None:
    """Nightly snapshots over 35 days (the tool graduates on the way, so its level moves),
    dropped and replayed from the log (the days taken) and the audit: the same rows."""
    from datetime import date, datetime, timedelta
    from datetime import time as dtime

    from django.utils import timezone

    from brainframe.models import AlignmentSnapshot, MonitoringLevelChange
    from tests import factories as f

    settings.RABS_GRADUATION_MIN_VOLUME = 20
    tool = f.ToolFactory(tool_id="roster.test.write", risk_level="write", execution_mode="review")
    agent = f.AgentFactory(agent_id="henry")
    start = date(2026, 1, 1)
    seen = 0
    for offset in range(35):
        day = start + timedelta(days=offset)
        for hour in (9, 11, 14):
            when = timezone.make_aware(datetime.combine(day, dtime(hour, 0)))
            f.ToolCallFactory(
                tool=tool, agent=agent, decision="executed", outcome="succeeded", timestamp=when
            )
        call_command("run_job", "alignment", "--date", day.isoformat(), stdout=StringIO())
        # As if the job had run that night: its level changes dated 02:30 the next morning.
        MonitoringLevelChange.objects.filter(pk__gt=seen).update(
            created_at=timezone.make_aware(datetime.combine(day + timedelta(days=1), dtime(2, 30)))
        )
        seen = (
            MonitoringLevelChange.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        )
    assert MonitoringLevelChange.objects.filter(tool=tool).count() >= 1  # it graduated
    before = _rows(AlignmentSnapshot)
    levels = {s.level for s in AlignmentSnapshot.objects.filter(tool=tool)}
    assert len(levels) >= 2  # the level as each day ended, not as it is now

    AlignmentSnapshot.objects.all().delete()
    assert "alignment: 70 row(s)" in _replay("--view", "alignment")
    assert _rows_without_ids(AlignmentSnapshot) == _without_ids(before)

    cut = start + timedelta(days=20)
    AlignmentSnapshot.objects.filter(date__gte=cut).delete()
    _replay("--view", "alignment", "--since", cut.isoformat())
    assert _rows_without_ids(AlignmentSnapshot) == _without_ids(before)


def _without_ids(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted((row[1:] for row in rows), key=lambda r: [str(v) for v in r])


def _rows_without_ids(model: Any) -> list[tuple[Any, ...]]:
    return _without_ids(_rows(model))
