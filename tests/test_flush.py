"""The end of a transactional test leaves an empty database, as Django's flush does, however the
rows hang together (foreign keys, append-only tables whose triggers refuse a DELETE)."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib.contenttypes.models import ContentType
from django.db import DatabaseError, connection
from django.test.testcases import TransactionTestCase

from brainframe.models import Agent, ToolCall
from tests import factories as f
from tests.flush import KEPT, _fixture_teardown, database_empty


def _rows() -> dict[str, int]:
    counts = {}
    with connection.cursor() as cursor:
        for model in apps.get_models(include_auto_created=True):
            table = model._meta.db_table
            if model._meta.managed and not model._meta.proxy and table not in KEPT:
                cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(table)}")
                counts[table] = cursor.fetchone()[0]
    return counts


@pytest.mark.django_db(transaction=True)
def test_emptying_leaves_no_row_in_any_table(seeded: None) -> None:
    henry = Agent.objects.get(agent_id="henry")
    call = f.ToolCallFactory(agent=henry, decision="executed", outcome="succeeded")
    assert ToolCall.objects.filter(pk=call.pk).exists()
    # The audit is append-only: an ordinary DELETE is refused.
    with pytest.raises(DatabaseError), connection.cursor() as cursor:
        cursor.execute("DELETE FROM tool_calls")
    full = {table for table, count in _rows().items() if count}
    assert {"agents", "tool_calls", "auth_group"} <= full
    kinds = ContentType.objects.count()
    database_empty("default")
    assert {table: count for table, count in _rows().items() if count} == {}
    assert ContentType.objects.count() == kinds  # kept: Django's flush makes them again


def test_transactional_tests_end_with_it() -> None:
    assert TransactionTestCase._fixture_teardown is _fixture_teardown
