"""The pool's check (rabs/postgres/base.py): a pooled connection the server ended is replaced
before a request gets it; a live one is handed out without a round trip."""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest
from django.db import connection

from rabs.postgres.base import socket_check

pytestmark = pytest.mark.django_db(transaction=True)


def test_connections_the_server_ended_are_replaced_before_use() -> None:
    pool = connection.pool  # type: ignore[attr-defined]
    assert pool is not None and pool._check is socket_check
    # Fill the pool with a few connections, then give them back.
    wrappers = [pool.getconn() for _ in range(3)]
    pids = {conn.info.backend_pid for conn in wrappers}
    for conn in wrappers:
        pool.putconn(conn)
    connection.close()
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = ANY(%s)",
            [list(pids)],
        )
    time.sleep(0.2)  # the farewell and the end of the stream reach the sockets
    # Every request after the restart of those backends works, on live connections.
    for _ in range(5):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            (pid,) = cursor.fetchone()
        assert pid not in pids
        connection.close()


def test_a_live_idle_connection_is_handed_out_without_a_query() -> None:
    pool = connection.pool  # type: ignore[attr-defined]
    assert pool is not None
    conn = pool.getconn()
    try:
        before = conn.pgconn.transaction_status
        executed = []
        original = conn.execute

        def spy(*args: Any, **kwargs: Any) -> Any:
            executed.append(args)
            return original(*args, **kwargs)

        conn.execute = spy
        socket_check(conn)
        assert executed == [] and conn.pgconn.transaction_status == before
        conn.execute = original
        # One the server ended is checked in full, and refused.
        with psycopg.connect(**connection.get_connection_params(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", [conn.info.backend_pid])
        time.sleep(0.2)
        with pytest.raises(psycopg.OperationalError):
            socket_check(conn)
    finally:
        pool.putconn(conn)
