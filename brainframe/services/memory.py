"""Observations in the context buckets: recording with reinforcement (seed 000 §5–6)."""

from __future__ import annotations

from typing import Any

from django.db import connection

from brainframe.models import Agent, ContextBucketEntry

# One statement: a repeat of (bucket, entity, pattern_type) reinforces the existing row —
# frequency + 1, decay back to 1.0, score recomputed — atomically, so concurrent writers never
# lose an increment.
_UPSERT = """
INSERT INTO context_buckets AS cb (
    id, bucket, pattern_type, entity, observation, scoring, severity, frequency, decay,
    repeatable, family_boost, current_score, source_agent_id, embedding_model,
    created_at, last_reinforced_at
) VALUES (
    gen_random_uuid(), %(bucket)s, %(pattern_type)s, %(entity)s, %(observation)s, '{}'::jsonb,
    %(severity)s, 1, 1.0, %(repeatable)s,
    -- family boost: 1.0 + 0.25 per other entry about this entity in this bucket, at most 2.0
    LEAST(2.0, 1.0 + 0.25 * (SELECT COUNT(*) FROM context_buckets o
                              WHERE o.bucket = %(bucket)s AND o.entity = %(entity)s)),
    %(severity)s * %(repeatable)s * LEAST(2.0, 1.0 + 0.25 * (
        SELECT COUNT(*) FROM context_buckets o
         WHERE o.bucket = %(bucket)s AND o.entity = %(entity)s)),
    %(agent_id)s, '', now(), now()
)
ON CONFLICT (bucket, entity, pattern_type) DO UPDATE SET
    frequency = cb.frequency + 1,
    decay = 1.0,
    observation = EXCLUDED.observation,
    severity = GREATEST(cb.severity, EXCLUDED.severity),
    current_score = GREATEST(cb.severity, EXCLUDED.severity) * (cb.frequency + 1) * 1.0
                    * cb.repeatable * cb.family_boost,
    last_reinforced_at = now()
RETURNING id, (xmax = 0) AS created
"""


def observation_record(
    *,
    agent: Agent | None,
    bucket: str,
    entity: str,
    pattern_type: str,
    observation: str,
    severity: int = 1,
    repeatable: float = 1.0,
) -> tuple[ContextBucketEntry, bool]:
    """Record an observation, or reinforce the existing one. Returns (entry, created)."""
    params: dict[str, Any] = {
        "bucket": bucket,
        "entity": entity,
        "pattern_type": pattern_type,
        "observation": observation,
        "severity": severity,
        "repeatable": repeatable,
        "agent_id": agent.agent_id if agent else None,
    }
    with connection.cursor() as cursor:
        cursor.execute(_UPSERT, params)
        entry_id, created = cursor.fetchone()
    return ContextBucketEntry.objects.get(pk=entry_id), bool(created)
