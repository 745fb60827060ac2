"""Benchmark: the nightly decay over N context-bucket rows (default 1,000,000).

    .venv/bin/python bench/decay.py [--rows 1000000]

Rows are generated in a throwaway database (one INSERT … SELECT generate_series; families of
three observations per entity), committed and vacuumed as a settled table is by the night the
job runs, and the database is dropped at the end. Prints the time of the real decay statement,
of the same night again (idempotent: nothing to change), and, for scale, of a bare
``UPDATE … SET decay = decay * 0.98`` over the same rows.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")


def main() -> int:
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.utils import timezone

    from bench.common.db import throwaway_database
    from brainframe.choices import ContextBucket
    from brainframe.services.memory.relevance import decay_run

    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--slices", type=int, default=settings.RABS_DECAY_SLICES)
    args = parser.parse_args()
    buckets = "ARRAY[" + ",".join(f"'{b}'" for b in ContextBucket.values) + "]"
    with throwaway_database("rabs_bench_decay"), connection.cursor() as cursor:
        started = time.perf_counter()
        cursor.execute(
            f"""
            INSERT INTO context_buckets (id, bucket, pattern_type, entity, observation,
                scoring, severity, frequency, decay, repeatable, family_boost,
                current_score, embedding_model, created_at, last_reinforced_at)
            SELECT gen_random_uuid(), ({buckets})[1 + (i / 3) %% 20], 'pattern-' || (i %% 3),
                   'entity-' || (i / 3), 'generated observation', '{{}}', 1 + i %% 5, 1 + i %% 7,
                   1.0, 1.0, 1.0, 1.0, '', now(), now() - ((i %% 365) || ' days')::interval
              FROM generate_series(1, %s) AS i
            """,
            [args.rows],
        )
        cursor.execute("VACUUM ANALYZE context_buckets")
        print(f"generated {args.rows:,} rows in {time.perf_counter() - started:.1f} s")
        night = timezone.localdate() + timedelta(days=1)
        started = time.perf_counter()
        result = decay_run(night=night, slices=args.slices)
        print(
            f"decay (family boost + decay + score), {args.slices} slice(s) at once: "
            f"{time.perf_counter() - started:.2f} s, {result['rows_updated']:,} rows"
        )
        started = time.perf_counter()
        result = decay_run(night=night, slices=args.slices)
        print(
            f"same night again (idempotent, nothing to change): "
            f"{time.perf_counter() - started:.2f} s, {result['rows_updated']:,} rows"
        )
        cursor.execute("VACUUM context_buckets")
        started = time.perf_counter()
        result = decay_run(night=night + timedelta(days=1), slices=1)
        print(
            f"the next night as one statement, for comparison: "
            f"{time.perf_counter() - started:.2f} s, {result['rows_updated']:,} rows"
        )
        cursor.execute("VACUUM context_buckets")
        started = time.perf_counter()
        cursor.execute("UPDATE context_buckets SET decay = decay * 0.98")
        print(f"bare UPDATE decay * 0.98 for scale: {time.perf_counter() - started:.2f} s")
        cursor.execute(
            "SELECT n_tup_hot_upd, n_tup_upd FROM pg_stat_user_tables "
            "WHERE relname = 'context_buckets'"
        )
        hot, total = cursor.fetchone()
        print(f"heap-only (HOT) updates: {hot:,} of {total:,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
