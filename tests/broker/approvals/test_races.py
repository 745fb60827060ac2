"""Exactly-once execution when two reviewers decide the same approval at once, a thousand times
each way."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import connection

from brainframe.models import ApprovalRequest, ToolCall
from broker.services.approvals import ApprovalError, approval_decide
from tests import factories as f


def _pending_fast(world: dict[str, Any], q: str) -> ApprovalRequest:
    """A pending pre-execution approval and its call, written directly (the race is in the
    decision and execution, not in how the item was created)."""
    from broker.audit.hashing import arguments_hash

    arguments = {"q": q}
    call = f.ToolCallFactory(
        agent=world["henry"],
        tool=world["tool"],
        input=arguments,
        decision="pending_approval",
        outcome="not_run",
        task=world["task"],
    )
    return f.ApprovalRequestFactory(
        agent=world["henry"],
        tool=world["tool"],
        tool_call=call,
        task=world["task"],
        arguments=arguments,
        arguments_hash=arguments_hash(arguments),
    )


def _race(
    world: dict[str, Any], iterations: int, actions: tuple[str, str], executed: list[dict[str, Any]]
) -> Counter[str]:
    outcomes: Counter[str] = Counter()
    reviewers = (world["alice"], world["bob"])

    def decide(approval_id: Any, who: int, barrier: threading.Barrier) -> str:
        barrier.wait()
        try:
            approval_decide(
                approval_id=approval_id,
                reviewer=reviewers[who],
                action=actions[who],
                reason="ok" if actions[who] != "reject" else "no",
            )
            return actions[who]
        except ApprovalError as exc:
            return exc.code
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=2) as pool:
        for i in range(iterations):
            approval = _pending_fast(world, q=f"i{i}")
            before = len(executed)
            barrier = threading.Barrier(2)
            results = sorted(
                f.result()
                for f in [pool.submit(decide, approval.pk, who, barrier) for who in (0, 1)]
            )
            outcomes["/".join(results)] += 1
            runs = len(executed) - before
            approval.refresh_from_db()
            won = approval.status
            assert runs == (1 if won == "approved" else 0), (i, results, won, runs)
            call = ToolCall.objects.get(pk=approval.tool_call_id)
            assert call.outcome == ("succeeded" if won == "approved" else "cancelled")
    return outcomes


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_concurrent_approve_approve_executes_exactly_once(
    world: dict[str, Any], executed: list[dict[str, Any]]
) -> None:
    outcomes = _race(world, 1000, ("approve", "approve"), executed)
    assert outcomes == {"already_decided/approve": 1000}
    assert len(executed) == 1000


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_concurrent_approve_reject_executes_at_most_once(
    world: dict[str, Any], executed: list[dict[str, Any]]
) -> None:
    outcomes = _race(world, 1000, ("approve", "reject"), executed)
    assert sum(outcomes.values()) == 1000
    assert set(outcomes) <= {"already_decided/approve", "already_decided/reject"}
    assert len(executed) == outcomes["already_decided/approve"]
