"""The bucket checker: which of the 20 context buckets does a text belong to, and how sure are we.

For each bucket it combines two signals, both editable by staff on ``ContextBucketDefinition``:

- **similarity**: the text's embedding against the bucket's prototype (its label and scope plus
  its exemplars): ``0.5 × cos(text, mean of prototype vectors) + 0.5 × max cos(text, exemplar)``;
- **keyword rules**: each distinct keyword found (word boundaries, plural ``s``/``es`` allowed)
  adds ``KEYWORD_WEIGHT``, counting at most ``MAX_KEYWORD_HITS``.

``confidence`` is the softmax of the combined scores at temperature ``TEMPERATURE``, so the
confidences over all 20 buckets sum to 1. The answer lists the best bucket and any other whose
confidence is at least ``SECONDARY_CONFIDENCE`` (at most three). Without an embedding model the
checker falls back to keywords alone (``method="keywords"``); a text with no keyword then goes
to ``comms_public_other`` ("general inbound") with low confidence.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from brainframe.bucket_hints import BUCKET_HINTS
from brainframe.choices import BUCKET_SCOPES, ContextBucket
from brainframe.embeddings.indexer import Indexer, IndexerUnavailable, get_indexer
from brainframe.models import ContextBucketDefinition, OriginRegistry

logger = logging.getLogger(__name__)

KEYWORD_WEIGHT = 0.06
MAX_KEYWORD_HITS = 3
TEMPERATURE = 0.04
SECONDARY_CONFIDENCE = 0.25
MAX_BUCKETS = 3
FALLBACK_BUCKET = ContextBucket.COMMS_PUBLIC_OTHER.value


@dataclass(frozen=True)
class BucketGuess:
    bucket: str
    confidence: float
    similarity: float | None
    keywords: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "bucket": self.bucket,
            "confidence": round(self.confidence, 4),
            "similarity": None if self.similarity is None else round(self.similarity, 4),
            "keywords": list(self.keywords),
        }


@dataclass(frozen=True)
class Classification:
    guesses: list[BucketGuess]
    method: str  # "embedding+keywords" or "keywords"
    ranking: list[str] = field(default_factory=list)  # every bucket, best first

    @property
    def bucket(self) -> str:
        return self.guesses[0].bucket

    @property
    def confidence(self) -> float:
        return self.guesses[0].confidence

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method, "buckets": [g.as_dict() for g in self.guesses]}


@dataclass(frozen=True)
class _Rules:
    buckets: list[str]
    patterns: list[re.Pattern[str] | None]
    prototype_texts: list[list[str]]
    digest: str


def _keyword_pattern(keywords: list[str]) -> re.Pattern[str] | None:
    words = sorted({k.strip().lower() for k in keywords if k.strip()}, key=len, reverse=True)
    if not words:
        return None
    alternatives = "|".join(re.escape(w) for w in words)
    return re.compile(rf"(?<![\w@])({alternatives})(?:e?s)?(?![\w])")


def rules_from(rows: list[ContextBucketDefinition]) -> _Rules:
    """The checker's rules from bucket definitions (saved rows, or unsaved ones for evaluation)."""
    labels = dict(ContextBucket.choices)
    texts = [[f"{labels[r.bucket]}: {r.scope}", *r.exemplars] for r in rows]
    digest = hashlib.sha256(
        repr([(r.bucket, r.scope, r.keywords, r.exemplars) for r in rows]).encode()
    ).hexdigest()
    return _Rules(
        buckets=[r.bucket for r in rows],
        patterns=[_keyword_pattern(r.keywords) for r in rows],
        prototype_texts=texts,
        digest=digest,
    )


def default_definitions() -> list[ContextBucketDefinition]:
    """The seeded definitions (scopes and starting hints), unsaved."""
    return [
        ContextBucketDefinition(bucket=b, number=i, scope=BUCKET_SCOPES[b], **BUCKET_HINTS[b])
        for i, b in enumerate(ContextBucket.values, start=1)
    ]


def current_rules() -> _Rules:
    """The rules as staff left them in the admin (the seeded defaults before the seed runs)."""
    rows = list(ContextBucketDefinition.objects.order_by("number"))
    return rules_from(rows or default_definitions())


