"""``/metrics``: reviewers' service levels and the broker's decision counters in Prometheus's text
format, for operators' existing monitoring. Staff (a signed-in staff user) or a bearer token
(``RABS_METRICS_TOKEN``) only.

Gauges per reviewer group: open approvals and the age of the oldest; time to decision (created
→ decided, approvals a reviewer decided) at p50 and p95 over 24 h, 7 d and 30 d (PostgreSQL's
``percentile_cont``: linear between the two nearest); decided, expired and escalated counts and
the share modified or rejected over the same windows. Counters: tool calls by decision, approvals
by status (since the start).
"""

from __future__ import annotations

import hmac
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse

WINDOWS = {"24h": "24 hours", "7d": "7 days", "30d": "30 days"}
DECIDED_BY_A_REVIEWER = ("approved", "rejected", "modified")
_WAITED = "extract(epoch FROM decided_at - created_at)"
#: Expired: marked so, or open past its timeout (expired in fact: no decision can be made on it
#: any more, whether or not beat has marked it yet).
_OVERDUE = "(status IN ('pending', 'escalated') AND timeout_at <= now())"
_EXPIRED = f"(status = 'expired' OR {_OVERDUE})"
#: The day an approval counts on: its decision's, or for an open one past its timeout (expired
#: in fact) the day it fell due.
_DAY_OF = (
    "coalesce(q.decided_at, CASE WHEN q.status IN ('pending', 'escalated') "
    "AND q.timeout_at <= now() THEN q.timeout_at END)"
)


def _authorised(request: HttpRequest) -> bool:
    if request.user.is_authenticated and request.user.is_staff:
        return True
    token = settings.RABS_METRICS_TOKEN
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return bool(token) and scheme.lower() == "bearer" and hmac.compare_digest(given, token)


