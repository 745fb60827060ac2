"""The canonical JSON every hash is taken over (brainframe/canonical.py): the bytes of stored
hash chains must never change, and what is stored must be JSON."""

from __future__ import annotations

import datetime
import uuid

import pytest
from django.db import DataError

from brainframe.canonical import canonical_json
from brainframe.events.base import event_content_hash
from broker.audit.hashing import (
    CONTENT_FIELDS,
    arguments_hash,
    compute_content_hash,
    compute_outcome_hash,
)

AT = datetime.datetime(2026, 11, 27, 17, 0, 0, 123456, tzinfo=datetime.UTC)


def test_the_hashes_of_stored_rows_are_what_they_always_were() -> None:
    """Golden values taken before the event log and the audit shared one encoder: a change to
    the encoding would make every chain already stored fail verification."""
    event = {
        "stream": "system",
        "name": "tool_call:executed",
        "agent_id": "a-1",
        "subject": "c-1",
        "payload": {"b": [1, 2.5, "é"], "a": None, "when": AT},
        "at": AT,
    }
    assert event_content_hash(event) == (
        "579f4ee08d5c76dcde37383be2a2ca4012f0d6891fe15b92142553e8792e38bc"
    )
    row = dict.fromkeys(CONTENT_FIELDS) | {
        "id": uuid.UUID(int=1),
        "agent_id": "agent-1",
        "input": {"z": 1, "a": "ü", "d": datetime.date(2026, 1, 2)},
        "decision": "executed",
        "decision_errors": [],
        "threat_assessment": {"risk": 0.25},
        "timestamp": AT,
        "hash_scheme": 3,
        "face": "rest",
    }
    content = compute_content_hash(row)
    assert content == "4c7f7d785f8dd373db6820a25b975361dd26eadfc505d7b3534d54a98c578c76"
    outcome = {
        "outcome": "succeeded",
        "output": {"rows": [1.0, 2]},
        "error": "",
        "duration_ms": 3,
        "executed_at": AT,
        "executed_arguments": None,
        "outbound_findings": [],
    }
    assert compute_outcome_hash(content, outcome) == (
        "74bd4f7e19957fbb7a4bd440885de4de826740f95c06bcd7a2f4098eb170199c"
    )
    assert arguments_hash({"x": [1, {"y": "é"}]}) == (
        "23554c7d621bd4c32c4f5cf4ea50738a84672b0c93c03fc07cc7e7abafa67ce0"
    )


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_what_is_stored_must_be_json(bad: float) -> None:
    with pytest.raises(DataError, match="not JSON"):
        canonical_json({"n": [bad]})
    with pytest.raises(DataError):
        event_content_hash(
            {"stream": "s", "name": "n", "agent_id": "", "subject": "", "payload": bad, "at": AT}
        )
    # A fingerprint of what is never stored may still be taken.
    assert canonical_json({"n": bad}, strict=False).startswith(b'{"n":')
