"""Verify an exported audit file without the database, and without Django.

    python -m broker.verify_export FILE [FILE …] [--public-key KEYS.pem …]

``FILE``: what ``manage.py export_audit`` wrote (NDJSON, or CSV whose cells are JSON). Each
agent's rows must follow one another (seq + 1, prev_hash = the previous row's hash); every row's
hash must match its content and every outcome its outcome hash. An export that starts after an
agent's first row (``--since``) is checked from its first row on: that row's prev_hash is taken as
given.

With ``--public-key`` (the deployment's public keys, PEM: ``manage.py checkpoint_key``), the
signed records in the file are checked too: every checkpoint's and the export's own trailer's
signature, the checkpoints' sequence, and the rows against them. That refuses a file whose tail
was cut (fewer rows than a checkpoint or the trailer covers), a chain re-hashed from an edited
row on (heads that match no signature), and a forged checkpoint. Without it, a cut tail or a
re-hashed chain cannot be told from an intact file, and the verifier says so.

Exit 0 when intact; otherwise 1, naming each problem (2: bad usage).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.audit.chains import AUDIT, Head, checkpoints_fold
from broker.audit.hashing import (
    GENESIS_HASH,
    compute_outcome_hash,
    compute_row_hash,
    outcome_anchor,
)
from broker.audit.signing import public_keys_from_pem, signature_problem

OPEN_OUTCOMES = ("pending", "not_run")


@dataclass
class Export:
    rows: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    checkpoints: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    trailers: list[tuple[int, dict[str, Any]]] = field(default_factory=list)


def _lines(path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, JSON object) of every audit row and signed record of the file."""
    with open(path, newline="", encoding="utf-8") as handle:
        first = handle.read(1)
        handle.seek(0)
        if first == "{":
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    yield number, json.loads(line)
            return
        for number, cells in enumerate(csv.DictReader(handle), start=1):  # data rows
            record = cells.pop("record", None)
            if record:
                yield number, json.loads(record)
            else:
                yield number, {key: json.loads(value) for key, value in cells.items()}


def export_read(path: str) -> Export:
    export = Export()
    for number, value in _lines(path):
        kind = value.get("record")
        if kind == "checkpoint":
            export.checkpoints.append((number, value))
        elif kind == "export":
            export.trailers.append((number, value))
        else:
            export.rows.append((number, value))
    return export


def rows_of(path: str) -> Iterator[dict[str, Any]]:
    """The audit rows of a file (its signed records left out)."""
    return (row for _, row in export_read(path).rows)


