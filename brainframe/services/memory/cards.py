"""Learning cards (seed 001): a reviewer's rejection or modification with a reason becomes a lesson
for the agent ("when booking vehicles for more than 6 passengers, use the bus"), shown in its
context when due and scheduled by SM-2.

The grade (0–5) is not self-reported: when a card is due, the agent's calls of that tool since
the card was last reviewed are looked at; their mean alignment (0–1, from reviewers' decisions and
the alignment scoring) times five, rounded, is the grade. No such call yet: the card stays due.

SM-2 (Wozniak): grade < 3 → repetitions 0, interval 1 day; else interval 1, 6, then
round(interval × easiness); easiness += 0.1 − (5 − q)(0.08 + (5 − q) × 0.02), at least 1.3.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Avg, Count
from django.utils import timezone

from brainframe.models import Agent, ApprovalRequest, LearningCard, ToolCall

MIN_EASINESS = 1.3


@dataclass(frozen=True)
class Schedule:
    easiness: float
    interval_days: int
    repetitions: int


def sm2(schedule: Schedule, grade: int) -> Schedule:
    """The next schedule after a review graded ``grade`` (0–5)."""
    if not 0 <= grade <= 5:
        raise ValueError("an SM-2 grade is 0 to 5")
    easiness = max(
        MIN_EASINESS, schedule.easiness + 0.1 - (5 - grade) * (0.08 + (5 - grade) * 0.02)
    )
    if grade < 3:
        return Schedule(easiness, 1, 0)
    repetitions = schedule.repetitions + 1
    if repetitions == 1:
        interval = 1
    elif repetitions == 2:
        interval = 6
    else:
        interval = round(schedule.interval_days * easiness)
    return Schedule(easiness, interval, repetitions)


def card_from_decision(*, approval: ApprovalRequest, lesson: str, user: Any) -> LearningCard:
    """A card from a reviewer's rejection or modification: due at once (the agent's next
    context carries it)."""
    call = approval.tool_call
    assert call is not None, "a card is made from a decided tool call"
    return LearningCard.objects.create(
        agent_id=call.agent_id,
        tool_id=call.requested_tool_id,
        lesson=lesson.strip()[:2000],
        approval=approval,
        created_by=user if getattr(user, "pk", None) else None,
        due_at=timezone.now(),
    )


def cards_due(agent: Agent, *, now: datetime | None = None, limit: int = 5) -> list[LearningCard]:
    return list(
        LearningCard.objects.filter(
            agent=agent, active=True, due_at__lte=now or timezone.now()
        ).order_by("due_at")[:limit]
    )


def card_grade(card: LearningCard, *, now: datetime) -> int | None:
    """The grade of a due card from the agent's calls of its tool since it was last reviewed
    (or made): None when there is no rated call to judge by."""
    since = card.last_reviewed_at or card.created_at
    rated = ToolCall.objects.filter(
        agent_id=card.agent_id,
        requested_tool_id=card.tool_id,
        timestamp__gt=since,
        timestamp__lte=now,
        alignment_rating__isnull=False,
    ).aggregate(mean=Avg("alignment_rating"), n=Count("id"))
    if not rated["n"]:
        return None
    return max(0, min(5, round(float(rated["mean"]) * 5)))


def card_review(card: LearningCard, grade: int, *, now: datetime) -> LearningCard:
    schedule = sm2(Schedule(card.easiness, card.interval_days, card.repetitions), grade)
    card.easiness = round(schedule.easiness, 4)
    card.interval_days = schedule.interval_days
    card.repetitions = schedule.repetitions
    card.last_grade = grade
    card.last_reviewed_at = now
    card.due_at = now + timedelta(days=schedule.interval_days)
    card.reviews = [
        *card.reviews,
        {"at": now.isoformat(), "grade": grade, "interval_days": schedule.interval_days},
    ]
    card.save(
        update_fields=[
            "easiness",
            "interval_days",
            "repetitions",
            "last_grade",
            "last_reviewed_at",
            "due_at",
            "reviews",
        ]
    )
    return card


def cards_review_due(*, now: datetime | None = None) -> dict[str, int]:
    """The nightly job: every due card with calls to judge by is graded and rescheduled."""
    now = now or timezone.now()
    reviewed = waiting = 0
    for card in LearningCard.objects.filter(active=True, due_at__lte=now).order_by("due_at"):
        grade = card_grade(card, now=now)
        if grade is None:
            waiting += 1
            continue
        card_review(card, grade, now=now)
        reviewed += 1
    return {"reviewed": reviewed, "waiting": waiting}


def card_as_dict(card: LearningCard) -> dict[str, Any]:
    return {
        "id": str(card.pk),
        "tool_id": card.tool_id,
        "lesson": card.lesson,
        "due_at": card.due_at.isoformat(),
        "repetitions": card.repetitions,
        "interval_days": card.interval_days,
        "easiness": card.easiness,
    }
