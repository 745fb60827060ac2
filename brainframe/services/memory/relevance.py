"""Relevance of observations (seed 000 §6): family boost and the nightly decay.

``current_score = severity × frequency × decay × repeatable × family_boost``

* **decay** is ``0.98 ^ n`` where *n* is the number of nightly runs (02:00 Australia/Brisbane)
  since the entry was last reinforced: 0.545 after 30 nights, 0.163 after 90, 0.027 after 180.
  The job computes it from the night it runs for, so running a night twice, or late, or after
  missed nights gives the same values: each night is applied exactly once.
* **family boost** is ``min(2.0, 1.0 + 0.25 × k)`` where *k* is the number of *other* entries
  about the same entity in the same bucket: a participant with several related observations
  surfaces ahead of a one-off.

Nothing is deleted: stale entries keep decaying until they stop surfacing.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import date, datetime, time
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import connection, transaction

from brainframe.models import DecayRun

DAILY_FACTOR = 0.98
FAMILY_STEP = 0.25
FAMILY_CAP = 2.0

# One statement for every entry, joined only to the per-family counts (no self-join by id).
# Nights since reinforcement = the number of 02:00 local instants after ``last_reinforced_at``
# up to the night's own 02:00 (``%(cut)s``, computed in Python in settings.TIME_ZONE): whole days
# counted in float8 epoch seconds, which for a zone without daylight saving (Brisbane) equals
# the night's date minus the local date of (last_reinforced_at − 2 h) and is several times
# cheaper than converting every row's timestamp. A reinforcement at 01:00 still sees that 02:00.
_DECAY = (
    f"POWER({DAILY_FACTOR}::float8, GREATEST(0::float8, "
    "CEIL((%(cut)s::float8 - date_part('epoch', c.last_reinforced_at)) / 86400)))"
)
_BOOST = f"LEAST({FAMILY_CAP}::float8, 1.0::float8 + {FAMILY_STEP}::float8 * f.others)"
_DECAY_SQL = f"""
WITH family AS (
    SELECT bucket, entity, COUNT(*) - 1 AS others
      FROM context_buckets GROUP BY bucket, entity
)
UPDATE context_buckets c
   SET decay = {_DECAY},
       family_boost = {_BOOST},
       current_score = c.severity * c.frequency * {_DECAY} * c.repeatable * {_BOOST}
  FROM family f
 WHERE c.bucket = f.bucket AND c.entity = f.entity
   AND (c.decay IS DISTINCT FROM {_DECAY} OR c.family_boost IS DISTINCT FROM {_BOOST})
"""


def night_cut(night: date) -> float:
    """The epoch seconds of 02:00 on ``night`` in settings.TIME_ZONE (when that night runs)."""
    local = datetime.combine(night, time(2, 0), tzinfo=ZoneInfo(settings.TIME_ZONE))
    return local.timestamp()


def decay_run(*, night: date, slices: int | None = None) -> dict[str, int | bool]:
    """Apply the decay for ``night`` (idempotent; safe late and after missed nights).

    The table is cut into ``slices`` (``RABS_DECAY_SLICES``) ranges of pages, each updated by one
    statement on a connection of its own, at once: PostgreSQL runs an UPDATE on one core, the
    slices use all of them. A slice that fails leaves the others done; since every value is
    computed from the night, running the night again finishes it and changes nothing twice.
    Inside a caller's transaction it runs as one statement there (other connections could not
    see that transaction's rows).
    """
    cut = night_cut(night)
    slices = settings.RABS_DECAY_SLICES if slices is None else slices
    if slices <= 1 or connection.in_atomic_block:
        updated = _decay_slice(cut, None)
    else:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_relation_size('context_buckets') / current_setting('block_size')::int"
            )
            pages = int(cursor.fetchone()[0])
        starts = [pages * n // slices for n in range(slices)]
        # The last slice is open-ended: pages added meanwhile are in it.
        ranges = list(zip(starts, [*starts[1:], None], strict=True))
        with ThreadPoolExecutor(max_workers=slices, thread_name_prefix="decay") as pool:
            updated = sum(pool.map(lambda pages: _decay_in_thread(cut, pages), ranges))
    with transaction.atomic():
        _, first_time = DecayRun.objects.get_or_create(
            night=night, defaults={"rows_updated": updated}
        )
    return {"rows_updated": updated, "first_run_for_night": first_time}


def _decay_in_thread(cut: float, pages: tuple[int, int | None]) -> int:
    try:
        return _decay_slice(cut, pages)
    finally:
        connection.close()  # this thread's own connection


def _decay_slice(cut: float, pages: tuple[int, int | None] | None) -> int:
    """The decay statement over every row, or over the rows stored on pages [first, last)."""
    sql = _DECAY_SQL
    params: dict[str, float | str] = {"cut": cut}
    if pages is not None:
        first, last = pages
        sql += " AND c.ctid >= %(first)s::tid"
        params["first"] = f"({first},0)"
        if last is not None:
            sql += " AND c.ctid < %(last)s::tid"
            params["last"] = f"({last},0)"
    with transaction.atomic(), connection.cursor() as cursor:
        # The family counts are hashed in memory rather than spilled to disk in batches.
        cursor.execute("SET LOCAL work_mem = '64MB'")
        cursor.execute(sql, params)
        return int(cursor.rowcount)
