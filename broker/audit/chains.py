"""What the checkpoints say about the chains, without the database: chain names, heads, and
the fold of a run of signed checkpoints into each chain's last signed head. Imports nothing of
Django: the export's verifier (``broker.verify_export``) uses it as ``verify_audit`` does.

A chain is named ``audit:<agent>`` (an agent's ``tool_calls``), ``events:<stream>`` (an event-log
stream), ``ledger:events`` (the events ledger) or ``thread:<id>`` (a conversation thread's sealed
turns). Its head is (seq, hash, count) of its last row; chains have no gaps (a gap is a break the
verifiers name), so ``count`` is the last seq.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .signing import GENESIS, body_digest, signature_problem

AUDIT, EVENTS, LEDGER, THREAD = "audit:", "events:", "ledger:events", "thread:"


@dataclass(frozen=True)
class Head:
    seq: int
    hash: str

    @property
    def count(self) -> int:
        return self.seq

    def as_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "hash": self.hash, "count": self.count}


def heads_of(body: dict[str, Any], key: str) -> dict[str, Head]:
    """A statement's heads (``heads`` or ``threads``), by chain."""
    return {name: Head(int(h["seq"]), str(h["hash"])) for name, h in body.get(key, {}).items()}


def chain_split(chain: str) -> tuple[str, str]:
    """(kind, key) of a chain's name; ValueError for a name that is none."""
    if chain == LEDGER:
        return LEDGER, LEDGER
    for kind in (AUDIT, EVENTS, THREAD):
        if chain.startswith(kind):
            key = chain[len(kind) :]
            if kind == THREAD:
                key = str(uuid.UUID(key))
            return kind, key
    raise ValueError(f"not a chain name: {chain!r}")


def chain_label(chain: str) -> str:
    """A chain's name as the verifiers say it."""
    kind, key = chain_split(chain)
    return {
        AUDIT: f"audit chain of agent {key}",
        EVENTS: f"event log stream {key}",
        LEDGER: "events ledger",
        THREAD: f"thread {key}",
    }[kind]


@dataclass
class Folded:
    """What a run of checkpoints says, checked: for each chain, its last signed head, and the
    checkpoint (seq, time) that signed it."""

    heads: dict[str, tuple[Head, int, datetime]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    count: int = 0
    last: int = 0


def checkpoints_fold(
    rows: Iterable[tuple[int, str, str]], trusted: dict[str, Any], *, first: int = 1
) -> Folded:
    """Every checkpoint's signature (against the trusted keys), sequence from ``first`` on and
    link to the one before, and each chain's last signed head (a later checkpoint that states a
    chain shorter, or otherwise at the same seq, is named)."""
    folded = Folded()
    prev_digest: str | None = GENESIS if first == 1 else None
    prev_seq = first - 1
    for seq, text, signature in rows:
        folded.count += 1
        where = f"checkpoint #{seq}"
        problem = signature_problem(trusted, text, signature)
        if problem:
            folded.problems.append(f"{where}: {problem}")
            continue
        body = json.loads(text)
        if seq != prev_seq + 1:
            folded.problems.append(f"{where}: checkpoints #{prev_seq + 1}–#{seq - 1} are missing")
        elif prev_digest is not None and body.get("prev") != prev_digest:
            folded.problems.append(f"{where}: does not follow the checkpoint before it")
        if body.get("seq") != seq:
            folded.problems.append(f"{where}: its body says #{body.get('seq')}")
        at = datetime.fromisoformat(body["at"])
        for key in ("heads", "threads"):
            for name, head in heads_of(body, key).items():
                before = folded.heads.get(name)
                if before is not None and (
                    head.seq < before[0].seq
                    or (head.seq == before[0].seq and head.hash != before[0].hash)
                ):
                    folded.problems.append(
                        f"{where}: states {chain_label(name)} at seq {head.seq}, but checkpoint "
                        f"#{before[1]} signed seq {before[0].seq} (a rewritten history signed)"
                    )
                    continue
                folded.heads[name] = (head, seq, at)
        prev_digest, prev_seq, folded.last = body_digest(text), seq, seq
    return folded