def problems_in(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    """Each row against its content and the row before it in its agent's chain."""
    last: dict[str, tuple[int, str]] = {}
    for number, row in enumerate(rows, start=1):
        yield from _row_problems(number, row, last)


def _row_problems(number: int, row: dict[str, Any], last: dict[str, tuple[int, str]]) -> list[str]:
    found = []
    where = (
        f"line {number}: row {row.get('id')} (agent {row.get('agent_id')}, seq {row.get('seq')})"
    )
    before = last.get(row["agent_id"])
    if before is None:
        if row["seq"] == 1 and row["prev_hash"] != GENESIS_HASH:
            found.append(f"{where}: the first row does not start the chain")
    elif row["seq"] != before[0] + 1:
        found.append(f"{where}: expected seq {before[0] + 1} (a row is missing)")
    elif row["prev_hash"] != before[1]:
        found.append(f"{where}: prev_hash does not match the previous row")
    if compute_row_hash(row) != row["row_hash"]:
        found.append(f"{where}: content does not match its hash (row edited)")
    if row.get("outcome_hash"):
        if compute_outcome_hash(outcome_anchor(row), row) != row["outcome_hash"]:
            found.append(f"{where}: outcome does not match its hash (outcome edited)")
    elif row.get("outcome") not in OPEN_OUTCOMES:
        found.append(f"{where}: outcome written without its hash")
    last[row["agent_id"]] = (row["seq"], row["row_hash"])
    return found


@dataclass
class _Chain:
    first: int
    last: int
    rows: int
    hashes: dict[int, str]


def _chains(export: Export) -> dict[str, _Chain]:
    chains: dict[str, _Chain] = {}
    for _, row in export.rows:
        name = AUDIT + str(row["agent_id"])
        seq = int(row["seq"])
        chain = chains.get(name)
        if chain is None:
            chain = chains[name] = _Chain(seq, seq, 0, {})
        chain.first, chain.last = min(chain.first, seq), max(chain.last, seq)
        chain.rows += 1
        chain.hashes[seq] = row["row_hash"]
    return chains


def signed_problems(export: Export, keys: dict[str, Any]) -> list[str]:
    """The file's signed records, and its rows against them."""
    problems: list[str] = []
    if not export.trailers:
        return ["the export has no signed trailer: it may have been cut, or was not signed"]
    (number, trailer), *extra = export.trailers
    if extra or number < max((n for n, _ in (*export.rows, *export.checkpoints)), default=0):
        problems.append("the export's trailer is not its last line (rows were added after it)")
    problem = signature_problem(keys, trailer.get("body", ""), trailer.get("signature", ""))
    if problem:
        return [*problems, f"line {number}: the export's trailer: {problem}"]
    said = json.loads(trailer["body"])
    scope = said.get("scope") or {}
    chains = _chains(export)
    # The trailer: every row it signed is here, and nothing more.
    if said.get("rows") != len(export.rows):
        problems.append(
            f"the trailer signed {said.get('rows')} rows; the file holds {len(export.rows)}"
            + (" (a cut tail)" if len(export.rows) < int(said.get("rows") or 0) else "")
        )
    for name, head in sorted(said.get("heads", {}).items()):
        chain = chains.get(name)
        if chain is None or chain.last < head["seq"]:
            ends = f"ends at seq {chain.last}" if chain else "holds none of it"
            problems.append(
                f"{name}: the trailer signed rows to seq {head['seq']}; the file {ends} "
                "(a cut tail)"
            )
        elif chain.hashes.get(head["seq"]) != head["hash"]:
            problems.append(
                f"{name}: seq {head['seq']} does not match the trailer's signed hash (re-hashed)"
            )
    for name in sorted(set(chains) - set(said.get("heads", {}))):
        problems.append(f"{name}: rows the trailer did not sign")
    # The checkpoints: each signed, in sequence, and the rows up to each signed head.
    first = int(said.get("checkpoints", {}).get("first") or 1)
    folded = checkpoints_fold(
        (
            (int(json.loads(c["body"]).get("seq", 0)), c["body"], c["signature"])
            for _, c in export.checkpoints
        ),
        keys,
        first=first,
    )
    problems += folded.problems
    if folded.last != int(said.get("checkpoints", {}).get("last") or 0):
        problems.append(
            f"the trailer signed checkpoints to #{said.get('checkpoints', {}).get('last')}; "
            f"the file's last is #{folded.last}"
        )
    agent = scope.get("agent")
    for name, (head, seq, at) in sorted(folded.heads.items()):
        if not name.startswith(AUDIT) or (agent and name != AUDIT + agent):
            continue
        problems += _against(
            name,
            head,
            f"checkpoint #{seq} ({at:%Y-%m-%d %H:%M:%S} UTC)",
            chains.get(name),
            complete=not scope.get("since"),
        )
    return problems


def _against(
    name: str, head: Head, said: str, chain: _Chain | None, *, complete: bool
) -> list[str]:
    """A chain of the file against a checkpoint's signed head."""
    if chain is None:
        return (
            [f"{name}: {said} signed seq {head.seq}; the file holds none of it (a cut tail)"]
            if complete
            else []
        )
    if chain.last < head.seq:
        return [
            f"{name}: {said} signed seq {head.seq}; the file ends at seq {chain.last}: "
            f"{head.seq - chain.last} row(s) cut"
        ]
    if chain.first <= head.seq and chain.hashes.get(head.seq) != head.hash:
        return [f"{name}: seq {head.seq} does not match the hash {said} signed (re-hashed)"]
    return []


def _keys(paths: list[str]) -> dict[str, Any]:
    keys: dict[str, Any] = {}
    for path in paths:
        keys.update(public_keys_from_pem(Path(path).read_bytes()))
    return keys


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m broker.verify_export", description=__doc__.split("\n")[0]
    )
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.add_argument(
        "--public-key",
        action="append",
        default=[],
        metavar="KEYS.pem",
        help="the deployment's public keys (PEM; repeat or concatenate for retired keys)",
    )
    options = parser.parse_args(argv)
    try:
        keys = _keys(options.public_key)
    except (OSError, ValueError) as exc:
        print(f"--public-key: {exc}", file=sys.stderr)
        return 2
    broken = 0
    for path in options.files:
        export = export_read(path)
        last: dict[str, tuple[int, str]] = {}
        problems = [p for number, row in export.rows for p in _row_problems(number, row, last)]
        if keys:
            problems += signed_problems(export, keys)
        for problem in problems:
            print(f"{path}: {problem}")
        if not problems:
            signed = (
                f", {len(export.checkpoints)} checkpoint(s) and the trailer verified"
                if keys
                else "; signatures not checked (no --public-key): a cut tail or a re-hashed "
                "chain would not show"
            )
            print(f"{path}: intact ({len(export.rows)} rows{signed})")
        broken += len(problems)
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
