"""Django's PostgreSQL backend, its pool checking a connection before handing it out without a
round trip to the server when the connection's socket shows nothing wrong (``socket_check``).

Django's health check (``CONN_HEALTH_CHECKS`` with a pool) sends an empty query on every
checkout: every request pays a round trip, and the server a wake-up, to learn what the socket
already tells. A connection the server ended (a restart, a terminated backend, a crash) has
something to read while it sits idle in the pool: the server's farewell, or the end of the
stream. Such a connection, or one in any state but idle, gets the full check (the empty query),
which raises if it is dead, and the pool replaces it. A connection the network lost silently
passes, as it would pass the empty query a moment before the network fails: its first statement
fails, and the request is refused ``503 database_unavailable`` with nothing done.

A pool serves the database the settings name now: when they name another (Django sets up the
test database by renaming it in the settings, and keeps a pool made before), a new pool is made.

A process forked from one that had connections (a Celery worker's pool processes) starts with
pools of its own: the connections it inherited share their sockets with the parent and its
siblings, and two processes talking over one socket read each other's answers.
"""

from __future__ import annotations

import os
import select
from typing import Any

from django.db import connections
from django.db.backends.postgresql import base
from psycopg import OperationalError
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool


def socket_check(conn: Any) -> None:
    """psycopg_pool's ``check``: return if ``conn`` can be used, raise if not."""
    if conn.closed or conn.broken:
        raise OperationalError("the connection is closed")
    readable, _, _ = select.select([conn.fileno()], [], [], 0)
    if readable or conn.info.transaction_status != TransactionStatus.IDLE:
        ConnectionPool.check_connection(conn)


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self) -> Any:
        pools = self._connection_pools  # type: ignore[attr-defined]
        settings = self.settings_dict
        target = (settings["NAME"], settings["HOST"], settings["PORT"], settings["USER"])
        made = self.alias in pools
        if made and getattr(pools[self.alias], "rabs_target", target) != target:
            # The settings moved to another database since the pool was made (the test
            # database, set up after something had connected): a pool for the new one.
            pools.pop(self.alias).close()
            made = False
        pool = super().pool  # type: ignore[misc]
        if not made and pool is not None:
            pool.rabs_target = target
            if settings["CONN_HEALTH_CHECKS"]:
                pool._check = socket_check  # in place of Django's (psycopg-pool is pinned)
        return pool


#: What a forked child inherited: kept, never used, never closed. Closing would end the parent's
#: session (libpq says goodbye on the shared socket); letting it be collected would do the same.
_INHERITED: list[Any] = []


def _forget_inherited_connections() -> None:
    pools = base.DatabaseWrapper._connection_pools  # type: ignore[attr-defined]
    _INHERITED.extend(pools.values())
    pools.clear()  # the next connection comes from a new pool of the child's own
    for wrapper in connections.all(initialized_only=True):
        if wrapper.connection is not None:
            _INHERITED.append(wrapper.connection)
            wrapper.connection = None


os.register_at_fork(after_in_child=_forget_inherited_connections)
