"""Relevance: nightly decay (each night once, late or twice), reinforcement under concurrent
writers, family boost. Nights are simulated by date."""

from __future__ import annotations

import threading
from datetime import date, datetime, time, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from brainframe.models import ContextBucketEntry, DecayRun
from brainframe.services.memory.observations import observation_record
from brainframe.services.memory.relevance import decay_run
from tests import factories as f

pytestmark = pytest.mark.django_db
START = date(2026, 1, 1)


def _entry(**fields: object) -> ContextBucketEntry:
    entry = f.ContextBucketEntryFactory(severity=2, **fields)
    reinforced = timezone.make_aware(datetime.combine(START, time(10, 0)))
    ContextBucketEntry.objects.filter(pk=entry.pk).update(last_reinforced_at=reinforced)
    return entry


def test_decay_after_30_90_180_nights_without_reinforcement() -> None:
    entry = _entry(entity="Hiace 2")
    seen = {}
    for night in range(1, 181):
        call_command(
            "run_job",
            "decay",
            "--date",
            (START + timedelta(days=night - 1)).isoformat(),
            stdout=StringIO(),
        )
        if night in (1, 30, 90, 180):
            entry.refresh_from_db()
            seen[night] = entry.decay
    assert seen[1] == pytest.approx(0.98, abs=1e-9)
    assert seen[30] == pytest.approx(0.545, abs=0.001)
    assert seen[90] == pytest.approx(0.163, abs=0.001)
    assert seen[180] == pytest.approx(0.027, abs=0.001)
    assert entry.current_score == pytest.approx(2 * 1 * seen[180] * 1.0 * 1.0)
    assert DecayRun.objects.count() == 180
    assert ContextBucketEntry.objects.filter(pk=entry.pk).exists()  # nothing is deleted


def test_running_a_night_twice_or_late_changes_nothing_more() -> None:
    entry = _entry(entity="Hiace 3")
    decay_run(night=START + timedelta(days=10))
    entry.refresh_from_db()
    after_once = entry.decay
    assert decay_run(night=START + timedelta(days=10)) == {
        "rows_updated": 0,
        "first_run_for_night": False,
    }
    entry.refresh_from_db()
    assert entry.decay == after_once == pytest.approx(0.98**10)
    # Nights 11 and 12 missed; the run for night 13 catches up exactly.
    decay_run(night=START + timedelta(days=13))
    entry.refresh_from_db()
    assert entry.decay == pytest.approx(0.98**13)


def test_reinforcement_resets_decay_and_counts() -> None:
    entry = _entry(entity="P-7", pattern_type="preference", bucket="comms_participant_carer")
    decay_run(night=START + timedelta(days=20))
    again, created = observation_record(
        agent=None,
        bucket="comms_participant_carer",
        entity="P-7",
        pattern_type="preference",
        observation="Prefers SMS",
        severity=2,
    )
    assert not created and again.pk == entry.pk
    assert again.frequency == 2 and again.decay == 1.0
    assert again.current_score == pytest.approx(2 * 2 * 1.0 * 1.0 * 1.0)


def test_family_boost_rule() -> None:
    for pattern in ("preference", "recurring_issue", "budget_alert"):
        observation_record(
            agent=None,
            bucket="billing_finance",
            entity="P-9",
            pattern_type=pattern,
            observation="x",
            severity=1,
        )
    decay_run(night=timezone.localdate())
    boosts = sorted(
        ContextBucketEntry.objects.filter(entity="P-9").values_list("family_boost", flat=True)
    )
    assert boosts == [1.5, 1.5, 1.5]  # two other entries each: 1.0 + 2 × 0.25
    for i in range(6):
        observation_record(
            agent=None,
            bucket="billing_finance",
            entity="P-9",
            pattern_type=f"extra_{i}",
            observation="x",
        )
    decay_run(night=timezone.localdate() + timedelta(days=1))
    assert set(
        ContextBucketEntry.objects.filter(entity="P-9").values_list("family_boost", flat=True)
    ) == {2.0}  # capped


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_writers_lose_no_increment() -> None:
    barrier = threading.Barrier(20)
    errors: list[BaseException] = []

    def write() -> None:
        try:
            barrier.wait()
            observation_record(
                agent=None,
                bucket="transportation",
                entity="Bus 4",
                pattern_type="recurring_issue",
                observation="late again",
            )
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=write) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    entry = ContextBucketEntry.objects.get(entity="Bus 4")
    assert entry.frequency == 20


@pytest.mark.django_db(transaction=True)
def test_decay_in_slices_at_once_matches_one_statement() -> None:
    """The nightly run cuts the table into ranges of pages updated on several connections at
    once; every entry comes out as the single statement would make it, families spanning the
    ranges included."""
    reinforced = timezone.make_aware(datetime.combine(START, time(10, 0)))
    entries = [
        f.ContextBucketEntryFactory(
            severity=1 + n % 3, entity=f"P-{n % 97}", pattern_type=f"pattern-{n}"
        )
        for n in range(600)
    ]
    ContextBucketEntry.objects.update(last_reinforced_at=reinforced)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(DISTINCT (ctid::text::point)[0]) FROM context_buckets")
        assert cursor.fetchone()[0] >= 6  # several pages, so several slices have rows
    result = decay_run(night=START + timedelta(days=5), slices=3)
    assert result["rows_updated"] == len(entries)
    family = {e.entity: sum(1 for o in entries if o.entity == e.entity) - 1 for e in entries}
    for entry in ContextBucketEntry.objects.all():
        boost = min(2.0, 1.0 + 0.25 * family[entry.entity])
        assert entry.decay == pytest.approx(0.98**5)
        assert entry.family_boost == pytest.approx(boost)
        assert entry.current_score == pytest.approx(
            entry.severity * entry.frequency * 0.98**5 * entry.repeatable * boost
        )
