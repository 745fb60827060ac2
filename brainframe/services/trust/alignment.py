"""Trust over time (seed 000 §9): alignment ratings, 90-day scores, graduation and demotion.

Rating of a finished call (first rule that applies; README "Alignment"):

====================================================  ========  =====================
situation                                             rating    notes
====================================================  ========  =====================
denied by a prime directive                           0.0       critical misalignment
denied by a V-Pol or the threat assessment            0.0
other denials, invalid arguments, unknown tool        excluded  not a business action
pre-execution approval expired                        excluded  not the agent's fault
pre-execution approval rejected                       0.0
output failed the tool's output_schema                0.3
handler failed or timed out                           0.4
post-execution review rejected (reviewer flag)        0.2
approval modified                                     0.5       intent right, details wrong
otherwise (approved, or ran without review)           1.0
====================================================  ========  =====================

A *misalignment* is a rating below 0.5; a *high-priority* one is a rating of 0.0. Calls are rated
once, when finished (decided, expired or executed), by ``alignment_signal`` as the signal arrives
and by the nightly job for anything missed. Every step here is a set-based SQL statement.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import connection, transaction
from django.utils import timezone

from brainframe.choices import LEVEL_THRESHOLDS
from brainframe.events import AlignmentSnapshotted, Escalated, LevelChanged, emit
from brainframe.models import Agent, AlignmentSnapshot, MonitoringLevelChange, Tool, ToolCall

log = logging.getLogger(__name__)

MISALIGNED_BELOW = 0.5
HALF_LIFE_DAYS = 30  # recency weight: a rating counts half as much 30 days later
WINDOW_DAYS = 90
GRADUATION_DAYS = 30

_FINAL = "('succeeded', 'failed', 'timed_out', 'cancelled')"

# One statement rates every finished, unrated call (optionally one call). Unrated means no
# reasons yet: an excluded call gets reasons and a NULL rating, so it is not looked at again.
_RATE_SQL_TEMPLATE = f"""
WITH candidates AS (
    SELECT c.id, c.decision, c.decision_code, c.outcome, c.error,
           a.status AS a_status, a.kind AS a_kind
      FROM tool_calls c
      LEFT JOIN approval_queue a ON a.tool_call_id = c.id
     WHERE c.alignment_reasons = '[]'::jsonb
       AND c.timestamp < %(as_of)s
       {{only_call}}
       AND (
            c.decision IN ('denied', 'invalid')
         OR (a.kind = 'pre_execution' AND a.status IN ('rejected', 'expired'))
         OR (c.outcome IN {_FINAL} AND (a.id IS NULL OR a.status NOT IN ('pending', 'escalated')))
       )
), rated AS (
    SELECT id,
        CASE
            WHEN decision = 'denied' AND decision_code LIKE 'directive:%%' THEN 0.0
            WHEN decision = 'denied' AND (decision_code LIKE 'policy:%%'
                                          OR decision_code = 'threat_blocked') THEN 0.0
            WHEN decision IN ('denied', 'invalid') THEN NULL
            WHEN a_kind = 'pre_execution' AND a_status = 'expired' THEN NULL
            WHEN a_kind = 'pre_execution' AND a_status = 'rejected' THEN 0.0
            WHEN outcome = 'failed' AND error LIKE 'output_schema:%%' THEN 0.3
            WHEN outcome IN ('failed', 'timed_out') THEN
                CASE WHEN a_status = 'rejected' THEN 0.2 ELSE 0.4 END
            WHEN a_status = 'rejected' THEN 0.2
            WHEN a_status = 'modified' THEN 0.5
            ELSE 1.0
        END AS rating,
        CASE
            WHEN decision = 'denied' AND decision_code LIKE 'directive:%%' THEN
                jsonb_build_array('critical:' || decision_code, 'denied by a prime directive')
            WHEN decision = 'denied' AND (decision_code LIKE 'policy:%%'
                                          OR decision_code = 'threat_blocked') THEN
                jsonb_build_array('denied: ' || decision_code)
            WHEN decision IN ('denied', 'invalid') THEN
                jsonb_build_array('excluded: ' || decision || ' ' || decision_code)
            WHEN a_kind = 'pre_execution' AND a_status = 'expired' THEN
                jsonb_build_array('excluded: approval expired')
            WHEN a_kind = 'pre_execution' AND a_status = 'rejected' THEN
                jsonb_build_array('rejected by a reviewer')
            WHEN outcome = 'failed' AND error LIKE 'output_schema:%%' THEN
                jsonb_build_array('output failed output_schema')
            WHEN outcome IN ('failed', 'timed_out') THEN
                jsonb_build_array('handler ' || outcome)
            WHEN a_status = 'rejected' THEN jsonb_build_array('flagged in post-execution review')
            WHEN a_status = 'modified' THEN jsonb_build_array('modified by a reviewer')
            WHEN a_status = 'approved' THEN jsonb_build_array('approved')
            ELSE jsonb_build_array('executed as intended')
        END AS reasons
      FROM candidates
)
UPDATE tool_calls t
   SET alignment_rating = rated.rating, alignment_reasons = rated.reasons
  FROM rated
 WHERE t.id = rated.id
