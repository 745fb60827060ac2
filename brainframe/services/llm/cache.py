"""The model gateway's optional cache (seed 002 "semantic cache"): temperature-0 answers kept
per agent and model, reused for the same request (its hash) or, with the semantic cache, for
messages within the agent's cosine threshold and every other parameter identical."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pgvector.django import CosineDistance

from brainframe.embeddings.indexer import get_indexer
from brainframe.models import LLMBudget, LLMCacheEntry
from brainframe.services.llm.admission import Admitted

_NOT_THE_QUESTION = ("model", "stream", "stream_options", "user", "metadata")


def _hash(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def cacheable(budget: LLMBudget, body: dict[str, Any]) -> bool:
    """Temperature-0, plain (not streamed) chat requests of an agent whose cache is on."""
    return (
        budget.cache != LLMBudget.Cache.OFF
        and body.get("temperature") == 0
        and not body.get("stream")
    )


def _prompt_text(messages: Any) -> str:
    lines = []
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict):
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            lines.append(f"{message.get('role', '')}: {content or ''}")
    return "\n".join(lines)


@dataclass(frozen=True)
class CacheLookup:
    response: Any  # the answer to reuse, or None
    prompt_sha256: str
    params_sha256: str
    embedding: list[float] | None


def cache_lookup(admitted: Admitted, body: dict[str, Any]) -> CacheLookup:
    """The answer an identical request got (same agent, same model, same everything), or with
    the semantic cache the nearest one whose messages are within the agent's cosine threshold
    and whose other parameters (tools, response format, limits) are identical."""
    question = {k: v for k, v in body.items() if k not in _NOT_THE_QUESTION}
    params = {k: v for k, v in question.items() if k != "messages"}
    prompt_sha256, params_sha256 = (
        _hash([admitted.model, question]),
        _hash([admitted.model, params]),
    )
    mine = LLMCacheEntry.objects.filter(agent_id=admitted.agent_id, model=admitted.model)
    hit = mine.filter(prompt_sha256=prompt_sha256).values_list("response", flat=True).first()
    if hit is not None:
        return CacheLookup(_json(hit), prompt_sha256, params_sha256, None)
    embedding = None
    if admitted.budget.cache == LLMBudget.Cache.SEMANTIC:
        embedding = get_indexer().embed([_prompt_text(body.get("messages"))])[0]
        near = (
            mine.filter(params_sha256=params_sha256, embedding__isnull=False)
            .annotate(distance=CosineDistance("embedding", embedding))
            .filter(distance__lte=1 - admitted.budget.cache_threshold)
            .order_by("distance")
            .values_list("response", flat=True)
            .first()
        )
        if near is not None:
            return CacheLookup(_json(near), prompt_sha256, params_sha256, embedding)
    return CacheLookup(None, prompt_sha256, params_sha256, embedding)


def cache_store(admitted: Admitted, lookup: CacheLookup, response: Any) -> None:
    LLMCacheEntry.objects.get_or_create(
        agent_id=admitted.agent_id,
        model=admitted.model,
        prompt_sha256=lookup.prompt_sha256,
        defaults={
            "params_sha256": lookup.params_sha256,
            "embedding": lookup.embedding,
            "response": response,
        },
    )


def _json(value: Any) -> Any:
    # Django's psycopg set-up may hand jsonb back as text.
    return json.loads(value) if isinstance(value, str) else value
