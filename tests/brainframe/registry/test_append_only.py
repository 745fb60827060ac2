"""Audit tables grow, never change: refused in the application and by database triggers."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction

from brainframe.models import AppendOnlyError, OriginRegistry, ReasonLog, ToolCall
from tests import factories as f

pytestmark = pytest.mark.django_db

AUDIT = [
    (ToolCall, f.ToolCallFactory, "decision_code", "output"),
    (ReasonLog, f.ReasonLogFactory, "thought", "alignment"),
    (OriginRegistry, f.OriginFactory, "source_ref", "bucket_confidence"),
]
IDS = [model._meta.db_table for model, *_ in AUDIT]


@pytest.mark.parametrize(("model", "factory", "frozen", "mutable"), AUDIT, ids=IDS)
def test_saving_an_existing_row_is_refused(
    model: Any, factory: Any, frozen: str, mutable: str
) -> None:
    row = factory()
    original = getattr(row, frozen)
    setattr(row, frozen, "rewritten")
    with pytest.raises(AppendOnlyError):
        row.save()
    with pytest.raises(AppendOnlyError):
        row.save(update_fields=[frozen])
    assert getattr(model.objects.get(pk=row.pk), frozen) == original


@pytest.mark.parametrize(("model", "factory", "frozen", "mutable"), AUDIT, ids=IDS)
def test_deleting_is_refused(model: Any, factory: Any, frozen: str, mutable: str) -> None:
    row = factory()
    with pytest.raises(AppendOnlyError):
        row.delete()
    with pytest.raises(AppendOnlyError):
        model.objects.filter(pk=row.pk).delete()
    assert model.objects.filter(pk=row.pk).exists()


@pytest.mark.parametrize(("model", "factory", "frozen", "mutable"), AUDIT, ids=IDS)
def test_queryset_update_of_recorded_content_is_refused(
    model: Any, factory: Any, frozen: str, mutable: str
) -> None:
    row = factory()
    with pytest.raises(AppendOnlyError):
        model.objects.filter(pk=row.pk).update(**{frozen: "rewritten"})
    assert getattr(model.objects.get(pk=row.pk), frozen) != "rewritten"


@pytest.mark.parametrize(("model", "factory", "frozen", "mutable"), AUDIT, ids=IDS)
def test_columns_filled_in_later_can_be_set(
    model: Any, factory: Any, frozen: str, mutable: str
) -> None:
    row = factory()
    value: Any = {"rows": []} if mutable == "output" else 0.5
    assert model.objects.filter(pk=row.pk).update(**{mutable: value}) == 1
    assert getattr(model.objects.get(pk=row.pk), mutable) == value


@pytest.mark.parametrize(("model", "factory", "frozen", "mutable"), AUDIT, ids=IDS)
def test_database_trigger_refuses_raw_sql_rewrites(
    model: Any, factory: Any, frozen: str, mutable: str
) -> None:
    row = factory()
    table = model._meta.db_table
    with (
        pytest.raises(DatabaseError, match="append_only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(f"UPDATE {table} SET {frozen} = 'rewritten' WHERE id = %s", [row.pk])
    with (
        pytest.raises(DatabaseError, match="append_only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(f"DELETE FROM {table} WHERE id = %s", [row.pk])
    assert model.objects.filter(pk=row.pk).exists()


@pytest.mark.parametrize(("model", "factory", "frozen", "mutable"), AUDIT, ids=IDS)
def test_a_rewrite_hidden_beside_a_permitted_change_is_refused_by_name(
    model: Any, factory: Any, frozen: str, mutable: str
) -> None:
    """The trigger's quick path (the rows equal without their mutable columns) lets through
    only an update that changes nothing else; one that also rewrites a frozen column is refused
    and the refusal names the column."""
    row = factory()
    table = model._meta.db_table
    column = model._meta.get_field(mutable).column
    value = '{"rows": []}' if mutable == "output" else "0.5"
    cast = "::jsonb" if mutable == "output" else "::float"
    with (
        pytest.raises(DatabaseError, match=rf"columns {{{frozen}}} of {table} cannot be changed"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(
            f"UPDATE {table} SET {column} = %s{cast}, {frozen} = 'rewritten' WHERE id = %s",
            [value, row.pk],
        )
    with connection.cursor() as cursor:  # the same value written again is no rewrite
        cursor.execute(
            f"UPDATE {table} SET {column} = %s{cast}, {frozen} = {frozen} WHERE id = %s",
            [value, row.pk],
        )
    assert getattr(model.objects.get(pk=row.pk), frozen) != "rewritten"


def test_migration_freezes_the_same_columns_the_models_allow() -> None:
    first = importlib.import_module("brainframe.migrations.0002_append_only_triggers")
    latest = {**first.AUDIT_TABLES}
    latest["tool_calls"] = importlib.import_module(
        "brainframe.migrations.0006_outbound_findings"
    ).TOOL_CALLS_MUTABLE
    for model in (ToolCall, ReasonLog, OriginRegistry):
        assert set(latest[model._meta.db_table]) == set(model.APPEND_ONLY_MUTABLE)
