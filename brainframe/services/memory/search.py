"""Semantic search over observations (context buckets) and reasons (reason_log).

Ranking, for each hit:

- ``similarity`` is the cosine similarity of the query's embedding and the row's vector
  (HNSW, ``vector_cosine_ops``). A row whose vector is not computed yet is still found by
  PostgreSQL full-text search; its similarity is then the text rank normalised to 0–1
  (``ts_rank_cd``, normalisation 32).
- ``score = similarity × (0.5 + 0.5 × w)``, where for an observation
  ``w = current_score / (current_score + 1)`` (its relevance: severity, frequency, decay…), so a
  stale observation (decay 0.027) weighs about half as much as a fresh one of the same
  similarity. A reason has no relevance score and counts as ``w = 0.5``.

Filters: ``buckets`` (a reason's bucket is its tool's), ``entity`` (observations only, so reasons
are left out when it is given), ``agent`` (reasons of that agent only: one agent never reads
another's reasons), ``min_relevance`` (observations below it do not surface).

If the embedding backend is down, search still answers from full text (``mode="text"``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector
from django.db import connection, models, transaction
from pgvector.django import CosineDistance

from brainframe.embeddings.indexer import Indexer, IndexerUnavailable, get_indexer
from brainframe.models import Agent, ContextBucketEntry, ReasonLog

logger = logging.getLogger(__name__)

REASON_RELEVANCE_WEIGHT = 0.5
#: HNSW candidates read per query (``hnsw.ef_search``), so filtered searches still fill a page.
EF_SEARCH = 200


@dataclass(frozen=True)
class SearchHit:
    kind: str  # "observation" or "reason"
    id: uuid.UUID
    text: str
    bucket: str | None
    entity: str | None
    pattern_type: str | None
    similarity: float
    relevance: float | None
    score: float
    matched_by: str  # "vector" or "text"

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": str(self.id),
            "text": self.text,
            "bucket": self.bucket,
            "entity": self.entity,
            "pattern_type": self.pattern_type,
            "similarity": round(self.similarity, 4),
            "relevance": None if self.relevance is None else round(self.relevance, 4),
            "score": round(self.score, 4),
            "matched_by": self.matched_by,
        }


@dataclass(frozen=True)
class SearchResult:
    query: str
    mode: str  # "semantic" or "text"
    hits: list[SearchHit]


def _weight(relevance: float | None) -> float:
    w = REASON_RELEVANCE_WEIGHT if relevance is None else relevance / (relevance + 1.0)
    return 0.5 + 0.5 * w


def _observations(
    buckets: Sequence[str], entity: str | None, min_relevance: float | None
) -> models.QuerySet[ContextBucketEntry]:
    qs = ContextBucketEntry.objects.all()
    if buckets:
        qs = qs.filter(bucket__in=buckets)
    if entity:
        qs = qs.filter(entity__iexact=entity)
    if min_relevance is not None:
        qs = qs.filter(current_score__gte=min_relevance)
    return qs


def _reasons(buckets: Sequence[str], agent: Agent | None) -> models.QuerySet[ReasonLog]:
    qs = ReasonLog.objects.select_related("tool")
    if buckets:
        qs = qs.filter(tool__context_bucket__in=buckets)
    if agent is not None:
        qs = qs.filter(agent=agent)
    return qs


def _hit(kind: str, row: Any, similarity: float, matched_by: str) -> SearchHit:
    if kind == "observation":
        relevance: float | None = row.current_score
        text, bucket, entity = row.observation, row.bucket, row.entity
        pattern_type = row.pattern_type
    else:
        relevance = None
        text, entity, pattern_type = row.thought, None, None
        bucket = row.tool.context_bucket if row.tool_id else None
    similarity = max(0.0, min(1.0, similarity))
    return SearchHit(
        kind=kind,
        id=row.pk,
        text=text,
        bucket=bucket,
        entity=entity,
        pattern_type=pattern_type,
        similarity=similarity,
        relevance=relevance,
        score=similarity * _weight(relevance),
        matched_by=matched_by,
    )


def _vector_hits(
    kind: str, qs: models.QuerySet[Any], vector: list[float], k: int
) -> list[SearchHit]:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.ef_search = %s", [max(EF_SEARCH, k)])
        rows = list(
            qs.exclude(vector=None)
            .annotate(distance=CosineDistance("vector", vector))
            .order_by("distance")[:k]
        )
    return [_hit(kind, row, 1.0 - row.distance, "vector") for row in rows]


def _text_hits(
    kind: str, qs: models.QuerySet[Any], query: str, k: int, *, unembedded_only: bool
) -> list[SearchHit]:
    field = "observation" if kind == "observation" else "thought"
    if unembedded_only:
        qs = qs.filter(vector=None)
    search_query = SearchQuery(query, search_type="websearch", config="english")
    rows = list(
        qs.annotate(
            rank=SearchRank(SearchVector(field, config="english"), search_query, normalization=32)
        )
        .filter(rank__gt=0)
        .order_by("-rank")[:k]
    )
    return [_hit(kind, row, float(row.rank), "text") for row in rows]


def semantic_search(
    query: str,
    *,
    kinds: Sequence[str] = ("observation", "reason"),
    buckets: Sequence[str] = (),
    entity: str | None = None,
    agent: Agent | None = None,
    min_relevance: float | None = None,
    limit: int = 10,
    indexer: Indexer | None = None,
) -> SearchResult:
    """The ``limit`` best observations and reasons for ``query``, best first."""
    query = query.strip()
    if not query:
        return SearchResult(query=query, mode="semantic", hits=[])
    sources: list[tuple[str, models.QuerySet[Any]]] = []
    if "observation" in kinds:
        sources.append(("observation", _observations(buckets, entity, min_relevance)))
    if "reason" in kinds and not entity:
        sources.append(("reason", _reasons(buckets, agent)))

    vector: list[float] | None = None
    try:
        vector = (indexer or get_indexer()).embed([query])[0]
    except IndexerUnavailable as exc:
        logger.warning("semantic search answering from full text only: %s", exc)

    # Over-fetch so re-ranking by relevance can promote a slightly less similar hit.
    k = max(limit * 4, 40)
    hits: list[SearchHit] = []
    for kind, qs in sources:
        if vector is not None:
            hits += _vector_hits(kind, qs, vector, k)
        hits += _text_hits(kind, qs, query, k, unembedded_only=vector is not None)
    hits.sort(key=lambda h: h.score, reverse=True)
    return SearchResult(
        query=query, mode="semantic" if vector is not None else "text", hits=hits[:limit]
    )
