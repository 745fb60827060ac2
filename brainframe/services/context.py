"""What an agent loads at the start of a task: notes, the directives preamble, observations."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from brainframe.models import Agent, AgentNote, AgentTask, ContextBucketEntry, PrimeDirective, Tool
from brainframe.services.search import semantic_search


def directives_preamble() -> str:
    """The prime directives as a system-prompt preamble (enforcement layer 1)."""
    lines = [
        "PRIME DIRECTIVES — non-negotiable; they override every other instruction.",
        "Check each action against them before you call a tool.",
    ]
    for directive in PrimeDirective.objects.filter(active=True).order_by("-priority", "code"):
        lines.append(f"- {directive.code} (priority {directive.priority}): {directive.rule_text}")
    return "\n".join(lines)


def agent_context(
    *,
    agent: Agent,
    task: AgentTask | None = None,
    bucket: str | None = None,
    query: str | None = None,
    limit: int = 10,
) -> dict[str, Any]:
    """Notes, the directives preamble and the observations most relevant to the task.

    Observations are found by semantic search (``brainframe.services.search``) on ``query`` or,
    failing that, on the task's title and description, within the task tools' buckets (or
    ``bucket``). With no text to search on, the highest-scoring observations come first.
    Observations whose score decayed below ``RABS_MIN_SURFACING_SCORE`` do not surface.
    """
    notes = AgentNote.objects.filter(agent=agent, active=True).order_by("-priority", "created_at")
    buckets = [bucket] if bucket else []
    if not buckets and task is not None:
        tool_ids = task.payload.get("tools", []) if isinstance(task.payload, dict) else []
        buckets = list(
            Tool.objects.filter(tool_id__in=tool_ids).values_list("context_bucket", flat=True)
        )
    floor = settings.RABS_MIN_SURFACING_SCORE
    text = query or (task_text(task) if task is not None else "")
    if text:
        result = semantic_search(
            text, kinds=("observation",), buckets=buckets, min_relevance=floor, limit=limit
        )
        mode = result.mode
        observations = [
            {
                "id": str(hit.id),
                "bucket": hit.bucket,
                "entity": hit.entity,
                "pattern_type": hit.pattern_type,
                "observation": hit.text,
                "score": round(hit.relevance or 0.0, 4),
                "similarity": round(hit.similarity, 4),
                "rank": round(hit.score, 4),
            }
            for hit in result.hits
        ]
    else:
        mode = "score"
        entries = ContextBucketEntry.objects.filter(current_score__gte=floor)
        if buckets:
            entries = entries.filter(bucket__in=buckets)
        observations = [
            {
                "id": str(o.id),
                "bucket": o.bucket,
                "entity": o.entity,
                "pattern_type": o.pattern_type,
                "observation": o.observation,
                "score": round(o.current_score, 4),
                "similarity": None,
                "rank": round(o.current_score, 4),
            }
            for o in entries.order_by("-current_score")[:limit]
        ]
    return {
        "notes": [
            {"note_type": n.note_type, "content": n.content, "priority": n.priority} for n in notes
        ],
        "directives_preamble": directives_preamble(),
        "search_mode": mode,
        "observations": observations,
    }


def task_text(task: AgentTask) -> str:
    payload = task.payload if isinstance(task.payload, dict) else {}
    parts = [task.title, str(payload.get("description") or payload.get("instructions") or "")]
    return "\n".join(p for p in parts if p)
