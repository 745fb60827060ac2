"""Discovery over tools and proven plans (seed 002's discovery layer): given a goal, the tools
and the plans that fit it, found three ways and answered together.

1. **Full text** (PostgreSQL): ``websearch_to_tsquery`` against each tool's id and description
   and each plan's goal and steps, ranked by ``ts_rank_cd``.
2. **Semantic** (pgvector): the goal's embedding against each entry's (cosine similarity);
   entries are embedded off the request path (``discovery_index``, in the index sweep) and, a
   few at a time, when a search finds them missing. Without the embedding backend, full text
   answers alone (``mode = "text"``).
3. **The dependency graph**: each plan's steps with the tools they used and the steps they
   depended on; for each tool, the plans that used it and how they ended.

What an agent is shown: tools it may call; its own plans (an agent does not read another's),
finished ones first (a failed plan is shown with its outcome, worth half); and the sandboxed
agents (itself included) by what they are for — name, role and description — which is how an
agent's smart routing (seed 003) picks the best agent for a message.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Case, When

from brainframe.embeddings.indexer import IndexerUnavailable, get_indexer
from brainframe.models import Agent, DiscoveryEntry, PlanRecord
from brainframe.selectors import tools_for_agent

log = logging.getLogger(__name__)

#: Entries embedded during a search at most (the rest wait for the index sweep).
EMBED_ON_SEARCH = 32
OUTCOME_WEIGHT = {"finished": 1.0, "running": 0.7, "saved": 0.6, "failed": 0.5}

_SYNC = """
WITH wanted AS (
    SELECT 'tool' AS kind, t.tool_id AS key, '' AS agent_id,
           t.tool_id || '. ' || replace(t.tool_id, '.', ' ') || '. ' || t.description AS text
      FROM tools t
    UNION ALL
    SELECT 'plan', p.plan_id, p.agent_id,
           p.goal || '. ' || COALESCE((
               SELECT string_agg(
                   COALESCE(s ->> 'intent', '') || ' (' ||
                   COALESCE((SELECT string_agg(x, ', ') FROM jsonb_array_elements_text(
                       CASE WHEN jsonb_typeof(s -> 'tools') = 'array' THEN s -> 'tools'
                            ELSE '[]'::jsonb END) AS x), '') || ')', '; ')
                 FROM jsonb_array_elements(
                     CASE WHEN jsonb_typeof(p.steps) = 'array' THEN p.steps
                          ELSE '[]'::jsonb END) AS s), '')
      FROM view_plans p
    UNION ALL
    SELECT 'agent', a.agent_id, a.agent_id,
           a.name || '. ' || a.role || '. ' || COALESCE(a.config ->> 'description', '')
      FROM agents a
     WHERE a.type = 'type_2_sandboxed' AND a.status <> 'paused'
)
INSERT INTO discovery_entries (kind, key, agent_id, text, vector, embedding_model, updated_at)
SELECT kind, key, agent_id, text, NULL, '', now() FROM wanted
ON CONFLICT (kind, key) DO UPDATE
   SET text = EXCLUDED.text, agent_id = EXCLUDED.agent_id, vector = NULL,
       embedding_model = '', updated_at = now()
 WHERE discovery_entries.text IS DISTINCT FROM EXCLUDED.text
"""


def discovery_sync() -> None:
    """Bring the entries' texts up to date with the tools and plans (one statement; an entry
    whose text changed loses its embedding until it is embedded again)."""
    with connection.cursor() as cursor:
        cursor.execute(_SYNC)
        cursor.execute(
            "DELETE FROM discovery_entries d WHERE (d.kind = 'tool' AND NOT EXISTS ("
            "SELECT 1 FROM tools t WHERE t.tool_id = d.key)) OR (d.kind = 'plan' AND NOT EXISTS"
            " (SELECT 1 FROM view_plans p WHERE p.plan_id = d.key)) OR (d.kind = 'agent' AND "
            "NOT EXISTS (SELECT 1 FROM agents a WHERE a.agent_id = d.key "
            "AND a.type = 'type_2_sandboxed' AND a.status <> 'paused'))"
        )


def discovery_index(*, limit: int = 500, sync: bool = True) -> int:
    """Embed entries that have no vector yet (``sync``: bring their texts up to date first).
    Returns how many; raises IndexerUnavailable."""
    if sync:
        discovery_sync()
    # Plans first (an agent's own experience), then the few agents (smart routing), then tools.
    waiting = list(
        DiscoveryEntry.objects.filter(vector__isnull=True).order_by(
            Case(When(kind="plan", then=0), When(kind="agent", then=1), default=2), "id"
        )[:limit]
    )
    if not waiting:
        return 0
    indexer = get_indexer()
    vectors = indexer.embed([entry.text for entry in waiting])
    model = str(indexer.name)[:120]
    for entry, vector in zip(waiting, vectors, strict=True):
        entry.vector, entry.embedding_model = vector, model
    DiscoveryEntry.objects.bulk_update(waiting, ["vector", "embedding_model"], batch_size=200)
    return len(waiting)


@dataclass(frozen=True)
class Found:
    kind: str
    key: str
    similarity: float
    text_rank: float

    @property
    def score(self) -> float:
        return max(self.similarity, self.text_rank)

    @property
    def matched_by(self) -> str:
        return "vector" if self.similarity >= self.text_rank else "text"


def _candidates(agent: Agent, query: str, vector: list[float] | None) -> list[Found]:
    tools = list(tools_for_agent(agent).values_list("tool_id", flat=True))
    params: dict[str, Any] = {"q": query, "tools": tools, "agent": agent.agent_id}
    similarity = "0.0"
    if vector is not None:
        params["v"] = "[" + ",".join(f"{x:.7f}" for x in vector) + "]"
        similarity = "CASE WHEN d.vector IS NULL THEN 0.0 ELSE 1 - (d.vector <=> %(v)s::vector) END"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT d.kind, d.key, {similarity} AS similarity,
                   ts_rank_cd(to_tsvector('english', d.text),
                              websearch_to_tsquery('english', %(q)s), 32) AS text_rank
              FROM discovery_entries d
             WHERE (d.kind = 'tool' AND d.key = ANY(%(tools)s))
                OR (d.kind = 'plan' AND d.agent_id = %(agent)s)
                OR d.kind = 'agent'
            """,
            params,
        )
        rows = cursor.fetchall()
    return [Found(k, key, float(sim or 0.0), float(rank or 0.0)) for k, key, sim, rank in rows]