def _label(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def _rows(sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        return list(cursor.fetchall())


class _Families:
    """Samples grouped under their family's HELP and TYPE lines (the text format wants each
    family's samples together), in the order the families were declared."""

    def __init__(self) -> None:
        self.heads: dict[str, list[str]] = {}
        self.samples: dict[str, list[str]] = {}

    def __call__(self, name: str, kind: str, about: str) -> None:
        self.heads[name] = [f"# HELP {name} {about}", f"# TYPE {name} {kind}"]
        self.samples[name] = []

    def append(self, line: str) -> None:
        name = line.split("{", 1)[0].split(" ", 1)[0]
        self.samples[name].append(line)

    def text(self) -> str:
        return "".join(
            "\n".join([*self.heads[name], *self.samples[name]]) + "\n" for name in self.heads
        )


def service_levels() -> dict[str, Any]:
    """The reviewers' service levels, computed in the database: what ``/metrics`` and the
    board's service-levels page show. Times in seconds."""
    levels: dict[str, Any] = {
        "open": [
            {"group": group, "count": count, "oldest": float(age), "overdue": overdue}
            for group, count, age, overdue in _rows(
                "SELECT reviewer_group, count(*), "
                "coalesce(extract(epoch FROM now() - min(created_at)), 0), "
                "count(*) FILTER (WHERE timeout_at <= now()) "
                "FROM approval_queue WHERE status IN ('pending', 'escalated') "
                "GROUP BY 1 ORDER BY 1"
            )
        ],
        "windows": {},
    }
    for window, interval in WINDOWS.items():
        groups = [
            {"group": g, "decided": n, "p50": p50, "p95": p95, "changed": float(changed)}
            for g, n, p50, p95, changed in _rows(
                "SELECT reviewer_group, count(*), "
                f"percentile_cont(0.5) WITHIN GROUP (ORDER BY {_WAITED}), "
                f"percentile_cont(0.95) WITHIN GROUP (ORDER BY {_WAITED}), "
                "avg(CASE WHEN status IN ('modified', 'rejected') THEN 1.0 ELSE 0.0 END) "
                "FROM approval_queue WHERE status = ANY(%s) "
                "AND decided_at >= now() - %s::interval GROUP BY 1 ORDER BY 1",
                [list(DECIDED_BY_A_REVIEWER), interval],
            )
        ]
        reviewers = [
            {"reviewer": r, "decided": n, "p50": p50, "p95": p95}
            for r, n, p50, p95 in _rows(
                "SELECT u.username, count(*), "
                f"percentile_cont(0.5) WITHIN GROUP (ORDER BY {_WAITED}), "
                f"percentile_cont(0.95) WITHIN GROUP (ORDER BY {_WAITED}) "
                "FROM approval_queue q JOIN auth_user u ON u.id = q.decided_by_id "
                "WHERE q.status = ANY(%s) AND q.decided_at >= now() - %s::interval "
                "GROUP BY 1 ORDER BY 1",
                [list(DECIDED_BY_A_REVIEWER), interval],
            )
        ]
        ((expired, escalated, created),) = _rows(
            f"SELECT count(*) FILTER (WHERE {_EXPIRED}), "
            "count(*) FILTER (WHERE escalation_count > 0), count(*) "
            "FROM approval_queue WHERE created_at >= now() - %s::interval",
            [interval],
        )
        levels["windows"][window] = {
            "groups": groups,
            "reviewers": reviewers,
            "expired": expired,
            "escalated": escalated,
            "created": created,
        }
    return levels


def daily_levels(days: int = 30) -> list[dict[str, Any]]:
    """Per day (local dates, oldest first, every day present): approvals decided by a reviewer
    with their p50/p95 time to decision, and approvals that expired; for the page's charts."""
    rows = _rows(
        "WITH days AS (SELECT generate_series(date_trunc('day', now() - %s::interval), "
        "date_trunc('day', now()), '1 day') AS day) "
        "SELECT d.day, count(q.id) FILTER (WHERE q.status = ANY(%s)), "
        f"percentile_cont(0.5) WITHIN GROUP (ORDER BY {_WAITED}) "
        "FILTER (WHERE q.status = ANY(%s)), "
        f"percentile_cont(0.95) WITHIN GROUP (ORDER BY {_WAITED}) "
        "FILTER (WHERE q.status = ANY(%s)), "
        "count(q.id) FILTER (WHERE q.status IN ('expired', 'pending', 'escalated')) "
        f"FROM days d LEFT JOIN approval_queue q ON {_DAY_OF} >= d.day "
        f"AND {_DAY_OF} < d.day + interval '1 day' GROUP BY d.day ORDER BY d.day",
        [f"{days - 1} days", *([list(DECIDED_BY_A_REVIEWER)] * 3)],
    )
    return [
        {"day": day, "decided": n, "p50": p50, "p95": p95, "expired": expired}
        for day, n, p50, p95, expired in rows
    ]


def metrics_text() -> str:
    out = family = _Families()
    levels = service_levels()
    family("rabs_approvals_open", "gauge", "Approvals waiting for a reviewer, by reviewer group.")
    family(
        "rabs_approvals_oldest_open_seconds", "gauge", "Age of the oldest open approval, by group."
    )
    for row in levels["open"]:
        out.append(f'rabs_approvals_open{{group="{_label(row["group"])}"}} {row["count"]}')
    for row in levels["open"]:
        out.append(
            f'rabs_approvals_oldest_open_seconds{{group="{_label(row["group"])}"}} '
            f"{row['oldest']:.3f}"
        )
    family(
        "rabs_approval_decision_seconds",
        "gauge",
        "Time from an approval's creation to a reviewer's decision, by group, window, quantile.",
    )
    family("rabs_approvals_decided", "gauge", "Approvals decided by a reviewer, by group, window.")
    family(
        "rabs_approvals_changed_ratio",
        "gauge",
        "Share of decided approvals a reviewer modified or rejected, by group and window.",
    )
    family(
        "rabs_reviewer_decision_seconds",
        "gauge",
        "Time from creation to decision of the approvals each reviewer decided, by window.",
    )
    family("rabs_reviewer_decided", "gauge", "Approvals each reviewer decided, by window.")
    family("rabs_approvals_expired", "gauge", "Approvals that expired undecided, by window.")
    family("rabs_approvals_escalated", "gauge", "Approvals escalated at least once, by window.")
    for window, level in levels["windows"].items():
        for row in level["groups"]:
            labels = f'group="{_label(row["group"])}",window="{window}"'
            out.append(
                f'rabs_approval_decision_seconds{{{labels},quantile="0.5"}} {row["p50"]:.3f}'
            )
            out.append(
                f'rabs_approval_decision_seconds{{{labels},quantile="0.95"}} {row["p95"]:.3f}'
            )
            out.append(f"rabs_approvals_decided{{{labels}}} {row['decided']}")
            out.append(f"rabs_approvals_changed_ratio{{{labels}}} {row['changed']:.4f}")
        for row in level["reviewers"]:
            labels = f'reviewer="{_label(row["reviewer"])}",window="{window}"'
            out.append(
                f'rabs_reviewer_decision_seconds{{{labels},quantile="0.5"}} {row["p50"]:.3f}'
            )
            out.append(
                f'rabs_reviewer_decision_seconds{{{labels},quantile="0.95"}} {row["p95"]:.3f}'
            )
            out.append(f"rabs_reviewer_decided{{{labels}}} {row['decided']}")
        out.append(f'rabs_approvals_expired{{window="{window}"}} {level["expired"]}')
        out.append(f'rabs_approvals_escalated{{window="{window}"}} {level["escalated"]}')
    family("rabs_tool_calls_total", "counter", "Tool calls the broker decided, by decision.")
    for decision, count in _rows("SELECT decision, count(*) FROM tool_calls GROUP BY 1 ORDER BY 1"):
        out.append(f'rabs_tool_calls_total{{decision="{_label(decision)}"}} {count}')
    family("rabs_approvals_total", "counter", "Approvals by their status now.")
    for status, count in _rows("SELECT status, count(*) FROM approval_queue GROUP BY 1 ORDER BY 1"):
        out.append(f'rabs_approvals_total{{status="{_label(status)}"}} {count}')
    return out.text()


def metrics(request: HttpRequest) -> HttpResponse:
    if not _authorised(request):
        return JsonResponse(
            {
                "code": "unauthorized",
                "detail": "staff, or Authorization: Bearer <RABS_METRICS_TOKEN>",
            },
            status=401,
        )
    return HttpResponse(metrics_text(), content_type="text/plain; version=0.0.4; charset=utf-8")
