"""Verifying a chain: the first row of an agent's ``tool_calls`` chain that does not match."""

from __future__ import annotations

import multiprocessing
import uuid
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from django.db import connection, connections
from django.db.models import Max

from brainframe.models import ToolCall

from .hashing import (
    GENESIS_HASH,
    HASHED_FIELDS,
    OUTCOME_FIELDS,
    compute_outcome_hash,
    compute_row_hash,
    outcome_anchor,
)


@dataclass(frozen=True)
class ChainBreak:
    agent_id: str
    call_id: uuid.UUID
    seq: int
    problem: str

    def __str__(self) -> str:
        return (
            f"tool_calls row {self.call_id} (agent {self.agent_id}, seq {self.seq}): {self.problem}"
        )


#: Below this many rows a chain is verified in this process; above it, in ``workers`` processes.
PARALLEL_FROM_ROWS = 100_000


def verify_chain(
    agent_id: str,
    *,
    workers: int = 1,
    parallel_from: int = PARALLEL_FROM_ROWS,
    chunk_size: int = 5000,
) -> ChainBreak | None:
    """The first row of ``agent_id``'s chain that does not match, or None if it is intact.

    With ``workers`` > 1 a long chain is cut into that many runs of ``seq`` verified side by
    side in forked processes (each run checks its first row against the stored hash of the row
    before it, which the previous run verifies); the break with the lowest ``seq`` is named.
    Not for daemonic processes (a Celery worker's children cannot fork): the command uses it.
    """
    last = 0
    if workers > 1:
        last = ToolCall.objects.filter(agent_id=agent_id).aggregate(m=Max("seq"))["m"] or 0
    if workers <= 1 or last < parallel_from:
        return _verify_run(agent_id, 1, None, chunk_size)
    step = -(-last // workers)
    runs = [
        (agent_id, first, min(first + step - 1, last), chunk_size)
        for first in range(1, last + 1, step)
    ]
    # Children must not share the parent's database connections: close them before forking.
    connections.close_all()
    if hasattr(connection, "close_pool"):
        connection.close_pool()
    with ProcessPoolExecutor(len(runs), mp_context=multiprocessing.get_context("fork")) as pool:
        breaks = [found for found in pool.map(_verify_run_in_child, runs) if found is not None]
    return min(breaks, key=lambda found: found.seq) if breaks else None


def _verify_run_in_child(run: tuple[str, int, int, int]) -> ChainBreak | None:
    try:
        return _verify_run(*run)
    finally:
        connections.close_all()


def _verify_run(agent_id: str, first: int, last: int | None, chunk_size: int) -> ChainBreak | None:
    """Verify rows ``first``..``last`` (to the end when None) of one chain."""
    expected_seq = first
    prev_hash: str | None = GENESIS_HASH
    if first > 1:
        prev_hash = (
            ToolCall.objects.filter(agent_id=agent_id, seq=first - 1)
            .values_list("row_hash", flat=True)
            .first()
        )
    columns = (*HASHED_FIELDS, "hash_scheme", "face", "row_hash", "outcome_hash", *OUTCOME_FIELDS)
    rows = ToolCall.objects.filter(agent_id=agent_id, seq__gte=first)
    if last is not None:
        rows = rows.filter(seq__lte=last)
    stream: Iterator[dict[str, Any]] = (
        rows.order_by("seq").values(*columns).iterator(chunk_size=chunk_size)
    )
    for row in stream:
        where = (agent_id, row["id"], row["seq"])
        if prev_hash is None:  # the row before this run is gone
            return ChainBreak(*where, f"expected seq {first - 1} (a row is missing)")
        if row["seq"] != expected_seq:
            return ChainBreak(*where, f"expected seq {expected_seq} (a row is missing)")
        if row["prev_hash"] != prev_hash:
            return ChainBreak(*where, "prev_hash does not match the previous row")
        if compute_row_hash(row) != row["row_hash"]:
            return ChainBreak(*where, "content does not match its hash (row edited)")
        if row["outcome_hash"]:
            if compute_outcome_hash(outcome_anchor(row), row) != row["outcome_hash"]:
                return ChainBreak(*where, "outcome does not match its hash (outcome edited)")
        elif row["outcome"] not in (ToolCall.Outcome.PENDING, ToolCall.Outcome.NOT_RUN):
            return ChainBreak(*where, "outcome written without its hash")
        expected_seq, prev_hash = expected_seq + 1, row["row_hash"]
    return None
