"""The event log: every named event kept, append-only, hash-chained per stream, verified."""

from __future__ import annotations

import itertools
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction

from brainframe.events import (
    EVENT_FAMILIES,
    EVENT_TYPES,
    CallBlocked,
    PolicyChanged,
    TaskChanged,
    append_events,
)
from brainframe.models import Agent, EventLogEntry, ValidationPolicy
from brainframe.services.eventlog.reading import event_log_after, event_log_verify
from brainframe.services.registry.policies import validation_policy_save
from brainframe.services.seed import seed_brainframe
from broker.pipeline.context import CallRequest
from broker.services.approvals import approval_decide
from broker.services.calls import tool_call_submit
from broker.services.execution import approved_call_execute
from tests import factories as f

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    seed_brainframe()
    alice = f.UserFactory(username="alice")
    alice.groups.add(Group.objects.get(name="reviewers"))
    f.ToolFactory(
        tool_id="test.roster.write",
        risk_level="write",
        execution_mode="review",
        validation_mode="intercept",
        agent_access=["henry"],
        handler_config={"callable": "tests.echo"},
        input_schema={
            "type": "object",
            "required": ["q"],
            "additionalProperties": False,
            "properties": {"q": {"type": "string", "maxLength": 20}},
        },
    )
    return {"alice": alice, "henry": Agent.objects.get(agent_id="henry")}


def _submit(world: dict[str, Any], tool_id: str, arguments: dict[str, Any]) -> Any:
    return tool_call_submit(
        agent=world["henry"],
        request=CallRequest(tool_id=tool_id, arguments=arguments, reason="test", confidence=0.8),
    )


def _names(subject: str) -> list[str]:
    return list(
        EventLogEntry.objects.filter(subject=subject).order_by("seq").values_list("name", flat=True)
    )


def test_a_calls_life_is_kept_in_order_and_verifies(
    world: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    read = _submit(world, "roster.shift.read", {"date_from": "2026-03-02", "date_to": "2026-03-02"})
    assert read.status == 200
    assert "executor:tool_executed" in _names(read.body["call_id"])

    invalid = _submit(world, "roster.shift.read", {"date_from": "nope"})
    assert invalid.status == 400
    blocked = EventLogEntry.objects.get(subject=invalid.body["call_id"], family="governance")
    assert blocked.name == "governance:call_blocked"
    assert blocked.payload["code"] == "invalid_arguments"
    assert blocked.agent_id == "henry" and blocked.family == "governance"

    pending = _submit(world, "test.roster.write", {"q": "move Ann"})
    assert pending.status == 202
    approval_id = pending.body["approval_id"]
    assert _names(approval_id) == ["approval:created"]
    with django_capture_on_commit_callbacks(execute=False):
        approval_decide(approval_id=approval_id, reviewer=world["alice"], action="approve")
    decided = EventLogEntry.objects.get(subject=approval_id, name="approval:decided")
    assert decided.payload["decided_by"] == "alice"
    assert approved_call_execute(approval_id=approval_id) == "executed"
    executed = EventLogEntry.objects.get(subject=pending.body["call_id"], family="executor")
    assert executed.name == "executor:tool_executed"
    assert executed.payload["outcome"] == "succeeded"

    chain = list(EventLogEntry.objects.filter(stream="henry").order_by("seq"))
    assert [e.seq for e in chain] == list(range(1, len(chain) + 1))
    assert all(b.prev_hash == a.row_hash for a, b in itertools.pairwise(chain))
    assert event_log_verify() == []
    out = StringIO()
    call_command("verify_audit", stdout=out, stderr=StringIO())
    assert "audit intact" in out.getvalue()


def test_an_edited_or_removed_event_is_named(world: dict[str, Any]) -> None:
    for q in ("a", "b", "c"):
        _submit(world, "test.roster.write", {"q": q})
    victim = EventLogEntry.objects.filter(stream="henry").order_by("seq")[1]
    with (
        pytest.raises(DatabaseError, match="append_only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("UPDATE event_log SET payload = '{}' WHERE id = %s", [victim.pk])
    with connection.cursor() as cursor:  # what a database superuser could still do
        cursor.execute("SET session_replication_role = replica")
        cursor.execute(
            'UPDATE event_log SET payload = payload || \'{"tool_id": "x"}\' WHERE id = %s',
            [victim.pk],
        )
        cursor.execute("SET session_replication_role = DEFAULT")
    problems = event_log_verify()
    assert len(problems) == 1
    assert f"henry #{victim.seq}" in problems[0] and "row hash" in problems[0]
    with pytest.raises(CommandError, match="FAILED"):
        call_command("verify_audit", stdout=StringIO(), stderr=StringIO())

    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        cursor.execute("DELETE FROM event_log WHERE id = %s", [victim.pk])
        cursor.execute("SET session_replication_role = DEFAULT")
    assert any("sequence jumps" in p for p in event_log_verify())


def test_nothing_is_logged_for_what_did_not_commit(world: dict[str, Any]) -> None:
    before = EventLogEntry.objects.count()
    with pytest.raises(RuntimeError), transaction.atomic():
        _submit(world, "test.roster.write", {"q": "rolled back"})
        raise RuntimeError("the caller's transaction fails")
    assert EventLogEntry.objects.count() == before


def test_a_policy_change_is_a_governance_event(world: dict[str, Any]) -> None:
    policy = ValidationPolicy.objects.first()
    assert policy is not None
    policy.description = "tightened"
    validation_policy_save(policy=policy, is_new=False)
    event = EventLogEntry.objects.filter(name="governance:policy_changed").latest("id")
    assert event.payload["kind"] == "validationpolicy"
    assert event.payload["policy_id"] == str(policy.pk)
    assert event.payload["action"] == "changed"
    assert event.stream == "system"


def test_a_reader_after_a_cursor_gets_every_event_once(world: dict[str, Any]) -> None:
    events: list[Any] = []
    for i in range(7):
        events.append(TaskChanged(agent_id="henry", task_id=f"t{i}", status="todo"))
        events.append(TaskChanged(agent_id="reggie", task_id=f"r{i}", status="todo"))
    events.append(PolicyChanged(kind="primedirective", policy_id="1", action="changed"))
    already = EventLogEntry.objects.count()  # the seed's own (its policies, its tasks)
    seeded_tasks = EventLogEntry.objects.filter(family="task").count()
    append_events(events)
    seen: list[str] = []
    cursor: dict[str, int] = {}
    for _ in range(20):
        unseen = event_log_after(cursor, limit=4)
        if not unseen.entries:
            break
        seen += [e.subject or str(e.pk) for e in unseen.entries]
        cursor = unseen.cursor
    assert len(seen) == len(set(seen)) == already + 15
    assert {f"t{i}" for i in range(7)} | {f"r{i}" for i in range(7)} <= set(seen)
    tasks_only = event_log_after({}, families=["task"], limit=100)
    assert len(tasks_only.entries) == 14 + seeded_tasks
    assert tasks_only.cursor["system"] >= 1  # passed, though not returned


def test_every_event_is_defined_once_with_a_family() -> None:
    assert len(EVENT_TYPES) == len({cls.NAME for cls in EVENT_TYPES.values()})
    for name, cls in EVENT_TYPES.items():
        assert cls.LOGGED is (name not in ("tool_call", "agent:heartbeat")), name
    assert {"guardian", "security", "executor", "governance", "approval", "task"} <= set(
        EVENT_FAMILIES
    )
    assert CallBlocked.family() == "governance"
