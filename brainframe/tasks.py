"""Celery tasks of brainframe: thin wrappers that call services (beat schedule in
``rabs/celery.py``; services queue them by name through ``brainframe.queue``)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from brainframe.embeddings.indexer import IndexerUnavailable
from brainframe.jobs import job_run
from brainframe.services.memory.bucket_checker import origin_classify
from brainframe.services.memory.indexing import embed_rows
from brainframe.services.memory.observations import observation_record_classified


@shared_task
def run_scheduled_job(name: str) -> Any:
    return job_run(name=name)


@shared_task(autoretry_for=(IndexerUnavailable,), retry_backoff=30, max_retries=5)
def embed_rows_task(kind: str, ids: list[str]) -> int:
    return embed_rows(kind, ids)


@shared_task(autoretry_for=(IndexerUnavailable,), retry_backoff=30, max_retries=5)
def classify_origin_task(origin_id: str) -> str | None:
    result = origin_classify(origin_id)
    return result.bucket if result else None


@shared_task
def record_observation_task(agent_id: str | None, data: dict[str, Any]) -> dict[str, Any]:
    """An observation that arrived without a bucket: classify it, then record it."""
    return observation_record_classified(agent_id=agent_id, data=data)
