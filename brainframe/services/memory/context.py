"""What an agent loads at the start of a task: notes, the directives preamble, the constraints
governing its tools (for per-step selection), observations."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from brainframe.models import (
    Agent,
    AgentNote,
    AgentTask,
    ContextBucketEntry,
    PrimeDirective,
    Tool,
)
from brainframe.services.access.held import reading_principals
from brainframe.services.access.sharing import memory_readable
from brainframe.services.memory.cards import card_as_dict, cards_due
from brainframe.services.memory.search import semantic_search
from brainframe.services.registry.constraints import agent_constraints


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

    Observations are found by semantic search (``brainframe.services.memory.search``) on
    ``query`` or, failing that, on the task's title and description, within the task tools'
    buckets (or ``bucket``). With no text to search on, the highest-scoring observations come first.
    Observations whose score decayed below ``RABS_MIN_SURFACING_SCORE`` do not surface.
    """
    notes = (
        AgentNote.objects.filter(agent=agent, active=True)
        .select_related("created_by")
        .order_by("-priority", "created_at")
    )
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
        observations: list[dict[str, Any]] = [
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
        observations = _with_provenance(observations, agent=agent, task=task)
        # A less reliable memory ranks lower (rank × confidence), most used first among equals.
        observations.sort(key=lambda o: (-o["rank"] * o["confidence"], -o["access_count"]))
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
            for o in entries.order_by(
                (F("current_score") * F("confidence")).desc(), "-access_count"
            )[:limit]
        ]
        observations = _with_provenance(observations, agent=agent, task=task)
    note_rows = list(notes)
    cards = cards_due(agent)
    _accessed([uuid.UUID(str(o["id"])) for o in observations], [n.pk for n in note_rows])
    return {
        "notes": [
            {
                "id": str(n.id),
                "note_type": n.note_type,
                "content": n.content,
                "priority": n.priority,
                "provenance": {
                    "created_by": n.author or (n.created_by.get_username() if n.created_by else ""),
                    "source": n.source,
                    "confidence": n.confidence,
                    "created_at": n.created_at.isoformat(),
                    "last_accessed_at": _iso(n.last_accessed_at),
                    "access_count": n.access_count,
                },
            }
            for n in note_rows
        ],
        "directives_preamble": directives_preamble(),
        # The same rules and more, each with the tools it governs (seed 002: the runtime shows
        # the model only those of the current plan step's tools).
        "constraints": agent_constraints(agent=agent),
        "search_mode": mode,
        "observations": observations,
        # Learning cards due now (docs/ledgers.md): lessons from reviewers, until learned.
        "learning_cards": [card_as_dict(c) for c in cards],
    }


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def _with_provenance(
    observations: list[dict[str, Any]], *, agent: Agent, task: AgentTask | None
) -> list[dict[str, Any]]:
    """Each observation's provenance as it stood before this read; those the agent may not
    read (sharing: docs/access.md) are withheld, every decision kept."""
    rows = {
        str(row["id"]): row
        for row in ContextBucketEntry.objects.filter(pk__in=[o["id"] for o in observations]).values(
            "id",
            "created_by",
            "source",
            "confidence",
            "created_at",
            "last_accessed_at",
            "access_count",
            "boundary",
            "share_policy",
            "participant_id",
            "data_class",
        )
    }
    readable = memory_readable(
        agent=agent,
        principals=reading_principals(agent, task),
        rows=[dict(r) for r in rows.values()],
    )
    kept = []
    for o in observations:
        if o["id"] not in readable:
            continue
        row: dict[str, Any] = dict(rows.get(o["id"], {}))
        o["confidence"] = row.get("confidence", 1.0)
        o["access_count"] = row.get("access_count", 0)
        o["provenance"] = {
            "created_by": row.get("created_by", ""),
            "source": row.get("source", ""),
            "confidence": o["confidence"],
            "created_at": _iso(row.get("created_at")),
            "last_accessed_at": _iso(row.get("last_accessed_at")),
            "access_count": o["access_count"],
        }
        kept.append(o)
    return kept


def _accessed(observation_ids: list[uuid.UUID], note_ids: list[uuid.UUID]) -> None:
    """Count this read on everything it returned (one statement per table)."""
    now = timezone.now()
    if observation_ids:
        ContextBucketEntry.objects.filter(pk__in=observation_ids).update(
            access_count=F("access_count") + 1, last_accessed_at=now
        )
    if note_ids:
        AgentNote.objects.filter(pk__in=note_ids).update(
            access_count=F("access_count") + 1, last_accessed_at=now
        )


def task_text(task: AgentTask) -> str:
    payload = task.payload if isinstance(task.payload, dict) else {}
    parts = [task.title, str(payload.get("description") or payload.get("instructions") or "")]
    return "\n".join(p for p in parts if p)
