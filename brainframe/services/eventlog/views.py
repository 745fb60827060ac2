"""Materialized views of the event log (seed 002): kept current as events are kept, rebuilt
by replay (``manage.py replay_events --view NAME [--since …]``).

- ``kanban`` (``view_kanban``): every task where its last ``task:changed`` left it: its agent,
  column, title and priority. Replay takes, for each task, its last event (by time, then log
  order): one set-based statement.
- ``plans`` (``view_plans``): the agents' plan history from ``planner:*``: each saved plan's
  goal and steps, then running, each step's result, finished or failed.
- ``agents`` (``view_agent_cards``): each agent's status card: its status as its last
  ``agent:status_changed`` left it, and its tasks per Kanban column (from ``kanban``).
- ``alignment`` (``alignment_snapshots``): the daily alignment of each tool and agent, written
  by the nightly job; replay recomputes the days it took from the audit (each call's rating)
  and the level history (``governance:level_changed``, ``monitoring_level_changes``).

Live, each view is updated by ``views_project`` in the transaction that keeps the event (the
bus calls it after appending), from the same log rows replay reads, so a replay gives back
exactly what was there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import date, datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from brainframe.events import (
    AGENT_STATUS_CHANGED,
    ALIGNMENT_SNAPSHOTTED,
    PLAN_EVENTS,
    TASK_CHANGED,
    projector_register,
)
from brainframe.models import AgentCard, AlignmentSnapshot, EventLogEntry, KanbanCard, PlanRecord
from brainframe.services.trust.alignment import snapshots_write

PLAN_NAMES = tuple(cls.NAME for cls in PLAN_EVENTS.values())
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)

_KANBAN_UPSERT = """
INSERT INTO view_kanban
    (task_id, agent_id, status, title, priority, progress, created_at, updated_at)
VALUES (%s, %s, %s, %s, %s, %s, NULLIF(%s, '')::timestamptz, %s)
ON CONFLICT (task_id) DO UPDATE SET
    agent_id = EXCLUDED.agent_id, status = EXCLUDED.status, title = EXCLUDED.title,
    priority = EXCLUDED.priority, progress = EXCLUDED.progress,
    created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at
 WHERE view_kanban.updated_at <= EXCLUDED.updated_at
"""

_KANBAN_REPLAY = """
INSERT INTO view_kanban
    (task_id, agent_id, status, title, priority, progress, created_at, updated_at)
SELECT DISTINCT ON (e.subject)
       e.subject::uuid,
       COALESCE(NULLIF(e.payload ->> 'owner', ''), e.payload ->> 'agent_id'),
       e.payload ->> 'status',
       COALESCE(e.payload ->> 'title', ''),
       COALESCE((e.payload ->> 'priority')::int, 50),
       COALESCE((e.payload ->> 'progress')::int, 0),
       NULLIF(e.payload ->> 'created_at', '')::timestamptz,
       e.at
  FROM event_log e
 WHERE e.name = %s AND e.at >= %s
   AND e.subject ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
 ORDER BY e.subject, e.at DESC, e.id DESC
"""


def _kanban_live(rows: list[dict[str, Any]]) -> None:
    with connection.cursor() as cursor:
        for row in rows:
            p = row["payload"]
            if not _UUID.match(str(p.get("task_id", ""))):
                continue  # not a task of the inbox (replay skips it too)
            cursor.execute(
                _KANBAN_UPSERT,
                [
                    p["task_id"],
                    p.get("owner") or p["agent_id"],
                    p["status"],
                    p.get("title", ""),
                    p.get("priority", 50),
                    p.get("progress", 0),
                    p.get("created_at", ""),
                    row["at"],
                ],
            )


def _kanban_replay(since: datetime) -> int:
    KanbanCard.objects.filter(updated_at__gte=since).delete()
    with connection.cursor() as cursor:
        cursor.execute(_KANBAN_REPLAY, [TASK_CHANGED, since])
        return int(cursor.rowcount)


def _plan_apply(record: PlanRecord | None, name: str, payload: dict[str, Any], at: Any) -> Any:
    """One planner event on a plan's record (None: not seen yet)."""
    short = name.partition(":")[2]
    if record is None:
        record = PlanRecord(
            plan_id=payload["plan_id"],
            agent_id=payload["agent_id"],
            task_id=payload.get("task_id") or "",
            goal=payload.get("goal", ""),
            steps=list(payload.get("steps") or []),
            status="saved",
            steps_finished={},
            saved_at=at,
            updated_at=at,
        )
    if short == "plan_saved":
        record.goal = payload.get("goal", "") or record.goal
        record.steps = list(payload.get("steps") or record.steps)
    elif short == "step_started":
        record.status = "running"
    elif short == "step_finished":
        record.steps_finished = {
            **record.steps_finished,
            str(payload.get("step")): payload.get("status", ""),
        }
        ids = [str(s.get("id")) for s in record.steps if isinstance(s, dict)]
        record.status = "finished" if ids and set(ids) <= set(record.steps_finished) else "running"
    elif short == "plan_failed":
        record.status = "failed"
    record.updated_at = at
    return record


