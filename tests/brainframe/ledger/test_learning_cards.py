"""Learning cards (seed 001): a rejection with a lesson becomes a card in the agent's
context, graded by its later calls on the SM-2 schedule."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from brainframe.models import Agent, ApprovalRequest, LearningCard, ToolCall
from brainframe.services.memory.cards import Schedule, card_review, cards_review_due, sm2
from tests import factories as f
from tests.brainframe.ledger.conftest import agent_call
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db


def test_sm2_schedule_over_simulated_dates() -> None:
    s = Schedule(2.5, 0, 0)
    intervals = []
    for grade in (5, 5, 4, 2, 4):
        s = sm2(s, grade)
        intervals.append((s.interval_days, s.repetitions, round(s.easiness, 2)))
    assert intervals == [(1, 1, 2.6), (6, 2, 2.7), (16, 3, 2.7), (1, 0, 2.38), (1, 1, 2.38)]
    assert sm2(Schedule(1.3, 10, 5), 0).easiness == 1.3  # never below 1.3
    with pytest.raises(ValueError):
        sm2(s, 6)


def test_a_rejection_with_a_lesson_becomes_a_card_graded_by_later_calls(
    people: dict[str, Any], henry: SignedClient
) -> None:
    from django.contrib.auth.models import Group

    from broker.services.approvals import approval_decide

    f.ToolFactory(
        tool_id="test.bus.book",
        risk_level="write",
        execution_mode="review",
        validation_mode="intercept",
        agent_access=["henry"],
    )
    Agent.objects.filter(agent_id="henry").update(monitoring_level=0)
    pending = agent_call(henry, "test.bus.book")
    assert pending["status"] == "pending_approval", pending
    alice = f.UserFactory(username="alice")
    alice.groups.add(Group.objects.get(name="reviewers"))
    approval = ApprovalRequest.objects.get(tool_call_id=pending["call_id"])
    approval_decide(
        approval_id=approval.pk,
        reviewer=alice,
        action="reject",
        reason="8 passengers",
        lesson="For more than 6 passengers, book the bus, not the van.",
    )
    card = LearningCard.objects.get()
    assert (card.agent_id, card.tool_id) == ("henry", "test.bus.book")
    assert card.approval_id == approval.pk
    context = henry.get("/api/v1/context/").json()
    assert context["learning_cards"][0]["lesson"].startswith("For more than 6 passengers")

    # Simulated dates: no call since the card was made → it waits; aligned calls → grade 5.
    day0 = timezone.now()
    assert cards_review_due(now=day0) == {"reviewed": 0, "waiting": 1}
    later = agent_call(henry, "test.bus.book")
    ToolCall.objects.filter(pk=later["call_id"]).update(alignment_rating=1.0)
    assert cards_review_due(now=day0 + timedelta(hours=1)) == {"reviewed": 1, "waiting": 0}
    card.refresh_from_db()
    assert (card.last_grade, card.interval_days, card.repetitions) == (5, 1, 1)
    assert card.due_at == day0 + timedelta(hours=1, days=1)
    assert henry.get("/api/v1/context/").json()["learning_cards"] == []  # not due: learned
    # A poor later call: grade 1 → back to a one-day interval, repetitions 0.
    card_review(card, 1, now=day0 + timedelta(days=2))
    assert (card.repetitions, card.interval_days) == (0, 1)
    assert len(card.reviews) == 2
