"""``/healthz``: up while PostgreSQL and Redis answer, a 503 naming the one that does not (the
database's case is in tests/broker/test_database_down.py, on a real server)."""

from __future__ import annotations

import pytest
from django.test import Client, override_settings

from rabs.devstack import free_port

pytestmark = pytest.mark.django_db


def test_up_when_the_database_and_redis_answer(client: Client) -> None:
    answer = client.get("/healthz")
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok", "checks": {"database": "ok", "redis": "ok"}}
    assert answer["Cache-Control"] == "no-store"


def test_redis_unreachable_is_503_naming_it(client: Client) -> None:
    dead = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    caches = {"default": {"BACKEND": "rabs.cache.RedisCache", "LOCATION": dead}}
    with override_settings(CACHES=caches):
        answer = client.get("/healthz")
    assert answer.status_code == 503
    assert answer.json()["code"] == "unavailable"
    assert answer.json()["checks"] == {"database": "ok", "redis": "down"}
    assert answer.json()["detail"] == "cannot reach: redis"


def test_only_get_and_head(client: Client) -> None:
    assert client.head("/healthz").status_code == 200
    answer = client.post("/healthz")
    assert answer.status_code == 405
    assert answer.json()["code"] == "method_not_allowed"
    assert answer["Allow"] == "GET, HEAD"