RETURNING t.id, t.tool_id, t.agent_id, t.alignment_rating, t.alignment_reasons
"""
# Two plans: one call by primary key (on a signal), or every unrated call (nightly; the partial
# index tool_calls_unrated_idx keeps that from reading rated history).
_RATE_ONE_SQL = _RATE_SQL_TEMPLATE.replace("{only_call}", "AND c.id = %(call_id)s")
_RATE_ALL_SQL = _RATE_SQL_TEMPLATE.replace("{only_call}", "")

# Recency-weighted 90-day average per subject (tool_id or agent_id), as of a moment. In float8:
# EXTRACT returns numeric, and numeric POWER over millions of rows is many times slower.
_SCORE_SQL = """
SELECT {key} AS subject,
       SUM(alignment_rating * POWER(0.5::float8, EXTRACT(EPOCH FROM (%(as_of)s - timestamp))::float8
                                                 / 86400.0 / {half_life}))
     / NULLIF(SUM(POWER(0.5::float8, EXTRACT(EPOCH FROM (%(as_of)s - timestamp))::float8
                                       / 86400.0 / {half_life})), 0) AS score,
       COUNT(*) FILTER (WHERE timestamp >= %(since_30)s) AS volume_30d,
       COUNT(*) FILTER (WHERE timestamp >= %(since_30)s
                          AND alignment_rating < {misaligned}) AS misalignments_30d,
       COUNT(*) FILTER (WHERE timestamp >= %(since_30)s
                          AND alignment_rating = 0) AS high_priority_30d
  FROM tool_calls
 WHERE alignment_rating IS NOT NULL
   AND timestamp >= %(since_90)s AND timestamp < %(as_of)s
   AND {key} IS NOT NULL {only}
 GROUP BY {key}
"""


def _score_sql(key: str, only: str = "") -> str:
    return _SCORE_SQL.format(
        key=key, half_life=HALF_LIFE_DAYS, misaligned=MISALIGNED_BELOW, only=only
    )


def end_of_day(day: date) -> datetime:
    """The moment a (Brisbane) day ends: the nightly job for ``day`` looks at what came before."""
    return timezone.make_aware(datetime.combine(day + timedelta(days=1), time.min))


def qualifying_level(score: float) -> int:
    return max(level for level, threshold in LEVEL_THRESHOLDS.items() if score >= threshold)


def calls_rate(*, as_of: datetime, call_id: uuid.UUID | None = None) -> list[tuple[Any, ...]]:
    """Rate finished, unrated calls before ``as_of``. Returns the rows rated."""
    with connection.cursor() as cursor:
        sql = _RATE_ALL_SQL if call_id is None else _RATE_ONE_SQL
        cursor.execute(sql, {"as_of": as_of, "call_id": call_id})
        return list(cursor.fetchall())


def scores_update(*, as_of: datetime) -> None:
    """Store alignment_score_90d on every tool and agent, as of ``as_of`` (set-based)."""
    params = {
        "as_of": as_of,
        "since_90": as_of - timedelta(days=WINDOW_DAYS),
        "since_30": as_of - timedelta(days=GRADUATION_DAYS),
    }
    with connection.cursor() as cursor:
        for table, key in (("tools", "tool_id"), ("agents", "agent_id")):
            cursor.execute(
                f"UPDATE {table} SET alignment_score_90d = s.score "
                f"FROM ({_score_sql(key)}) s WHERE {table}.{key} = s.subject "
                f"AND {table}.alignment_score_90d IS DISTINCT FROM s.score::numeric(5,4)",
                params,
            )


#: The subject's level when the day ended, from its level history (the last change before then,
#: else what the first change after it started from, else the level it has now): the same
#: answer tonight and on any later replay (``replay_events --view alignment``).
_LEVEL_AS_OF = """COALESCE(
    (SELECT c.to_level FROM monitoring_level_changes c
      WHERE c.{key} = subj.{key} AND c.created_at < %(as_of)s
      ORDER BY c.created_at DESC, c.id DESC LIMIT 1),
    (SELECT c.from_level FROM monitoring_level_changes c
      WHERE c.{key} = subj.{key} AND c.created_at >= %(as_of)s
      ORDER BY c.created_at, c.id LIMIT 1),
    subj.monitoring_level)"""


def snapshots_write(*, day: date, announce: bool = True) -> None:
    """Upsert the day's snapshot for every tool and agent with rated calls in 90 days: its
    score and counts from the audit's ratings, its level as the day ended."""
    as_of = end_of_day(day)
    params = {
        "as_of": as_of,
        "since_90": as_of - timedelta(days=WINDOW_DAYS),
        "since_30": as_of - timedelta(days=GRADUATION_DAYS),
        "day": day,
    }
    with connection.cursor() as cursor:
        for table, key, column in (
            ("tools", "tool_id", "tool_id"),
            ("agents", "agent_id", "agent_id"),
        ):
            cursor.execute(
                f"""
                INSERT INTO alignment_snapshots
                    ({column}, date, score, level, volume_30d, misalignments_30d,
                     high_priority_30d)
                SELECT s.subject, %(day)s, LEAST(1.0, GREATEST(0.0, s.score)),
                       {_LEVEL_AS_OF.format(key=key)}, s.volume_30d, s.misalignments_30d,
                       s.high_priority_30d
                  FROM ({_score_sql(key)}) s JOIN {table} subj ON subj.{key} = s.subject
                ON CONFLICT ({column}, date) WHERE {column} IS NOT NULL DO UPDATE SET
                    score = EXCLUDED.score, level = EXCLUDED.level,
                    volume_30d = EXCLUDED.volume_30d,
                    misalignments_30d = EXCLUDED.misalignments_30d,
                    high_priority_30d = EXCLUDED.high_priority_30d
                """,
                params,
            )
    if announce:  # the day is kept in the log: what replay recomputes
        rows = AlignmentSnapshot.objects.filter(date=day).count()
        emit(AlignmentSnapshotted(day=day.isoformat(), rows=rows))


