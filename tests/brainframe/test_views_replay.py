"""Materialized views of the event log: kept current as events are kept; drop their rows,
replay, and they are back exactly as they were."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from brainframe.models import Agent, AgentTask, KanbanCard, PlanRecord
from brainframe.services.tasks import task_announce, task_claim, task_complete, task_fail
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

    before = _rows(KanbanCard)
    KanbanCard.objects.all().delete()
    assert "kanban: 6 row(s) rebuilt" in _replay("--view", "kanban")
    assert _rows(KanbanCard) == before

    # Only what changed since a moment: the rest stays as it is.
    cutoff = timezone.now()
    task_claim(agent=henry, task_id=tasks[3].task_id)
    after = _rows(KanbanCard)
    KanbanCard.objects.filter(updated_at__gte=cutoff).delete()
    assert KanbanCard.objects.count() == 5
    assert "1 row(s)" in _replay("--view", "kanban", "--since", cutoff.isoformat())
    assert _rows(KanbanCard) == after


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
    with pytest.raises(CommandError, match="not a date"):
        _replay("--view", "kanban", "--since", "yesterday-ish")
