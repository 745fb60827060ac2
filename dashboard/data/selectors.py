"""What the board shows, read in as few queries as possible."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from django.db import connection
from django.db.models import Count, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from brainframe.models import (
    Agent,
    AgentCard,
    AgentNote,
    AgentSupervisor,
    AgentTask,
    AlignmentSnapshot,
    ApprovalRequest,
    Deliverable,
    KanbanCard,
    LLMBudget,
    LLMRequest,
    ReasonLog,
    ToolCall,
    UpstreamToolChange,
)
from brainframe.services.access.standing import ROUTINE_REVIEW
from brainframe.services.llm.admission import spend as llm_spend

COLUMNS = [
    (AgentTask.Status.TODO, "To Do"),
    (AgentTask.Status.IN_PROGRESS, "In Progress"),
    (AgentTask.Status.REVIEW, "Review"),
    (AgentTask.Status.DONE, "Done"),
]
HEARTBEAT_FRESH = timedelta(seconds=90)


def agent_status(agent: Agent) -> str:
    """Active / Idle / Paused / Error, from staff's pause and the agent's heartbeats."""
    if agent.status == Agent.Status.PAUSED:
        return "Paused"
    if agent.status == Agent.Status.ERROR:
        return "Error"
    fresh = agent.last_heartbeat_at and timezone.now() - agent.last_heartbeat_at < HEARTBEAT_FRESH
    if agent.type == Agent.Type.NATIVE or (fresh and agent.status == Agent.Status.ACTIVE):
        return "Active"
    return "Idle"


def trend_points(agent: Agent, *, width: int = 120, height: int = 28) -> str:
    """SVG polyline points for the agent's alignment over the last 90 days."""
    since = timezone.localdate() - timedelta(days=90)
    rows = (
        AlignmentSnapshot.objects.filter(agent=agent, date__gte=since, score__isnull=False)
        .order_by("date")
        .values_list("score", flat=True)
    )
    scores = [score for score in rows if score is not None]
    if len(scores) < 2:
        return ""
    step = width / (len(scores) - 1)
    return " ".join(f"{i * step:.1f},{height - s * height:.1f}" for i, s in enumerate(scores))


@dataclass
class StatusCard:
    agent: Agent
    status: str
    counts: dict[str, int]
    trend: str
    supervisor: AgentSupervisor | None = None

    @property
    def dashboard_url(self) -> str:
        """The agent's own dashboard (seed 000 §3), as staff set it in the agent's
        configuration (``dashboard``: host:port or an http(s) URL); "" when none or not http."""
        value = str((self.agent.config or {}).get("dashboard") or "").strip()
        if not value:
            return ""
        url = value if "://" in value else f"http://{value}/"
        parts = urlsplit(url)
        return url if parts.scheme in ("http", "https") and parts.hostname else ""


def status_card(agent: Agent) -> StatusCard:
    """The agent's card: its task counts from the status-card view of the event log (the same
    rows ``replay_events --view agents`` rebuilds), its live status and trend."""
    card = AgentCard.objects.filter(agent_id=agent.agent_id).first()
    kept = card.counts if card is not None else {}
    counts = {str(status): int(kept.get(str(status), 0)) for status, _ in COLUMNS}
    return StatusCard(
        agent=agent,
        status=agent_status(agent),
        counts=counts,
        trend=trend_points(agent),
        supervisor=AgentSupervisor.objects.filter(agent=agent)
        .select_related("last_command__requested_by")
        .first(),
    )


def kanban(agent: Agent) -> list[dict[str, Any]]:
    """The agent's Kanban from the Kanban view of the event log (``replay_events --view
    kanban`` rebuilds it)."""
    tasks = KanbanCard.objects.filter(
        agent_id=agent.agent_id, status__in=[c for c, _ in COLUMNS]
    ).order_by("-priority", "created_at")
    by_status: dict[str, list[KanbanCard]] = {status: [] for status, _ in COLUMNS}
    for task in tasks:
        by_status[task.status].append(task)
    return [{"status": s, "label": label, "tasks": by_status[s][:50]} for s, label in COLUMNS]


def notes(agent: Agent) -> list[AgentNote]:
    return list(AgentNote.objects.filter(agent=agent, active=True).order_by("-priority"))


