"""``/healthz``: every part (web, database, Redis, worker, beat), 503 when one approvals need is
down; ``/healthz/web``: only what a web process needs to serve, for load balancers (the
database's case is in tests/broker/audit/test_database_down.py, on a real server; a real worker's
heartbeat in tests/browser/test_first_hour.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from django.test import Client, override_settings

from broker.liveness import FRESH_SECONDS, gone, heartbeat
from rabs.stack.devstack import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def members() -> Iterator[list[str]]:
    """Heartbeats this test writes, taken out afterwards."""
    written: list[str] = []
    yield written
    for member in written:
        gone(member)


def test_web_is_up_when_the_database_and_redis_answer(client: Client) -> None:
    answer = client.get("/healthz/web")
    assert answer.status_code == 200
    assert answer.json() == {
        "status": "ok",
        "checks": {"web": "ok", "database": "ok", "redis": "ok"},
    }
    assert answer["Cache-Control"] == "no-store"


def test_no_worker_or_beat_is_503_naming_them(client: Client) -> None:
    answer = client.get("/healthz")
    assert answer.status_code == 503
    assert answer.json()["checks"] == {
        "web": "ok",
        "database": "ok",
        "redis": "ok",
        "worker": "down",
        "beat": "down",
    }
    assert answer.json()["detail"] == "down: worker, beat"


def test_fresh_heartbeats_make_it_ok_and_stale_ones_do_not(
    client: Client, members: list[str]
) -> None:
    members += ["worker:test-host:1", "beat:test-host:2"]
    heartbeat("worker:test-host:1")
    heartbeat("beat:test-host:2", now=time.time() - FRESH_SECONDS - 1)  # beat stopped beating
    answer = client.get("/healthz")
    assert answer.status_code == 503
    assert answer.json()["checks"]["worker"] == "ok"
    assert answer.json()["checks"]["beat"] == "down"
    heartbeat("beat:test-host:2")
    answer = client.get("/healthz")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["status"] == "ok"
    gone("worker:test-host:1")  # a clean shutdown: down at once
    assert client.get("/healthz").json()["checks"]["worker"] == "down"


def test_redis_unreachable_is_503_naming_it(client: Client) -> None:
    dead = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    caches = {"default": {"BACKEND": "rabs.web.cache.RedisCache", "LOCATION": dead}}
    with override_settings(CACHES=caches):
        web = client.get("/healthz/web")
        whole = client.get("/healthz")
    assert web.status_code == 503
    assert web.json()["code"] == "unavailable"
    assert web.json()["checks"] == {"web": "ok", "database": "ok", "redis": "down"}
    assert web.json()["detail"] == "down: redis"
    # The heartbeats live in Redis: without it no worker is known to be alive.
    assert whole.json()["checks"]["worker"] == whole.json()["checks"]["beat"] == "down"


def test_only_get_and_head(client: Client) -> None:
    assert client.head("/healthz/web").status_code == 200
    for path in ("/healthz", "/healthz/web"):
        answer = client.post(path)
        assert answer.status_code == 405
        assert answer.json()["code"] == "method_not_allowed"
        assert answer["Allow"] == "GET, HEAD"
