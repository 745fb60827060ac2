"""What an agent loads at the start of a task: notes, the directives preamble, observations."""

from __future__ import annotations

from typing import Any

from brainframe.models import Agent, AgentNote, AgentTask, ContextBucketEntry, PrimeDirective, Tool


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
    *, agent: Agent, task: AgentTask | None = None, bucket: str | None = None, limit: int = 10
) -> dict[str, Any]:
    notes = AgentNote.objects.filter(agent=agent, active=True).order_by("-priority", "created_at")
    buckets = [bucket] if bucket else []
    if not buckets and task is not None:
        tool_ids = task.payload.get("tools", []) if isinstance(task.payload, dict) else []
        buckets = list(
            Tool.objects.filter(tool_id__in=tool_ids).values_list("context_bucket", flat=True)
        )
    observations = ContextBucketEntry.objects.all()
    if buckets:
        observations = observations.filter(bucket__in=buckets)
    return {
        "notes": [
            {"note_type": n.note_type, "content": n.content, "priority": n.priority} for n in notes
        ],
        "directives_preamble": directives_preamble(),
        "observations": [
            {
                "bucket": o.bucket,
                "entity": o.entity,
                "pattern_type": o.pattern_type,
                "observation": o.observation,
                "score": round(o.current_score, 4),
            }
            for o in observations.order_by("-current_score")[:limit]
        ],
    }
