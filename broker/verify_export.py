"""Verify an exported audit file without the database (standard library only).

    python -m broker.verify_export FILE [FILE …]

``FILE``: what ``manage.py export_audit`` wrote (NDJSON, or CSV whose cells are JSON). Each
agent's rows must follow one another (seq + 1, prev_hash = the previous row's hash); every row's
hash must match its content and every outcome its outcome hash. An export that starts after an
agent's first row (``--since``) is checked from its first row on: that row's prev_hash is taken as
given (compare it with the row before, kept elsewhere). Exit 0 when intact; otherwise 1, naming
each broken row.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterator
from typing import Any

from broker.audit.hashing import (
    GENESIS_HASH,
    compute_outcome_hash,
    compute_row_hash,
    outcome_anchor,
)

OPEN_OUTCOMES = ("pending", "not_run")


def rows_of(path: str) -> Iterator[dict[str, Any]]:
    with open(path, newline="", encoding="utf-8") as handle:
        first = handle.read(1)
        handle.seek(0)
        if first == "{":
            for line in handle:
                if line.strip():
                    yield json.loads(line)
        else:
            for record in csv.DictReader(handle):
                yield {key: json.loads(value) for key, value in record.items()}


def problems_in(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    last: dict[str, tuple[int, str]] = {}
    for number, row in enumerate(rows, start=1):
        where = (
            f"line {number}: row {row.get('id')} "
            f"(agent {row.get('agent_id')}, seq {row.get('seq')})"
        )
        before = last.get(row["agent_id"])
        if before is None:
            if row["seq"] == 1 and row["prev_hash"] != GENESIS_HASH:
                yield f"{where}: the first row does not start the chain"
        elif row["seq"] != before[0] + 1:
            yield f"{where}: expected seq {before[0] + 1} (a row is missing)"
        elif row["prev_hash"] != before[1]:
            yield f"{where}: prev_hash does not match the previous row"
        if compute_row_hash(row) != row["row_hash"]:
            yield f"{where}: content does not match its hash (row edited)"
        if row.get("outcome_hash"):
            if compute_outcome_hash(outcome_anchor(row), row) != row["outcome_hash"]:
                yield f"{where}: outcome does not match its hash (outcome edited)"
        elif row.get("outcome") not in OPEN_OUTCOMES:
            yield f"{where}: outcome written without its hash"
        last[row["agent_id"]] = (row["seq"], row["row_hash"])


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m broker.verify_export FILE [FILE …]", file=sys.stderr)
        return 2
    broken = 0
    for path in argv:
        rows = list(rows_of(path))
        problems = list(problems_in(iter(rows)))
        for problem in problems:
            print(f"{path}: {problem}")
        if not problems:
            print(f"{path}: intact ({len(rows)} rows)")
        broken += len(problems)
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
