"""The pool's check (rabs/postgres/base.py): a pooled connection the server ended is replaced
before a request gets it; a live one is handed out without a round trip; a forked process (a
Celery worker's pool process) never talks over its parent's connections."""

from __future__ import annotations

import json
import os
import select
import signal
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


def test_a_forked_process_never_uses_its_parents_connections() -> None:
    """A Celery worker forks its pool processes. Had they used the connections they inherited,
    two processes would read each other's answers over one socket (seen as approved calls whose
    outcome was lost, and jobs failing with "list index out of range")."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (held,) = cursor.fetchone()
    pool = connection.pool  # type: ignore[attr-defined]
    idle = pool.getconn()  # one more, left idle in the pool for a child to be handed
    idle_pid = idle.info.backend_pid
    pool.putconn(idle)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's answer is checked below
        try:
            pids = []
            for _ in range(2):
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_backend_pid()")
                    pids.append(cursor.fetchone()[0])
                connection.close()
            os.write(write, json.dumps(pids).encode())
        finally:
            os._exit(0)
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], 30)
        answer = os.read(read, 1000) if ready else b""
    finally:
        os.close(read)
        if not os.waitpid(child, os.WNOHANG)[0]:
            os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
    assert answer, "the forked process did not answer"
    assert not set(json.loads(answer)) & {held, idle_pid}
    # And the parent's own connections still answer, theirs alone.
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] == held


def test_the_pool_follows_the_settings_to_another_database() -> None:
    """Django sets up a test database by renaming it in the settings; a pool made before (by
    anything that connected first) must not go on serving the database named before it: the
    suite's tests would run, and flush, the developer's own database."""
    name = connection.settings_dict["NAME"]
    with connection.cursor() as cursor:  # the pool is made, for the test database
        cursor.execute("SELECT current_database()")
        assert cursor.fetchone()[0] == name
    connection.close()
    try:
        connection.settings_dict["NAME"] = "postgres"
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_database()")
            assert cursor.fetchone()[0] == "postgres"
    finally:
        connection.close()
        connection.settings_dict["NAME"] = name
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_database()")
        assert cursor.fetchone()[0] == name
