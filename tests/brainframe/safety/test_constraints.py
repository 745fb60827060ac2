"""Ranges the seed states are enforced by the database itself, not by Python checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import IntegrityError, transaction

from brainframe import models as m
from tests import factories as f

pytestmark = pytest.mark.django_db


def _insert(factory: Callable[..., Any], **values: Any) -> None:
    # factory.create() -> Model.objects.create(): no full_clean(), so only the database checks.
    with transaction.atomic():
        factory(**values)


OUT_OF_RANGE = [
    (f.ContextBucketEntryFactory, "severity", 0),
    (f.ContextBucketEntryFactory, "severity", 6),
    (f.ContextBucketEntryFactory, "decay", -0.01),
    (f.ContextBucketEntryFactory, "decay", 1.01),
    (f.ContextBucketEntryFactory, "repeatable", 0.49),
    (f.ContextBucketEntryFactory, "repeatable", 1.51),
    (f.ContextBucketEntryFactory, "family_boost", 0.99),
    (f.ContextBucketEntryFactory, "family_boost", 2.01),
    (f.ContextBucketEntryFactory, "frequency", 0),
    (f.ContextBucketEntryFactory, "bucket", "gossip"),
    (f.ToolFactory, "monitoring_level", 5),
    (f.ToolFactory, "monitoring_ceiling", 5),
    (f.ToolFactory, "alignment_score_90d", 1.0001),
    (f.ToolFactory, "alignment_score_90d", -0.0001),
    (f.ToolFactory, "approval_timeout_minutes", 0),
    (f.AgentFactory, "monitoring_level", 5),
    (f.AgentFactory, "alignment_score_90d", 1.5),
    (f.ReasonLogFactory, "confidence", 1.01),
    (f.ReasonLogFactory, "confidence", -0.01),
    (f.ReasonLogFactory, "risk", 1.5),
    (f.ReasonLogFactory, "alignment", 1.2),
    (f.ToolCallFactory, "alignment_rating", 1.1),
    (f.ToolCallFactory, "alignment_rating", -0.1),
    (f.ApprovalRequestFactory, "confidence", 1.1),
    (f.AgentTaskFactory, "priority", 101),
    (f.AgentTaskFactory, "progress", 101),
]


@pytest.mark.parametrize(("factory", "field", "value"), OUT_OF_RANGE)
def test_database_rejects_out_of_range(factory: Any, field: str, value: Any) -> None:
    with pytest.raises(IntegrityError):
        _insert(factory, **{field: value})
    assert not factory._meta.model.objects.filter(**{field: value}).exists()


IN_RANGE = [
    (
        f.ContextBucketEntryFactory,
        {"severity": 1, "decay": 0.0, "repeatable": 0.5, "family_boost": 1.0},
    ),
    (
        f.ContextBucketEntryFactory,
        {"severity": 5, "decay": 1.0, "repeatable": 1.5, "family_boost": 2.0},
    ),
    (f.ToolFactory, {"monitoring_level": 4, "alignment_score_90d": 1}),
    (f.ToolFactory, {"monitoring_level": 0, "alignment_score_90d": 0}),
    (f.ReasonLogFactory, {"confidence": 0.0, "risk": 1.0, "alignment": 1.0}),
    (f.ToolCallFactory, {"alignment_rating": 0.0}),
]


@pytest.mark.parametrize(("factory", "values"), IN_RANGE)
def test_boundaries_are_accepted(factory: Any, values: dict[str, Any]) -> None:
    _insert(factory, **values)


def test_rejected_approval_needs_a_reason() -> None:
    with pytest.raises(IntegrityError):
        _insert(f.ApprovalRequestFactory, status="rejected", decision_reason="")
    _insert(f.ApprovalRequestFactory, status="rejected", decision_reason="wrong participant")


def test_level_change_names_exactly_one_subject() -> None:
    tool = f.ToolFactory()
    agent = f.AgentFactory()
    common = {"from_level": 0, "to_level": 1, "rule": "manual", "reason": "test"}
    with pytest.raises(IntegrityError), transaction.atomic():
        m.MonitoringLevelChange.objects.create(**common)
    with pytest.raises(IntegrityError), transaction.atomic():
        m.MonitoringLevelChange.objects.create(tool=tool, agent=agent, **common)
    with pytest.raises(IntegrityError), transaction.atomic():
        m.MonitoringLevelChange.objects.create(tool=tool, **{**common, "to_level": 5})
    m.MonitoringLevelChange.objects.create(tool=tool, **common)


def test_directive_code_and_priority() -> None:
    base = {"scope": "s", "rule_text": "r"}
    with pytest.raises(IntegrityError), transaction.atomic():
        m.PrimeDirective.objects.create(code="lower_case", priority=50, **base)
    with pytest.raises(IntegrityError), transaction.atomic():
        m.PrimeDirective.objects.create(code="TOO_HIGH", priority=101, **base)


def test_one_row_per_bucket_entity_pattern() -> None:
    f.ContextBucketEntryFactory(entity="Hiace 2")
    with pytest.raises(IntegrityError):
        _insert(f.ContextBucketEntryFactory, entity="Hiace 2")


def test_one_active_credential_per_agent() -> None:
    agent = f.AgentFactory()
    m.AgentCredential.objects.create(agent=agent, secret_encrypted="x", fingerprint="a")
    with pytest.raises(IntegrityError), transaction.atomic():
        m.AgentCredential.objects.create(agent=agent, secret_encrypted="y", fingerprint="b")


def test_vector_columns_hold_768_dimensions() -> None:
    entry = f.ContextBucketEntryFactory(vector=[0.1] * 768)
    entry.refresh_from_db()
    assert len(entry.vector) == 768
    with pytest.raises(Exception), transaction.atomic():  # noqa: B017 - pgvector's DataError
        f.ContextBucketEntryFactory(vector=[0.1] * 767)
