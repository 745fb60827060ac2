"""The nightly trust job (seed 000 §14): rate the day's calls, score, snapshot, demote on score,
graduate. The rules it applies live in ``alignment``."""

from __future__ import annotations

from datetime import date, timedelta

from django.conf import settings
from django.db import connection

from brainframe.models import Agent, MonitoringLevelChange, Tool
from brainframe.services.trust.alignment import (
    GRADUATION_DAYS,
    LEVEL_THRESHOLDS,
    _set_level,
    calls_rate,
    end_of_day,
    qualifying_level,
    scores_update,
    snapshots_write,
)

#: An agent's autonomy cap (``brainframe.safety.policy.caps``) in SQL: null when it has none.
AUTONOMY_CAP_SQL = "(subj.caps #>> '{autonomy,max_level}')::int"


def graduation_run(*, day: date) -> list[MonitoringLevelChange]:
    """Promote every tool and agent whose next level's threshold held for 30 consecutive days,
    with no high-priority misalignment in those days and the minimum volume. One level a night;
    running it twice for the same day promotes nothing more."""
    first_day = day - timedelta(days=GRADUATION_DAYS - 1)
    min_volume = settings.RABS_GRADUATION_MIN_VOLUME
    changes: list[MonitoringLevelChange] = []
    thresholds = (
        "(VALUES " + ", ".join(f"({lvl}, {t})" for lvl, t in LEVEL_THRESHOLDS.items()) + ")"
    )
    for table, key, ceiling in (
        ("tools", "tool_id", "monitoring_ceiling"),
        # An agent never graduates past its autonomy cap (docs/access.md).
        (
            "agents",
            "agent_id",
            "LEAST(4, COALESCE((subj.caps #>> '{autonomy,max_level}')::int, 4))",
        ),
    ):
        sql = f"""
            SELECT subj.{key}, subj.monitoring_level, next.threshold,
                   COUNT(*) AS days, MIN(s.score) AS lowest
              FROM {table} subj
              JOIN {thresholds} AS next(level, threshold) ON next.level = subj.monitoring_level + 1
              JOIN alignment_snapshots s ON s.{key} = subj.{key}
             WHERE subj.monitoring_level < {ceiling}
               AND s.date BETWEEN %(first)s AND %(day)s
               AND s.score >= next.threshold
             GROUP BY subj.{key}, subj.monitoring_level, next.threshold
            HAVING COUNT(*) = {GRADUATION_DAYS}
               AND SUM(s.high_priority_30d) FILTER (WHERE s.date = %(day)s) = 0
               AND SUM(s.volume_30d) FILTER (WHERE s.date = %(day)s) >= %(min_volume)s
               AND NOT EXISTS (
                   SELECT 1 FROM monitoring_level_changes m
                    WHERE m.{key} = subj.{key} AND m.rule = 'graduation'
                      AND m.evidence ->> 'date' = %(day_text)s)
        """
        with connection.cursor() as cursor:
            cursor.execute(
                sql,
                {
                    "first": first_day,
                    "day": day,
                    "min_volume": min_volume,
                    "day_text": day.isoformat(),
                },
            )
            eligible = cursor.fetchall()
        model: type[Tool] | type[Agent] = Tool if table == "tools" else Agent
        for subject_id, level, threshold_value, days, lowest_value in eligible:
            threshold, lowest = float(threshold_value), float(lowest_value)
            subject = model.objects.get(pk=subject_id)
            change = _set_level(
                subject,
                to_level=level + 1,
                rule=MonitoringLevelChange.Rule.GRADUATION,
                reason=f"alignment ≥ {threshold} for {days} consecutive days (lowest "
                f"{lowest:.3f}), no high-priority misalignment, volume ≥ {min_volume}",
                evidence={
                    "date": day.isoformat(),
                    "threshold": threshold,
                    "days": days,
                    "lowest": round(lowest, 4),
                    "from_day": first_day.isoformat(),
                },
            )
            if change:
                changes.append(change)
    return changes


def alignment_nightly(*, day: date) -> dict[str, int]:
    """The nightly job for ``day``: rate, score, snapshot, demote on score, graduate."""
    as_of = end_of_day(day)
    rated = calls_rate(as_of=as_of)
    scores_update(as_of=as_of)
    snapshots_write(day=day)
    demoted = 0
    for model in (Tool, Agent):
        for subject in model.objects.filter(
            alignment_score_90d__isnull=False, monitoring_level__gt=0
        ):
            score = float(subject.alignment_score_90d)  # type: ignore[arg-type]
            if score < LEVEL_THRESHOLDS[subject.monitoring_level]:
                demoted += bool(
                    _set_level(
                        subject,
                        to_level=qualifying_level(score),
                        rule=MonitoringLevelChange.Rule.DEMOTION_SCORE,
                        reason=f"nightly score {score:.3f} is below level "
                        f"{subject.monitoring_level}'s threshold",
                        evidence={"date": day.isoformat(), "score": score},
                    )
                )
    graduated = graduation_run(day=day)
    return {"rated": len(rated), "demoted": demoted, "graduated": len(graduated)}