@dataclass
class ModelSpend:
    """An agent's model use through the gateway: today, this budget period, the last 14 days."""

    budget: LLMBudget | None
    today_usd: Decimal
    period_usd: Decimal
    tokens_in: int
    tokens_out: int
    requests: int
    sparkline: str  # SVG polyline points of daily spend, oldest first

    @property
    def share(self) -> int | None:
        """Percent of the hard budget spent this period."""
        if self.budget is None or not self.budget.max_budget:
            return None
        return int(self.period_usd * 100 / self.budget.max_budget)


def model_spend(agent: Agent, days: int = 14, width: int = 120, height: int = 28) -> ModelSpend:
    """Two queries: the agent's model access, and its daily totals (the budget period's share
    from the same rows when the period is within the window, else one more)."""
    budget = LLMBudget.objects.filter(agent=agent).first()
    today = timezone.localdate()
    since = today - timedelta(days=days - 1)
    rows = {
        row["day"]: row
        for row in LLMRequest.objects.filter(agent=agent, created_at__date__gte=since)
        .annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(
            cost=Sum("cost_usd"),
            tokens_in=Sum("prompt_tokens"),
            tokens_out=Sum("completion_tokens"),
            requests=Count("id"),
        )
    }
    daily = [Decimal(rows.get(since + timedelta(days=i), {}).get("cost") or 0) for i in range(days)]
    top = max(daily) or Decimal(1)
    step = width / (days - 1)
    points = " ".join(
        f"{i * step:.1f},{height - float(cost / top) * height:.1f}" for i, cost in enumerate(daily)
    )
    period = Decimal(0)
    if budget is not None:
        period = llm_spend(agent.agent_id, budget.budget_duration)
    now = rows.get(today, {})
    return ModelSpend(
        budget=budget,
        today_usd=Decimal(now.get("cost") or 0),
        period_usd=period,
        tokens_in=int(now.get("tokens_in") or 0),
        tokens_out=int(now.get("tokens_out") or 0),
        requests=int(now.get("requests") or 0),
        sparkline=points if any(daily) else "",
    )


def deliverables(agent: Agent) -> list[Deliverable]:
    return list(Deliverable.objects.filter(agent=agent).select_related("task")[:20])


CARD_RELATED = ("agent", "tool", "r_tag__o_tag", "vpol", "tool_call", "decided_by")


def open_approvals() -> list[ApprovalRequest]:
    return list(
        ApprovalRequest.objects.filter(
            status__in=[ApprovalRequest.Status.PENDING, ApprovalRequest.Status.ESCALATED]
        )
        .select_related(*CARD_RELATED)
        .order_by("timeout_at")
    )


def approved_not_run(limit: int = 50) -> list[ApprovalRequest]:
    """Approved (or modified) calls that have not finished running: each shows whether a
    worker has taken it up (the answer to "I approved it; why has nothing happened?")."""
    return list(
        ApprovalRequest.objects.filter(
            status__in=[ApprovalRequest.Status.APPROVED, ApprovalRequest.Status.MODIFIED],
            kind=ApprovalRequest.Kind.PRE_EXECUTION,
            tool_call__outcome__in=[ToolCall.Outcome.NOT_RUN, ToolCall.Outcome.PENDING],
        )
        .select_related(*CARD_RELATED)
        .order_by("decided_at")[:limit]
    )


def origin_label(approval: ApprovalRequest) -> str:
    """Where the call came from, in words: what started its chain, and how the call came in."""
    call = approval.tool_call if approval.tool_call_id else None
    origin = approval.r_tag.o_tag if approval.r_tag_id and approval.r_tag else None
    started = "no recorded origin"
    if origin is not None:
        ref = origin.source_ref if len(origin.source_ref) <= 40 else origin.source_ref[:39] + "…"
        started = f"{origin.get_origin_type_display()} {ref}".strip()
    face = ToolCall.Face(call.face).label if call is not None and call.face else ""
    return f"{started}, over {face}" if face else started


def chain_for(approval: ApprovalRequest) -> list[ReasonLog]:
    """The R-Tags of the approval's origin, oldest first (O-Tag → R-Tags)."""
    return chains_for([approval]).get(approval.pk, [])


CHAIN_SHOWN = 20