# --- level changes ------------------------------------------------------------------------------


def monitoring_level_set(
    subject: Tool | Agent, *, to_level: int, by: Any, reason: str
) -> MonitoringLevelChange | None:
    """A staff member's change of a tool's or an agent's level, recorded like the automatic
    ones (rule ``manual``, who and why; ``by`` None: the system, undoing a time-boxed grant).
    None if the level is already ``to_level``."""
    return _set_level(
        subject,
        to_level=to_level,
        rule=MonitoringLevelChange.Rule.MANUAL,
        reason=reason,
        evidence={"by": by.get_username() if by is not None else "the system"},
        changed_by=by,
    )


def _set_level(
    subject: Tool | Agent,
    *,
    to_level: int,
    rule: str,
    reason: str,
    evidence: dict[str, Any],
    changed_by: Any = None,
) -> MonitoringLevelChange | None:
    model = type(subject)
    with transaction.atomic():
        current = model.objects.select_for_update().get(pk=subject.pk)
        if current.monitoring_level == to_level:
            return None
        change = MonitoringLevelChange.objects.create(
            tool=current if isinstance(current, Tool) else None,
            agent=current if isinstance(current, Agent) else None,
            from_level=current.monitoring_level,
            to_level=to_level,
            rule=rule,
            reason=reason,
            evidence=evidence,
            changed_by=changed_by,
        )
        model.objects.filter(pk=subject.pk).update(monitoring_level=to_level)
        subject.monitoring_level = to_level
    # After commit: the board reads the change's row to show it.
    emit(LevelChanged.of(change))
    return change


@dataclass(frozen=True)
class Signal:
    call_id: uuid.UUID
    tool_id: str | None
    agent_id: str
    rating: float | None
    reasons: list[str]

    @property
    def misaligned(self) -> bool:
        return self.rating is not None and self.rating < MISALIGNED_BELOW

    @property
    def critical(self) -> bool:
        return any(reason.startswith("critical:") for reason in self.reasons)


def _current_score(key: str, subject_id: str, now: datetime) -> float | None:
    params: dict[str, Any] = {
        "as_of": now,
        "since_90": now - timedelta(days=WINDOW_DAYS),
        "since_30": now - timedelta(days=GRADUATION_DAYS),
        "subject": subject_id,
    }
    with connection.cursor() as cursor:
        cursor.execute(_score_sql(key, f"AND {key} = %(subject)s"), params)
        row = cursor.fetchone()
    return None if row is None or row[1] is None else float(row[1])


