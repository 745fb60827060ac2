"""The board's other pages: the event log (live, by family and agent), hooks (staff approve,
reject, enable and disable what agents proposed), reviewers' service levels, the read
replica's panel."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_POST

from brainframe.events import EVENT_FAMILIES, EVENT_TYPES, event_from_wire
from brainframe.events.base import SHADOW_DECISION
from brainframe.models import (
    Agent,
    EventLogEntry,
    Hook,
    ToolCall,
    WebhookDelivery,
    WebhookSubscription,
)
from brainframe.services.eventlog.reading import event_log_feed
from brainframe.services.hooks.checks import HookError
from brainframe.services.hooks.lifecycle import hook_resource, hook_review, hook_set_enabled
from broker.handlers.replica import replica_status
from dashboard.data.charts import bar_chart
from dashboard.data.metrics import daily_levels, service_levels
from dashboard.live.render import render_feed_row


def _moment(request: HttpRequest, field: str) -> datetime | None:
    """A ``datetime-local`` filter (the board's time zone); ValueError names a bad one."""
    text = request.GET.get(field, "").strip()
    if not text:
        return None
    parsed = parse_datetime(text)
    if parsed is None:
        raise ValueError(f"{field}: not a date and time ({text!r}); use YYYY-MM-DDTHH:MM")
    return timezone.make_aware(parsed) if timezone.is_naive(parsed) else parsed


@login_required
def events_page(request: HttpRequest) -> HttpResponse:
    """The event log, newest first, live: filtered by family, agent, event name and time
    (``?family=&agent=&name=&since=&until=``)."""
    family = request.GET.get("family", "")
    agent_id = request.GET.get("agent", "")
    name = request.GET.get("name", "")
    choices = {
        "families": EVENT_FAMILIES,
        "names": sorted(n for n, cls in EVENT_TYPES.items() if cls.LOGGED),
        "agents": Agent.objects.order_by("agent_id").values_list("agent_id", flat=True),
        "family": family,
        "agent": agent_id,
        "name": name,
        "since": request.GET.get("since", ""),
        "until": request.GET.get("until", ""),
    }
    error, code = "", ""
    if family and family not in EVENT_FAMILIES:
        error, code = f"unknown event family {family!r}", "unknown_family"
    elif name and name not in choices["names"]:
        error, code = f"unknown event type {name!r}", "unknown_event"
    try:
        since, until = _moment(request, "since"), _moment(request, "until")
    except ValueError as exc:
        error, code = str(exc), "invalid_time"
    if error:
        return render(
            request, "dashboard/events.html", {**choices, "error": error, "code": code}, status=400
        )
    entries = event_log_feed(
        family=family, agent_id=agent_id, name=name, since=since, until=until, limit=200
    )
    events = [(event_from_wire({"event": e.name, "payload": e.payload}), e.at) for e in entries]
    rows = [render_feed_row(event, at=at, oob=False) for event, at in events if event is not None]
    # Live rows only when the page shows the present (no "until" in the past).
    live = until is None or until > timezone.now()
    query = {"feed": family or "all", "agent": agent_id, "name": name} if live else {}
    query = {key: value for key, value in query.items() if value or key == "agent"}
    return render(
        request,
        "dashboard/events.html",
        {
            **choices,
            "rows": rows,
            "filtered": bool(family or agent_id or name or since or until),
            "socket": "/ws/board/?" + urlencode(query),
        },
    )


@login_required
def liveness_banner(request: HttpRequest) -> HttpResponse:
    """The banner saying which background parts are not running (empty when all are); every
    board page asks for it every few seconds."""
    return render(request, "dashboard/partials/liveness.html")


@login_required
def hooks_page(request: HttpRequest) -> HttpResponse:
    """Hooks by state: proposed (waiting for staff) first, then active, disabled, rejected."""
    order = [Hook.Status.PROPOSED, Hook.Status.ACTIVE, Hook.Status.DISABLED, Hook.Status.REJECTED]
    hooks = list(Hook.objects.select_related("agent", "reviewed_by"))
    groups = [
        (status.label, [hook_resource(h) for h in hooks if h.status == status]) for status in order
    ]
    return render(
        request,
        "dashboard/hooks.html",
        {"groups": groups, "can_decide": request.user.has_perm("brainframe.change_hook")},
    )


@login_required
@require_POST
def hook_action(request: HttpRequest, hook_id: Any, action: str) -> HttpResponse:
    """approve / reject (a reason required) / enable / disable one hook."""
    if not request.user.has_perm("brainframe.change_hook"):
        return HttpResponse("staff only", status=403)
    hook = get_object_or_404(Hook, pk=hook_id)
    reason = request.POST.get("reason", "").strip()
    who = request.user.get_username()
    try:
        if action in ("approve", "reject"):
            hook_review(
                hook=hook, reviewer=request.user, approve=action == "approve", reason=reason
            )
        elif action in ("enable", "disable"):
            hook_set_enabled(hook=hook, enabled=action == "enable", by=who, reason=reason)
        else:
            return HttpResponse(f"unknown action {action!r}", status=400)
    except HookError as exc:
        return render(
            request,
            "dashboard/hooks.html",
            {"error": exc.detail, "error_code": exc.code, "groups": []},
            status=exc.status,
        )
    return redirect("dashboard:hooks")


@login_required
def service_levels_page(request: HttpRequest) -> HttpResponse:
    """Reviewers' service levels with small charts (the same figures as /metrics)."""
    levels = service_levels()
    days = daily_levels()
    labels = [f"{d['day']:%d %b}" for d in days]
    charts = {
        "time": bar_chart(
            [
                ("p50", [d["p50"] and d["p50"] / 60 for d in days], "bar-a"),
                ("p95", [d["p95"] and d["p95"] / 60 for d in days], "bar-b"),
            ],
            labels,
            title="Time to decision per day, minutes (p50, p95)",
            unit=" min",
        ),
        "volume": bar_chart(
            [
                ("decided", [d["decided"] for d in days], "bar-a"),
                ("expired", [d["expired"] for d in days], "bar-c"),
            ],
            labels,
            title="Approvals decided and expired per day",
        ),
    }
    return render(
        request,
        "dashboard/service_levels.html",
        {"levels": levels, "days": days, "charts": charts},
    )


@login_required
def shadow_page(request: HttpRequest) -> HttpResponse:
    """Shadow-mode V-Pol rules (docs/access.md): what each would have decided, beside what was
    decided, newest first; with a count per rule of the calls it would have decided otherwise."""
    entries = EventLogEntry.objects.filter(name=SHADOW_DECISION).order_by("-id")[:200]
    rows = [{"at": e.at, **e.payload} for e in entries]
    calls = ToolCall.objects.in_bulk([row["call_id"] for row in rows])
    by_rule: dict[tuple[str, str], dict[str, int]] = {}
    for row in rows:
        call = calls.get(uuid.UUID(row["call_id"]))
        row["call"] = call
        row["differs"] = _WOULD.get(row["would"], row["would"]) != row["decided"]
        counts = by_rule.setdefault((row["policy"], row["rule"]), {"matched": 0, "differs": 0})
        counts["matched"] += 1
        counts["differs"] += row["differs"]
    return render(
        request,
        "dashboard/shadow.html",
        {"rows": rows, "rules": sorted(by_rule.items())},
    )


#: A rule's action and the decision it would make (``review``: the gate holds the call).
_WOULD = {
    "allow": "execute",
    "review": "pending_approval",
    "senior_review": "pending_approval",
    "deny": "deny",
}


@login_required
def webhooks_page(request: HttpRequest) -> HttpResponse:
    """What was pushed to subscribed external agents (docs/mcp.md, "Platforms without A2A"):
    each subscription with its deliveries by state, and the latest deliveries."""
    subscriptions = list(
        WebhookSubscription.objects.select_related("agent", "task").order_by("-created_at")[:100]
    )
    states = {
        (row["subscription_id"], row["state"]): row["n"]
        for row in WebhookDelivery.objects.values("subscription_id", "state").annotate(
            n=Count("id")
        )
    }
    for subscription in subscriptions:
        subscription.counts = {  # type: ignore[attr-defined]
            state: states.get((subscription.pk, state), 0) for state in WebhookDelivery.State.values
        }
    deliveries = WebhookDelivery.objects.select_related("subscription__agent", "event").order_by(
        "-id"
    )[:100]
    return render(
        request,
        "dashboard/webhooks.html",
        {"subscriptions": subscriptions, "deliveries": deliveries},
    )


@login_required
def replica_panel(request: HttpRequest) -> HttpResponse:
    """The read replica's state and lag (the board polls it)."""
    return render(request, "dashboard/partials/replica.html", {"replica": replica_status()})
