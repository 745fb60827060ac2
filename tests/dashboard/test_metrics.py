"""``/metrics``: who may read it, and service levels that match a hand computation on a seeded
history of approvals."""

from __future__ import annotations

import re
from datetime import UTC, timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from brainframe.models import ApprovalRequest
from dashboard.templatetags.board import wait_time
from tests import factories as f

pytestmark = pytest.mark.django_db


def _percentile(values: list[float], q: float) -> float:
    """Linear between the two nearest ranks (PostgreSQL's percentile_cont)."""
    ordered = sorted(values)
    rank = q * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _metric(text: str, name: str, **labels: str) -> float:
    wanted = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        if line.startswith(f"{name}{{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no {name}{{{wanted}}} in:\n{text}")


def _approval(
    status: str, *, created_ago: timedelta, waited: timedelta | None, **extra: Any
) -> None:
    if status == "rejected":
        extra.setdefault("decision_reason", "not this week")
    approval = f.ApprovalRequestFactory(status=status, **extra)
    created = timezone.now() - created_ago
    decided = created + waited if waited is not None else None
    ApprovalRequest.objects.filter(pk=approval.pk).update(created_at=created, decided_at=decided)


def _seed_history() -> None:
    """Reviewers' decisions in the last day (minutes waited), older ones, an expiry, backlog."""
    alice, bob = f.UserFactory(username="alice"), f.UserFactory(username="bob")
    recent = {"approved": [2, 4, 10], "rejected": [30], "modified": [6]}
    deciders = {2: alice, 10: alice, 30: bob}
    for status, waits in recent.items():
        for minutes in waits:
            _approval(
                status,
                created_ago=timedelta(hours=2),
                waited=timedelta(minutes=minutes),
                reviewer_group="reviewers",
                decided_by=deciders.get(minutes),
            )
    _approval(
        "approved",
        created_ago=timedelta(days=3),
        waited=timedelta(minutes=120),
        reviewer_group="reviewers",
    )
    # expiry stamps decided_at (approvals_expire), with nobody as the decider
    _approval(
        "expired", created_ago=timedelta(days=2), waited=timedelta(minutes=30), escalation_count=1
    )
    _approval("pending", created_ago=timedelta(minutes=45), waited=None, reviewer_group="reviewers")
    _approval("pending", created_ago=timedelta(minutes=5), waited=None, reviewer_group="reviewers")


def test_service_levels_match_a_hand_computation(admin_client: Client) -> None:
    _seed_history()
    text = admin_client.get("/metrics").content.decode()
    day = [m * 60.0 for m in (2, 4, 10, 30, 6)]
    week = [*day, 120 * 60.0]
    for window, waits in (("24h", day), ("7d", week)):
        labels = {"group": "reviewers", "window": window}
        assert _metric(text, "rabs_approvals_decided", **labels) == len(waits)
        for q in (0.5, 0.95):
            got = _metric(text, "rabs_approval_decision_seconds", **labels, quantile=str(q))
            assert got == pytest.approx(_percentile(waits, q), abs=0.01)
        changed = 2 / len(waits)  # one rejected, one modified
        assert _metric(text, "rabs_approvals_changed_ratio", **labels) == pytest.approx(
            changed, abs=1e-4
        )
    assert _metric(text, "rabs_approvals_open", group="reviewers") == 2
    oldest = _metric(text, "rabs_approvals_oldest_open_seconds", group="reviewers")
    assert 45 * 60 - 5 < oldest < 45 * 60 + 60
    assert _metric(text, "rabs_approvals_expired", window="7d") == 1
    assert _metric(text, "rabs_approvals_expired", window="24h") == 0
    assert _metric(text, "rabs_approvals_escalated", window="7d") == 1
    assert _metric(text, "rabs_approvals_total", status="approved") == 4
    # Per reviewer: alice decided the 2- and 10-minute ones, bob the 30-minute one.
    assert _metric(text, "rabs_reviewer_decided", reviewer="alice", window="24h") == 2
    alice_p95 = _metric(
        text, "rabs_reviewer_decision_seconds", reviewer="alice", window="24h", quantile="0.95"
    )
    assert alice_p95 == pytest.approx(_percentile([120.0, 600.0], 0.95), abs=0.01)
    assert _metric(
        text, "rabs_reviewer_decision_seconds", reviewer="bob", window="24h", quantile="0.5"
    ) == pytest.approx(1800.0, abs=0.01)
    # The text format: each family's samples together, under its HELP and TYPE.
    names = [line.split("{", 1)[0] for line in text.splitlines() if not line.startswith("#")]
    assert all(
        names[i] == names[i - 1] or names[i] not in names[:i] for i in range(1, len(names))
    ), "a family's samples are split"


def test_only_staff_or_the_token_read_it(client: Client, settings: Any) -> None:
    settings.RABS_METRICS_TOKEN = "scrape-token-1234"
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer guess").status_code == 401
    scraped = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-1234")
    assert scraped.status_code == 200 and scraped["Content-Type"].startswith("text/plain")
    assert "# TYPE rabs_tool_calls_total counter" in scraped.content.decode()
    member = f.UserFactory(username="not-staff")
    client.force_login(member)
    assert client.get("/metrics").status_code == 401
    settings.RABS_METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401


def test_the_service_levels_page_shows_the_same_figures_with_charts(admin_client: Client) -> None:
    _seed_history()
    page = admin_client.get("/board/service-levels/").content.decode()
    day = page[page.index('id="window-24h"') : page.index('id="window-7d"')]
    week = page[page.index('id="window-7d"') : page.index('id="window-30d"')]
    waits = [m * 60.0 for m in (2, 4, 10, 30, 6)]
    p50 = wait_time(_percentile(waits, 0.5))  # in minutes and seconds, e.g. "6 min"
    p95 = wait_time(_percentile(waits, 0.95))
    assert p50 == "6 min"
    assert f'data-metric="p50">{p50}<' in day and f'data-metric="p95">{p95}<' in day
    assert 'data-metric="changed">40 %<' in day  # 2 of 5 modified or rejected
    assert 'data-metric="expired">1<' in week and 'data-metric="escalated">1<' in week
    assert 'data-reviewer="alice"' in day and 'data-metric="open">2<' in page
    # two charts, one bar per day that had decisions (p50 and p95), titled for screen readers
    assert page.count('<svg class="chart"') == 2 and 'role="img"' in page
    decided_on: dict[str, list[float]] = {}
    for created, decided in ApprovalRequest.objects.filter(
        status__in=("approved", "rejected", "modified")
    ).values_list("created_at", "decided_at"):
        key = decided.astimezone(UTC).strftime("%d %b")
        decided_on.setdefault(key, []).append((decided - created).total_seconds() / 60)
    bars = dict(re.findall(r"<title>(\d\d \w\w\w · p50): ([\d.]+) min</title>", page))
    assert bars == {
        f"{day} · p50": _shown(_percentile(waits, 0.5)) for day, waits in decided_on.items()
    }
    counts = re.findall(r"<title>\d\d \w\w\w · (decided|expired): (\d+)</title>", page)
    assert len(counts) == 60  # 30 days, two bars each
    assert sum(int(n) for kind, n in counts if kind == "decided") == 6
    assert sum(int(n) for kind, n in counts if kind == "expired") == 1


def _shown(value: float) -> str:
    return f"{value:.0f}" if value.is_integer() or value >= 10 else f"{value:.1f}"