def chains_for(approvals: list[ApprovalRequest]) -> dict[Any, list[ReasonLog]]:
    """``chain_for`` of each approval (by its id), in one query for the whole page."""
    o_tags = {a.pk: a.r_tag.o_tag_id for a in approvals if a.r_tag is not None}
    if not o_tags:
        return {}
    by_origin: dict[Any, list[ReasonLog]] = {}
    for reason in (
        ReasonLog.objects.filter(o_tag_id__in=set(o_tags.values()))
        .select_related("tool")
        .order_by("created_at")
    ):
        shown = by_origin.setdefault(reason.o_tag_id, [])
        if len(shown) < CHAIN_SHOWN:
            shown.append(reason)
    return {pk: by_origin.get(o_tag, []) for pk, o_tag in o_tags.items()}


def _shown(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _chain(approval: ApprovalRequest) -> str:
    return str(approval.r_tag.o_tag_id) if approval.r_tag_id and approval.r_tag else ""


def batches(items: list[ApprovalRequest], *, widened: bool = False) -> list[dict[str, Any]]:
    """Open approvals of one chain (one O-Tag) that share agent, tool, kind, reviewer group and
    argument keys, in groups of two or more; ``widened``: of any chain (the reviewer asked).
    The values that are the same across the group shown once, the ones that differ side by
    side, with each member's origin and reason (one row per member, most urgent first)."""
    groups: dict[tuple[Any, ...], list[ApprovalRequest]] = {}
    for approval in items:
        if not isinstance(approval.arguments, dict):
            continue
        chain = _chain(approval)
        if not chain and not widened:
            continue  # a call with no chain is its own
        key = (
            approval.agent_id,
            approval.tool_id,
            approval.kind,
            approval.reviewer_group,
            tuple(sorted(approval.arguments)),
            "" if widened else chain,
        )
        groups.setdefault(key, []).append(approval)
    found = []
    for key, members in groups.items():
        if len(members) < 2:
            continue
        names = list(key[4])
        varying = [n for n in names if len({_shown(m.arguments[n]) for m in members}) > 1]
        found.append(
            {
                "id": hashlib.sha256(repr(key).encode()).hexdigest()[:12],
                "agent": members[0].agent,
                "tool_id": key[1],
                "kind": members[0].get_kind_display(),
                "reviewer_group": members[0].reviewer_group,
                "fixed": [(n, _shown(members[0].arguments[n])) for n in names if n not in varying],
                "varying": varying,
                "widened": widened,
                "chains": len({_chain(m) for m in members}),
                "rows": [
                    {
                        "approval": m,
                        "values": [_shown(m.arguments[n]) for n in varying],
                        "origin": origin_label(m),
                        "chain": _chain(m),
                    }
                    for m in members
                ],
            }
        )
    return sorted(found, key=lambda b: b["rows"][0]["approval"].timeout_at)


def can_stand(approval: ApprovalRequest) -> bool:
    """Whether a standing approval can be left from this card (routine review of a call that
    has not run; ``brainframe.services.access.standing`` checks again when asked)."""
    return (
        approval.kind == ApprovalRequest.Kind.PRE_EXECUTION
        and approval.reviewer_group == ApprovalRequest.ReviewerGroup.REVIEWERS
        and isinstance(approval.arguments, dict)
        and any(f"decision:{code}" in approval.tags for code in ROUTINE_REVIEW)
    )


@dataclass(frozen=True)
class Evidence:
    """The board's evidence strip: how old the last signed checkpoint is, and the upstream
    tools refused because their upstream changed them (awaiting staff)."""

    checkpoint_at: datetime | None
    overdue: bool
    upstream_changes: list[UpstreamToolChange]


def evidence(*, max_age: timedelta) -> Evidence:
    """One query, and a second only when upstream tools await staff."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT at FROM audit_checkpoints ORDER BY seq DESC LIMIT 1),"
            " (SELECT count(*) FROM upstream_tool_changes WHERE status = 'pending')"
        )
        at, pending = cursor.fetchone()
    changes: list[UpstreamToolChange] = []
    if pending:
        changes = list(
            UpstreamToolChange.objects.filter(status=UpstreamToolChange.Status.PENDING)
            .select_related("tool")
            .order_by("-detected_at")[:10]
        )
    overdue = at is None or timezone.now() - at > max_age
    return Evidence(checkpoint_at=at, overdue=overdue, upstream_changes=changes)
