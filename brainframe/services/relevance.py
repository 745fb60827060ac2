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

from datetime import date

from django.db import connection, transaction

from brainframe.models import DecayRun

DAILY_FACTOR = 0.98
FAMILY_STEP = 0.25
FAMILY_CAP = 2.0

# One statement for every entry. Nights since reinforcement = the night's date minus the
# Brisbane date of (last_reinforced_at − 2 h): a reinforcement at 01:00 still sees that 02:00.
_DECAY_SQL = f"""
WITH family AS (
    SELECT bucket, entity, COUNT(*) - 1 AS others
      FROM context_buckets GROUP BY bucket, entity
), target AS (
    SELECT c.id,
           -- float8 throughout: numeric POWER over a million rows is many times slower
           POWER({DAILY_FACTOR}::float8, GREATEST(0, %(night)s::date - ((c.last_reinforced_at
                 - interval '2 hours') AT TIME ZONE %(tz)s)::date)::float8) AS decay,
           LEAST({FAMILY_CAP}::float8, 1.0::float8 + {FAMILY_STEP}::float8 * f.others)
               AS family_boost
      FROM context_buckets c JOIN family f USING (bucket, entity)
)
UPDATE context_buckets c
   SET decay = t.decay,
       family_boost = t.family_boost,
       current_score = c.severity * c.frequency * t.decay * c.repeatable * t.family_boost
  FROM target t
 WHERE c.id = t.id
   AND (c.decay IS DISTINCT FROM t.decay OR c.family_boost IS DISTINCT FROM t.family_boost)
"""


def decay_run(*, night: date) -> dict[str, int | bool]:
    """Apply the decay for ``night`` (idempotent; safe late and after missed nights)."""
    from django.conf import settings

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(_DECAY_SQL, {"night": night, "tz": settings.TIME_ZONE})
            updated = cursor.rowcount
        _, first_time = DecayRun.objects.get_or_create(
            night=night, defaults={"rows_updated": updated}
        )
    return {"rows_updated": updated, "first_run_for_night": first_time}
