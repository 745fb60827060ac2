"""A throwaway database on the same server for benchmarks and drills that write audit rows
(which can never be deleted): created and migrated at start, dropped at the end."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


def switch(name: str) -> None:
    """Point the default alias at database ``name`` (its pool too, which outlives connections)."""
    from django.db import connection, connections

    connections.close_all()
    connection.close_pool()  # type: ignore[attr-defined]  # the PostgreSQL backend has it
    connections.databases["default"]["NAME"] = name
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_database()")
        assert cursor.fetchone()[0] == name, "still connected to another database"


def _admin(sql: str) -> None:
    from django.db import connection

    connection.ensure_connection()
    raw = connection.connection
    raw.autocommit = True
    raw.execute(sql)


@contextmanager
def throwaway_database(name: str, *, pool_size: int = 20) -> Iterator[None]:
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    original = settings.DATABASES["default"]["NAME"]
    _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    _admin(f"CREATE DATABASE {name}")
    connections.databases["default"]["OPTIONS"]["pool"] = {"min_size": 1, "max_size": pool_size}
    switch(name)
    try:
        call_command("migrate", verbosity=0)
        from brainframe.services.seed import seed_brainframe

        seed_brainframe()
        yield
    finally:
        switch(original)
        _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