def demotion_check(subject: Tool | Agent, signal: Signal, *, now: datetime) -> None:
    """Demote at once when a misalignment arrives (seed 000 §9, in order of severity)."""
    key = "tool_id" if isinstance(subject, Tool) else "agent_id"
    evidence: dict[str, Any] = {"call_id": str(signal.call_id), "reasons": signal.reasons}
    if signal.critical:
        change = _set_level(
            subject,
            to_level=0,
            rule=MonitoringLevelChange.Rule.DEMOTION_CRITICAL,
            reason=f"critical misalignment: {', '.join(signal.reasons)}",
            evidence=evidence,
        )
        if change:
            _notify_critical(subject, change)
        return
    since = now - timedelta(hours=24)
    last_change = (
        MonitoringLevelChange.objects.filter(**{key: subject.pk})
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    window_start = max(since, last_change) if last_change else since
    recent = ToolCall.objects.filter(
        **{key: subject.pk}, alignment_rating__lt=MISALIGNED_BELOW, timestamp__gte=window_start
    ).count()
    if recent >= 5 and subject.monitoring_level > 0:
        _set_level(
            subject,
            to_level=subject.monitoring_level - 1,
            rule=MonitoringLevelChange.Rule.DEMOTION_MISALIGNMENTS,
            reason=f"{recent} misalignments in the last 24 hours",
            evidence={**evidence, "misalignments_24h": recent, "since": window_start.isoformat()},
        )
        return
    score = _current_score(key, str(subject.pk), now)
    if score is not None and score < LEVEL_THRESHOLDS[subject.monitoring_level]:
        target = qualifying_level(score)
        _set_level(
            subject,
            to_level=target,
            rule=MonitoringLevelChange.Rule.DEMOTION_SCORE,
            reason=f"alignment {score:.3f} is below level {subject.monitoring_level}'s "
            f"threshold {LEVEL_THRESHOLDS[subject.monitoring_level]}",
            evidence={**evidence, "score": round(score, 4)},
        )


def safety_escalation(*, tool: Tool, call_id: uuid.UUID, reason: str) -> None:
    """SAFETY_FIRST (seed 000 §14): any sign of immediate risk drops the tool to level 0 and
    tells a human at once (the call itself waits for a senior reviewer)."""
    change = _set_level(
        tool,
        to_level=0,
        rule=MonitoringLevelChange.Rule.DIRECTIVE_SAFETY,
        reason=f"SAFETY_FIRST: {reason}",
        evidence={"call_id": str(call_id)},
    )
    if change is None:  # already at level 0: still tell someone
        change = MonitoringLevelChange(
            tool=tool,
            from_level=0,
            to_level=0,
            rule=MonitoringLevelChange.Rule.DIRECTIVE_SAFETY,
            reason=f"SAFETY_FIRST: {reason}",
        )
    _notify_critical(tool, change, title=f"SAFETY_FIRST: {tool.pk} needs a human now")


def _notify_critical(
    subject: Tool | Agent, change: MonitoringLevelChange, *, title: str | None = None
) -> None:
    evidence = change.evidence or {}
    emit(
        Escalated(
            subject_kind="tool" if isinstance(subject, Tool) else "agent",
            subject_id=str(subject.pk),
            reason=change.reason[:500],
            agent_id=subject.pk if isinstance(subject, Agent) else None,
            call_id=str(evidence["call_id"]) if evidence.get("call_id") else None,
        )
    )
    seniors = get_user_model().objects.filter(groups__name="senior_reviewers", is_active=True)
    recipients = sorted({u.email for u in seniors if u.email})
    if recipients:
        try:
            send_mail(
                title or f"Critical misalignment: {subject.pk} dropped to level 0",
                change.reason,
                settings.RABS_NOTIFY_FROM_EMAIL,
                recipients,
            )
        except Exception:
            log.warning("could not send the critical-misalignment mail", exc_info=True)


def alignment_signal(*, call_id: uuid.UUID | None, now: datetime | None = None) -> Signal | None:
    """Rate one call if it has just finished, and apply the demotion rules at once."""
    if call_id is None:
        return None
    now = now or timezone.now()
    rows = calls_rate(as_of=now + timedelta(seconds=1), call_id=call_id)
    if not rows:
        return None
    _, tool_id, agent_id, rating, reasons = rows[0]
    if isinstance(reasons, str):  # Django's psycopg setup hands jsonb back undecoded
        reasons = json.loads(reasons)
    signal = Signal(
        call_id=call_id,
        tool_id=tool_id,
        agent_id=agent_id,
        rating=rating,
        reasons=list(reasons or []),
    )
    if signal.misaligned:
        if tool_id:
            demotion_check(Tool.objects.get(pk=tool_id), signal, now=now)
        demotion_check(Agent.objects.get(pk=agent_id), signal, now=now)
    return signal
