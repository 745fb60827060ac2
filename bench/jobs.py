"""Benchmark: the nightly alignment + graduation job over many tools and calls.

    .venv/bin/python bench/jobs.py [--tools 1000] [--calls 10000000] [--days 90] [--replay-days N]

In a throwaway database (``rabs_jobs``): ``--tools`` tools and ``--calls`` executed calls spread
over ``--days`` days, generated in PostgreSQL (INSERT … SELECT generate_series). Every call is
rated except the last day's, as after a normal night; then ``alignment_nightly`` runs for that
day (rate the new calls, recency-weighted 90-day scores for every tool and agent, snapshots,
demotions, graduation) and is timed. (The decay job over 1,000,000 rows: ``bench/decay.py``.)
With ``--replay-days N``: the last N nights' snapshots are taken, dropped, and rebuilt by
``replay_events --view alignment`` (timed).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")
DB = "rabs_jobs"


def main() -> int:
    import django

    django.setup()
    from django.db import connection
    from django.utils import timezone

    from bench.common.db import throwaway_database

    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=10_000_000)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument(
        "--replay-days", type=int, default=0, help="then snapshot and replay this many days"
    )
    args = parser.parse_args()

    with throwaway_database(DB):
        from brainframe.models import Agent, OriginRegistry, ReasonLog
        from brainframe.services.trust.nightly import alignment_nightly

        day = timezone.localdate() - timedelta(days=1)
        agent = Agent.objects.get(agent_id="henry")
        origin = OriginRegistry.objects.create(origin_type="manual", source_ref="bench")
        reason = ReasonLog.objects.create(
            o_tag=origin, chain_id=origin.id, agent=agent, thought="benchmark"
        )
        with connection.cursor() as cursor:
            started = time.perf_counter()
            cursor.execute(
                """
                INSERT INTO tools
                SELECT (jsonb_populate_record(NULL::tools, to_jsonb(t) || jsonb_build_object(
                    'tool_id', 'bench.tool.' || i,
                    'monitoring_level', LEAST(i %% 4, t.monitoring_ceiling),
                    'alignment_score_90d', NULL))).*
                  FROM tools t, generate_series(1, %(n)s) AS i
                 WHERE t.tool_id = 'roster.shift.read'
                """,
                {"n": args.tools},
            )
            cursor.execute(
                """
                INSERT INTO tool_calls (id, agent_id, tool_id, requested_tool_id, task_id,
                    r_tag, o_tag, vpol_id, input, decision, decision_code, decision_detail,
                    decision_errors, threat_assessment, idempotency_key, request_hash, face,
                    hash_scheme, executed_arguments, outbound_findings, output, outcome, error,
                    duration_ms, executed_at, alignment_rating, alignment_reasons, seq,
                    prev_hash, row_hash, outcome_hash, timestamp)
                SELECT gen_random_uuid(), 'henry', 'bench.tool.' || (1 + i %% %(tools)s),
                       'bench.tool.' || (1 + i %% %(tools)s), NULL, %(reason)s, %(origin)s,
                       NULL, '{}', 'executed', 'auto', '', '[]', '{}', '', '', 'rest', 3, NULL,
                       '[]',
                       '{}', CASE WHEN i %% 50 = 0 THEN 'failed' ELSE 'succeeded' END, '', 5,
                       ts, CASE WHEN ts < %(last_day)s
                                THEN CASE WHEN i %% 50 = 0 THEN 0.4 ELSE 0.95 END END,
                       CASE WHEN ts < %(last_day)s THEN '["executed as intended"]'::jsonb
                            ELSE '[]'::jsonb END,
                       i, '', md5(i::text), '', ts
                  FROM generate_series(1, %(calls)s) AS i,
                       LATERAL (SELECT %(end)s - (i::bigint * %(span)s / %(calls)s)
                                           * interval '1 second' AS ts) t
                """,
                {
                    "tools": args.tools,
                    "calls": args.calls,
                    "reason": reason.id,
                    "origin": origin.id,
                    "end": timezone.now() - timedelta(hours=1),
                    "span": args.days * 86400,
                    "last_day": timezone.now() - timedelta(days=1),
                },
            )
            cursor.execute("ANALYZE tool_calls")
            print(
                f"generated {args.tools:,} tools and {args.calls:,} calls over {args.days} days "
                f"in {time.perf_counter() - started:.0f} s"
            )
        # The job's phases one by one (what alignment_nightly does), then the job itself on the
        # next day's data, which by then has nothing new to rate.
        from brainframe.services.trust import alignment as a
        from brainframe.services.trust import nightly

        as_of = a.end_of_day(day)
        total = 0.0
        for name, phase in (
            ("rate the day's calls", lambda: len(a.calls_rate(as_of=as_of))),
            ("90-day scores", lambda: a.scores_update(as_of=as_of)),
            ("snapshots", lambda: a.snapshots_write(day=day)),
            ("graduation", lambda: len(nightly.graduation_run(day=day))),
        ):
            started = time.perf_counter()
            out = phase()
            elapsed = time.perf_counter() - started
            total += elapsed
            print(f"  {name}: {elapsed:.1f} s" + (f" ({out})" if out is not None else ""))
        print(f"alignment + graduation phases for {day}: {total:.1f} s")
        started = time.perf_counter()
        result = alignment_nightly(day=day)
        print(f"alignment_nightly run again: {time.perf_counter() - started:.1f} s ({result})")
        if args.replay_days:
            _replay(day, args.replay_days, args.calls)
    return 0


def _replay(day: object, days: int, calls: int) -> None:
    """The last ``days`` nights' snapshots taken, then rebuilt by ``replay_events --view
    alignment`` from the audit's ratings and the level history."""
    from datetime import date

    from brainframe.models import AlignmentSnapshot
    from brainframe.services.eventlog.views import view_replay
    from brainframe.services.trust.alignment import snapshots_write

    assert isinstance(day, date)
    first = day - timedelta(days=days - 1)
    for n in range(days):
        snapshots_write(day=first + timedelta(days=n))
    rows = AlignmentSnapshot.objects.filter(date__gte=first).count()
    AlignmentSnapshot.objects.filter(date__gte=first).delete()
    started = time.perf_counter()
    written = view_replay("alignment", since=timezone_midnight(first))
    elapsed = time.perf_counter() - started
    print(
        f"replay_events --view alignment: {days} days over {calls:,} rated calls → "
        f"{written:,} snapshots (were {rows:,}) in {elapsed:.1f} s"
    )


def timezone_midnight(day: object) -> datetime:
    from datetime import datetime
    from datetime import time as dtime

    from django.utils import timezone

    return timezone.make_aware(datetime.combine(day, dtime.min))  # type: ignore[arg-type]


if __name__ == "__main__":
    raise SystemExit(main())
