"""The Guardian, a seventh round: a staff member's own text (standard trust) is flagged on the
learned stage's score alone only from ``STAFF_FLOOR``; below it, in the tuning batches, the
staff texts were quotations, policies and reported scams. Rows of the tuning batches
(eval/corpora/rabs-families-guardian-r*.jsonl), read by id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brainframe.safety.guardian.core import STAFF_FLOOR, assess, detector

EVAL = Path(__file__).resolve().parents[3] / "eval" / "corpora"


def _row(batch: str, row_id: str) -> dict[str, str]:
    for line in (EVAL / f"rabs-families-guardian-{batch}.jsonl").open():
        row = json.loads(line)
        if row["id"] == row_id:
            return row
    raise LookupError(row_id)


@pytest.mark.parametrize(
    ("batch", "row_id"), [("r5", "t5-85"), ("r7", "t7-83"), ("r9", "t9-62"), ("r9", "t9-87")]
)
def test_a_staff_text_in_the_learned_lower_band_is_allowed(batch: str, row_id: str) -> None:
    row = _row(batch, row_id)
    assert (row["label"], row["trust"]) == ("benign", "standard")
    verdict = assess(row["text"], "standard", source=row["source"])
    # in the band the floor is about: over the model's threshold, under the staff floor
    assert verdict.learned is not None and detector().threshold <= verdict.learned < STAFF_FLOOR
    assert verdict.action == "allow", verdict.as_dict()
    # the same text from a sender nobody knows is still read by the lower band
    assert assess(row["text"], "untrusted", source=row["source"]).action != "allow"


@pytest.mark.parametrize(("batch", "row_id"), [("r5", "t5-11"), ("r7", "t7-50")])
def test_a_staff_attack_over_the_floor_is_still_flagged(batch: str, row_id: str) -> None:
    row = _row(batch, row_id)
    assert (row["label"], row["trust"]) == ("attack", "standard")
    verdict = assess(row["text"], "standard", source=row["source"])
    assert verdict.learned is not None and verdict.learned >= STAFF_FLOOR
    assert verdict.action == "flag", verdict.as_dict()