def discover(*, agent: Agent, query: str, limit: int = 10) -> dict[str, Any]:
    """Tools and plans for ``query`` (a goal), best first, with the dependency graph."""
    discovery_sync()
    mode = "hybrid"
    vector = None
    try:
        discovery_index(limit=EMBED_ON_SEARCH, sync=False)  # synced just above
        vector = get_indexer().embed([query])[0]
    except IndexerUnavailable as exc:
        log.warning("discovery without embeddings: %s", exc)
        mode = "text"
    found = [f for f in _candidates(agent, query, vector) if f.score > 0.0]
    plans = {p.plan_id: p for p in PlanRecord.objects.filter(agent_id=agent.agent_id)}
    tool_rows = {
        t.tool_id: t for t in tools_for_agent(agent).only("tool_id", "description", "risk_level")
    }
    used_by: dict[str, list[PlanRecord]] = {}
    for plan in plans.values():
        for step in plan.steps if isinstance(plan.steps, list) else []:
            for tool_id in step.get("tools", []) if isinstance(step, dict) else []:
                used_by.setdefault(str(tool_id), []).append(plan)

    def weight(f: Found) -> float:
        if f.kind == "plan":
            return f.score * OUTCOME_WEIGHT.get(plans[f.key].status, 0.5)
        return f.score

    found = [f for f in found if f.kind in ("tool", "agent") or f.key in plans]
    agent_rows = {
        a.agent_id: a
        for a in Agent.objects.filter(pk__in=[f.key for f in found if f.kind == "agent"])
    }
    found.sort(key=weight, reverse=True)
    tools_out: list[dict[str, Any]] = []
    plans_out: list[dict[str, Any]] = []
    agents_out: list[dict[str, Any]] = []
    for f in found:
        if f.kind == "tool" and len(tools_out) < limit and f.key in tool_rows:
            users = used_by.get(f.key, [])
            ended = [p for p in users if p.status in ("finished", "failed")]
            tools_out.append(
                {
                    "tool_id": f.key,
                    "description": tool_rows[f.key].description,
                    "risk_level": tool_rows[f.key].risk_level,
                    "score": round(weight(f), 4),
                    "matched_by": f.matched_by,
                    "used_in_plans": [p.plan_id for p in users][:20],
                    "success_rate": round(
                        sum(p.status == "finished" for p in ended) / len(ended), 3
                    )
                    if ended
                    else None,
                }
            )
        elif f.kind == "plan" and len(plans_out) < limit:
            plan = plans[f.key]
            plans_out.append(
                {
                    "plan_id": plan.plan_id,
                    "goal": plan.goal,
                    "outcome": plan.status,
                    "score": round(weight(f), 4),
                    "matched_by": f.matched_by,
                    "steps": [
                        {
                            "id": s.get("id"),
                            "intent": s.get("intent", ""),
                            "tools": s.get("tools", []),
                            "depends_on": s.get("depends_on", []),
                            "result": plan.steps_finished.get(str(s.get("id"))),
                            "tools_you_may_call": [t for t in s.get("tools", []) if t in tool_rows],
                        }
                        for s in plan.steps
                        if isinstance(s, dict)
                    ],
                    "saved_at": plan.saved_at.isoformat(),
                }
            )
        elif f.kind == "agent" and len(agents_out) < limit and f.key in agent_rows:
            row = agent_rows[f.key]
            agents_out.append(
                {
                    "agent_id": row.agent_id,
                    "name": row.name,
                    "role": row.role,
                    "score": round(f.score, 4),
                    "matched_by": f.matched_by,
                }
            )
    return {
        "query": query,
        "mode": mode,
        "tools": tools_out,
        "plans": plans_out,
        "agents": agents_out,
    }
