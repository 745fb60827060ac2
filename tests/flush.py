"""Emptying the test database after a transactional test, in a fraction of Django's time.

Django's ``flush`` truncates every table of every model (about 200 here) in one statement and
then re-creates the content types and permissions. A ``TRUNCATE`` gives each table, index and
TOAST table a new file, so it costs about the same whether a table holds rows or not: 0.8–1.2 s
after every transactional test on these machines, most of its teardown. Here the same tables are
emptied with ``DELETE``, one statement each in one transaction, with triggers and foreign-key
checks off for it (``session_replication_role = replica``, as ``TRUNCATE`` fires no row
triggers either); the content types and permissions are kept, since they would be re-created as
they were. A database that refuses any of it (a server where the test user may not set the role)
is flushed as Django does. ``tests/test_flush.py`` checks that nothing is left behind.
"""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.db import DatabaseError, connections, transaction
from django.test.testcases import TransactionTestCase

#: Kept: re-created as they were by the ``post_migrate`` signal Django's flush sends.
KEPT = frozenset({"django_content_type", "auth_permission"})
_statements: dict[str, str] = {}


def _emptying(alias: str) -> str:
    statement = _statements.get(alias)
    if statement is None:
        connection = connections[alias]
        names = connection.introspection.django_table_names(only_existing=True)
        quote = connection.ops.quote_name
        statement = _statements[alias] = "".join(
            f"DELETE FROM {quote(name)};" for name in sorted(set(names) - KEPT)
        )
    return statement


def database_empty(alias: str) -> None:
    """Every row of every model's table deleted (but the content types and permissions)."""
    connection = connections[alias]
    with transaction.atomic(using=alias), connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(_emptying(alias))


def _fixture_teardown(self: TransactionTestCase) -> None:
    if self.available_apps is not None or self.serialized_rollback:
        return _django_fixture_teardown(self)
    for alias in self._databases_names(include_mirrors=False):
        try:
            database_empty(alias)
        except DatabaseError:
            call_command(
                "flush", verbosity=0, interactive=False, database=alias, reset_sequences=False
            )


_django_fixture_teardown: Any = TransactionTestCase._fixture_teardown


def install() -> None:
    """Transactional tests end with ``database_empty`` instead of Django's flush."""
    TransactionTestCase._fixture_teardown = _fixture_teardown  # type: ignore[method-assign]