# Prototype vectors per (indexer, rules digest): recomputed only when staff edit the rules.
_prototypes: dict[tuple[str, str], tuple[np.ndarray, list[np.ndarray]]] = {}
_prototype_lock = threading.Lock()


def _prototype_vectors(rules: _Rules, indexer: Indexer) -> tuple[np.ndarray, list[np.ndarray]]:
    key = (indexer.name, rules.digest)
    with _prototype_lock:
        if key not in _prototypes:
            flat = [t for texts in rules.prototype_texts for t in texts]
            vectors = np.asarray(indexer.embed(flat), dtype=np.float32)
            per_bucket: list[np.ndarray] = []
            means = []
            start = 0
            for texts in rules.prototype_texts:
                block = vectors[start : start + len(texts)]
                start += len(texts)
                per_bucket.append(block)
                mean = block.mean(axis=0)
                means.append(mean / (np.linalg.norm(mean) or 1.0))
            _prototypes.clear()  # one live rule set per indexer is enough
            _prototypes[key] = (np.vstack(means), per_bucket)
        return _prototypes[key]


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower())


def bucket_classify(
    text: str, *, indexer: Indexer | None = None, rules: _Rules | None = None
) -> Classification:
    """Classify ``text`` into one or more buckets with a confidence."""
    rules = rules or current_rules()
    lowered = _normalise(text)
    hits: list[tuple[str, ...]] = []
    for pattern in rules.patterns:
        found = tuple(sorted({m.group(1) for m in pattern.finditer(lowered)})) if pattern else ()
        hits.append(found)
    keyword_scores = np.array(
        [min(len(h), MAX_KEYWORD_HITS) * KEYWORD_WEIGHT for h in hits], dtype=np.float64
    )

    similarities: np.ndarray | None = None
    try:
        indexer = indexer or get_indexer()
        means, per_bucket = _prototype_vectors(rules, indexer)
        vector = np.asarray(indexer.embed([text])[0], dtype=np.float32)
        mean_sim = means @ vector
        best_exemplar = np.array([float((block @ vector).max()) for block in per_bucket])
        similarities = 0.5 * mean_sim + 0.5 * best_exemplar
    except IndexerUnavailable as exc:
        logger.warning("bucket checker without embeddings: %s", exc)

    if similarities is not None:
        scores = similarities + keyword_scores
        method = "embedding+keywords"
    elif keyword_scores.any():
        scores = keyword_scores
        method = "keywords"
    else:
        scores = np.array([1.0 if b == FALLBACK_BUCKET else 0.0 for b in rules.buckets])
        method = "keywords"

    weights = np.exp((scores - scores.max()) / TEMPERATURE)
    confidences = weights / weights.sum()
    if method == "keywords" and not keyword_scores.any():
        confidences = confidences * 0.1  # a guess, and it says so
    order = list(np.argsort(-scores, kind="stable"))
    guesses = [
        BucketGuess(
            bucket=rules.buckets[i],
            confidence=float(confidences[i]),
            similarity=None if similarities is None else float(similarities[i]),
            keywords=hits[i],
        )
        for rank, i in enumerate(order[:MAX_BUCKETS])
        if rank == 0 or confidences[i] >= SECONDARY_CONFIDENCE
    ]
    return Classification(guesses=guesses, method=method, ranking=[rules.buckets[i] for i in order])


def origin_text(origin: OriginRegistry) -> str:
    """What an origin says, for the checker: its subject/body/text metadata and its reference."""
    meta = origin.metadata if isinstance(origin.metadata, dict) else {}
    parts = [
        str(meta[key])
        for key in ("subject", "title", "summary", "text", "body", "transcript")
        if meta.get(key)
    ]
    return "\n".join(parts) or origin.source_ref


def origin_classify(origin_id: Any, *, indexer: Indexer | None = None) -> Classification | None:
    """Fill in an origin's bucket and confidence (once; a classified origin is left alone)."""
    origin = OriginRegistry.objects.filter(pk=origin_id, bucket="").first()
    if origin is None:
        return None
    result = bucket_classify(origin_text(origin), indexer=indexer)
    OriginRegistry.objects.filter(pk=origin.pk, bucket="").update(
        bucket=result.bucket, bucket_confidence=round(result.confidence, 6)
    )
    return result
