"""Observations in the context buckets: recording with reinforcement (seed 000 §5–6)."""

from __future__ import annotations

from typing import Any

from django.db import connection
from psycopg.types.json import Jsonb

from brainframe.choices import MemorySource
from brainframe.events import MemoryRecorded, emit
from brainframe.models import Agent, ContextBucketEntry
from brainframe.services.memory.bucket_checker import bucket_classify
from brainframe.services.memory.indexing import index_after_commit

# One statement: a repeat of (bucket, entity, pattern_type) reinforces the existing row —
# frequency + 1, decay back to 1.0, score recomputed — atomically, so concurrent writers never
# lose an increment.
_UPSERT = """
INSERT INTO context_buckets AS cb (
    id, bucket, pattern_type, entity, observation, scoring, severity, frequency, decay,
    repeatable, family_boost, current_score, source_agent_id, embedding_model,
    created_at, last_reinforced_at, created_by, source, confidence, access_count
) VALUES (
    gen_random_uuid(), %(bucket)s, %(pattern_type)s, %(entity)s, %(observation)s, %(scoring)s,
    %(severity)s, 1, 1.0, %(repeatable)s,
    -- family boost: 1.0 + 0.25 per other entry about this entity in this bucket, at most 2.0
    LEAST(2.0, 1.0 + 0.25 * (SELECT COUNT(*) FROM context_buckets o
                              WHERE o.bucket = %(bucket)s AND o.entity = %(entity)s)),
    %(severity)s * %(repeatable)s * LEAST(2.0, 1.0 + 0.25 * (
        SELECT COUNT(*) FROM context_buckets o
         WHERE o.bucket = %(bucket)s AND o.entity = %(entity)s)),
    %(agent_id)s, '', now(), now(), %(created_by)s, %(source)s, %(confidence)s, 0
)
ON CONFLICT (bucket, entity, pattern_type) DO UPDATE SET
    frequency = cb.frequency + 1,
    decay = 1.0,
    observation = EXCLUDED.observation,
    -- new words need a new vector (embedded after commit); the same words keep theirs
    vector = CASE WHEN cb.observation = EXCLUDED.observation THEN cb.vector END,
    embedding_model = CASE WHEN cb.observation = EXCLUDED.observation
                           THEN cb.embedding_model ELSE '' END,
    severity = GREATEST(cb.severity, EXCLUDED.severity),
    current_score = GREATEST(cb.severity, EXCLUDED.severity) * (cb.frequency + 1) * 1.0
                    * cb.repeatable * cb.family_boost,
    last_reinforced_at = now(),
    -- a repeat from a more reliable source raises the confidence; nothing lowers it here
    confidence = GREATEST(cb.confidence, EXCLUDED.confidence)
RETURNING id, (xmax = 0) AS created, vector IS NULL AS unembedded
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
    scoring: dict[str, Any] | None = None,
    source: str = MemorySource.API,
    confidence: float = 1.0,
    created_by: str = "",
) -> tuple[ContextBucketEntry, bool]:
    """Record an observation, or reinforce the existing one. Returns (entry, created).

    Provenance (seed 001): ``created_by`` (default ``agent:<id>``, or ``system``), ``source``
    (session, api, scheduled, person, staff) and ``confidence`` 0–1 are kept with it; the
    context endpoint counts each time it is read.

    The row is stored without a vector; its embedding is queued for after the commit.
    """
    params: dict[str, Any] = {
        "scoring": Jsonb(scoring or {}),
        "bucket": bucket,
        "entity": entity,
        "pattern_type": pattern_type,
        "observation": observation,
        "severity": severity,
        "repeatable": repeatable,
        "agent_id": agent.agent_id if agent else None,
        "created_by": created_by or (f"agent:{agent.agent_id}" if agent else "system"),
        "source": source,
        "confidence": confidence,
    }
    with connection.cursor() as cursor:
        cursor.execute(_UPSERT, params)
        entry_id, created, unembedded = cursor.fetchone()
    if unembedded:
        index_after_commit("observation", [entry_id])
    emit(
        MemoryRecorded(
            kind="observation" if created else "observation_reinforced",
            entry_id=str(entry_id),
            agent_id=params["agent_id"],
            bucket=bucket,
            source=params["created_by"],
        )
    )
    return ContextBucketEntry.objects.get(pk=entry_id), bool(created)


def observation_record_classified(*, agent_id: str | None, data: dict[str, Any]) -> dict[str, Any]:
    """Record an observation that came without a bucket, in the bucket the checker picks.

    The checker's answer (every bucket it considered likely, with confidences) is kept in the
    entry's ``scoring`` so a reviewer can see why it landed there.
    """
    result = bucket_classify(f"{data['entity']}: {data['observation']}")
    agent = Agent.objects.filter(agent_id=agent_id).first() if agent_id else None
    entry, created = observation_record(
        agent=agent,
        bucket=result.bucket,
        scoring={"bucket_checker": result.as_dict()},
        **{k: v for k, v in data.items() if k != "bucket"},
    )
    return {
        "id": str(entry.id),
        "created": created,
        "bucket": entry.bucket,
        "bucket_confidence": round(result.confidence, 4),
    }
