"""Embedding rows off the request path: queue after commit, embed in Celery, sweep what is left.

Two kinds of row carry a vector: observations (``context_buckets``) and reasons (``reason_log``).
A row is stored first, without a vector, and is searchable by text at once; when its transaction
commits, ``index_after_commit`` queues a Celery task that embeds it. If the queue is down at that
moment nothing is lost: ``index_pending`` (beat, every five minutes, and ``manage.py reembed``)
embeds every row whose vector is missing or was made by another model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import models, transaction

from brainframe.embeddings.indexer import Indexer, IndexerUnavailable, get_indexer
from brainframe.models import ContextBucketEntry, OriginRegistry, ReasonLog
from brainframe.queue import CLASSIFY_ORIGIN, EMBED_ROWS, enqueue
from brainframe.services.memory.bucket_checker import origin_classify
from brainframe.services.memory.discovery import discovery_index

logger = logging.getLogger(__name__)


def observation_text(entry: ContextBucketEntry) -> str:
    return f"{entry.entity} ({entry.pattern_type.replace('_', ' ')}): {entry.observation}"


def reason_text(reason: ReasonLog) -> str:
    return reason.thought


@dataclass(frozen=True)
class Kind:
    model: type[models.Model]
    text: Callable[[Any], str]
    #: Columns whose value the text was made from; the vector is written only if they still match.
    source_fields: tuple[str, ...]


KINDS: dict[str, Kind] = {
    "observation": Kind(
        ContextBucketEntry, observation_text, ("entity", "pattern_type", "observation")
    ),
    "reason": Kind(ReasonLog, reason_text, ("thought",)),
}


def index_after_commit(kind: str, ids: Iterable[Any]) -> None:
    """Queue embedding of these rows once the current transaction commits."""
    if kind not in KINDS:
        raise KeyError(kind)
    id_list = [str(i) for i in ids]
    if not id_list or not settings.RABS_INDEX_ON_COMMIT:
        return

    def queue() -> None:
        try:
            enqueue(EMBED_ROWS, kind, id_list)
        except Exception:  # the queue is down: the sweep embeds these rows later
            logger.warning("could not queue embedding of %d %s rows", len(id_list), kind)

    transaction.on_commit(queue)


def classify_origin_after_commit(origin_id: Any) -> None:
    """Queue the bucket checker for a newly registered origin once the transaction commits."""
    if not settings.RABS_INDEX_ON_COMMIT:
        return

    def queue() -> None:
        try:
            enqueue(CLASSIFY_ORIGIN, str(origin_id))
        except Exception:  # the queue is down: the sweep classifies it later
            logger.warning("could not queue bucket classification of origin %s", origin_id)

    transaction.on_commit(queue)


def embed_rows(kind: str, ids: Sequence[Any], *, indexer: Indexer | None = None) -> int:
    """Embed these rows now. Returns how many vectors were written."""
    spec = KINDS[kind]
    indexer = indexer or get_indexer()
    rows = list(spec.model.objects.filter(pk__in=list(ids)))  # type: ignore[attr-defined]
    if not rows:
        return 0
    vectors = indexer.embed([spec.text(row) for row in rows])
    written = 0
    with transaction.atomic():
        for row, vector in zip(rows, vectors, strict=True):
            # A reinforcement may have rewritten the text meanwhile; then its own task embeds it.
            unchanged = {field: getattr(row, field) for field in spec.source_fields}
            written += spec.model.objects.filter(pk=row.pk, **unchanged).update(  # type: ignore[attr-defined]
                vector=vector, embedding_model=indexer.name
            )
    return written


def pending(kind: str, model_name: str) -> models.QuerySet[Any]:
    """Rows of this kind without a vector from ``model_name``."""
    manager = KINDS[kind].model.objects  # type: ignore[attr-defined]
    return manager.filter(
        models.Q(vector__isnull=True) | ~models.Q(embedding_model=model_name)
    ).order_by("pk")


def index_pending(
    *,
    indexer: Indexer | None = None,
    kinds: Sequence[str] = tuple(KINDS),
    batch_size: int = 64,
    limit: int | None = None,
    progress: Callable[[str, int], None] | None = None,
) -> dict[str, int]:
    """Embed every row whose vector is missing or from another model, batch by batch.

    Each batch commits on its own, so an interrupted run keeps what it did and the next run
    resumes where it stopped. ``limit`` bounds the rows per kind (the periodic sweep uses it).
    """
    indexer = indexer or get_indexer()
    done: dict[str, int] = {}
    for kind in kinds:
        done[kind] = 0
        after: Any = None
        while limit is None or done[kind] < limit:
            size = batch_size if limit is None else min(batch_size, limit - done[kind])
            batch = pending(kind, indexer.name)
            if after is not None:
                batch = batch.filter(pk__gt=after)
            ids = list(batch.values_list("pk", flat=True)[:size])
            if not ids:
                break
            embed_rows(kind, ids, indexer=indexer)
            after = ids[-1]
            done[kind] += len(ids)
            if progress:
                progress(kind, len(ids))
    return done


def index_sweep(*, limit: int = 500) -> dict[str, Any]:
    """The periodic catch-up: embed rows left without a vector, classify unclassified origins."""
    try:
        indexer = get_indexer()
        done: dict[str, Any] = dict(index_pending(indexer=indexer, limit=limit))
    except IndexerUnavailable as exc:
        logger.warning("index sweep: embeddings unavailable: %s", exc)
        return {"error": str(exc)}
    origins = (
        OriginRegistry.objects.filter(bucket="")
        .exclude(origin_type=OriginRegistry.OriginType.AGENT)
        .order_by("timestamp")
        .values_list("pk", flat=True)[:limit]
    )
    done["origins_classified"] = sum(
        origin_classify(pk, indexer=indexer) is not None for pk in list(origins)
    )
    done["discovery_embedded"] = discovery_index(limit=limit)
    return done