def _plans_live(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        payload = row["payload"]
        record = PlanRecord.objects.select_for_update().filter(pk=payload["plan_id"]).first()
        _plan_apply(record, row["name"], payload, _at(row["at"])).save()


def _plans_replay(since: datetime) -> int:
    """The plans with events since ``since``, rebuilt from all their events."""
    touched = set(
        EventLogEntry.objects.filter(name__in=PLAN_NAMES, at__gte=since).values_list(
            "payload__plan_id", flat=True
        )
    )
    PlanRecord.objects.filter(pk__in=touched).delete()
    records: dict[str, PlanRecord] = {}
    events = (
        EventLogEntry.objects.filter(name__in=PLAN_NAMES, payload__plan_id__in=list(touched))
        .order_by("at", "id")
        .values_list("name", "payload", "at")
    )
    for name, payload, at in events.iterator(chunk_size=5000):
        plan = payload["plan_id"]
        records[plan] = _plan_apply(records.get(plan), name, payload, at)
    PlanRecord.objects.bulk_create(records.values(), batch_size=1000)
    return len(records)


def _at(value: Any) -> Any:
    return parse_datetime(value) if isinstance(value, str) else value


_CARD_COUNTS = """
INSERT INTO view_agent_cards (agent_id, status, status_at, counts)
SELECT a.agent_id, '', NULL, COALESCE(
         (SELECT jsonb_object_agg(k.status, k.n) FROM (
             SELECT status, count(*) AS n FROM view_kanban WHERE agent_id = a.agent_id
              GROUP BY status) k), '{}'::jsonb)
  FROM unnest(%s::text[]) AS a(agent_id)
ON CONFLICT (agent_id) DO UPDATE SET counts = EXCLUDED.counts
"""


def _cards_live(rows: list[dict[str, Any]]) -> None:
    """A status change sets the card's status; a task's move recounts its agents' cards (from
    the Kanban view, already updated by the same rows)."""
    recount: set[str] = set()
    with connection.cursor() as cursor:
        for row in rows:
            p = row["payload"]
            if row["name"] == AGENT_STATUS_CHANGED:
                cursor.execute(
                    "INSERT INTO view_agent_cards (agent_id, status, status_at, counts)"
                    " VALUES (%s, %s, %s, '{}') ON CONFLICT (agent_id) DO UPDATE SET"
                    " status = EXCLUDED.status, status_at = EXCLUDED.status_at"
                    " WHERE view_agent_cards.status_at IS NULL"
                    " OR view_agent_cards.status_at <= EXCLUDED.status_at",
                    [p["agent_id"], p["status"], row["at"]],
                )
            elif _UUID.match(str(p.get("task_id", ""))):
                recount.update(a for a in (p.get("agent_id"), p.get("owner")) if a)
        if recount:
            cursor.execute(_CARD_COUNTS, [sorted(recount)])


def _cards_replay(since: datetime) -> int:
    """Every card: the last status change of each agent, its tasks from the Kanban view (replay
    that first when it is stale). ``since`` does not narrow it: a card is one row per agent."""
    AgentCard.objects.all().delete()
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO view_agent_cards (agent_id, status, status_at, counts)
            SELECT DISTINCT ON (e.agent_id) e.agent_id, e.payload ->> 'status', e.at, '{}'
              FROM event_log e WHERE e.name = %s
             ORDER BY e.agent_id, e.at DESC, e.id DESC
            """,
            [AGENT_STATUS_CHANGED],
        )
        cursor.execute("SELECT DISTINCT agent_id FROM view_kanban")
        agents = [r[0] for r in cursor.fetchall()]
        cursor.execute(_CARD_COUNTS, [agents])
    return AgentCard.objects.count()


def _alignment_live(rows: list[dict[str, Any]]) -> None:
    """Written by the nightly job, not by events (see ``snapshots_write``)."""


def _alignment_replay(since: datetime) -> int:
    """The days the nightly job snapshotted (``governance:alignment_snapshotted`` in the log)
    since ``since``, recomputed from the audit's ratings and the level history."""
    first = timezone.localdate(since).isoformat()
    days = sorted(
        {
            date.fromisoformat(day)
            for day in EventLogEntry.objects.filter(name=ALIGNMENT_SNAPSHOTTED).values_list(
                "payload__day", flat=True
            )
            if day >= first
        }
    )
    AlignmentSnapshot.objects.filter(date__in=days).delete()
    for day in days:
        snapshots_write(day=day, announce=False)
    return AlignmentSnapshot.objects.filter(date__in=days).count()


#: name → (the events it follows, live update, replay since a time).
VIEWS: dict[str, tuple[tuple[str, ...], Callable[..., None], Callable[[datetime], int]]] = {
    "kanban": ((TASK_CHANGED,), _kanban_live, _kanban_replay),
    "plans": (PLAN_NAMES, _plans_live, _plans_replay),
    "alignment": ((), _alignment_live, _alignment_replay),
    "agents": ((AGENT_STATUS_CHANGED, TASK_CHANGED), _cards_live, _cards_replay),
}


def views_project(rows: Iterable[dict[str, Any]]) -> None:
    """Update every view from just-appended log rows (in the caller's transaction)."""
    rows = list(rows)
    for names, live, _ in VIEWS.values():
        mine = [r for r in rows if r["name"] in names]
        if mine:
            live(mine)


def views_register() -> None:
    projector_register(views_project)


def view_replay(name: str, *, since: datetime | None = None) -> int:
    """Rebuild view ``name`` (its rows touched since ``since``; all without) from the log, in
    one transaction. Returns how many rows it wrote."""
    if name not in VIEWS:
        raise KeyError(f"no view {name!r}; known: {', '.join(sorted(VIEWS))}")
    start = since or datetime.fromtimestamp(0).astimezone()
    with transaction.atomic():
        return VIEWS[name][2](start)
