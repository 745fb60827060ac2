"""With the database unreachable, the API says so (503 database_unavailable, Retry-After) and does
nothing, instead of answering a bare 500, and /healthz reports it: a real server pointed at a port
where nothing listens."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from rabs.stack.devstack import free_port, start_daphne, wait_until_up
from tests.processes import process_env
from tests.signing import signed_request

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]


def test_database_unreachable_is_503(tmp_path: Path) -> None:
    port, dead = free_port(), free_port()
    env = process_env(DATABASE_URL=f"postgres://nobody@127.0.0.1:{dead}/nothing")
    server = start_daphne(env, port)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, server, path="/api/v1/tools/", request_timeout=30)
        response = signed_request(
            url,
            "henry",
            "not-checked-the-database-is-down",
            "POST",
            "/api/v1/tool-calls/",
            {"tool_id": "roster.shift.read", "reason": "x", "arguments": {}},
        )
        assert response.status_code == 503, response.text
        assert response.json()["code"] == "database_unavailable"
        assert response.headers["Retry-After"] == "1"
        health = httpx.get(f"{url}/healthz/web", timeout=30)
        assert health.status_code == 503, health.text
        assert health.json()["code"] == "unavailable"
        assert health.json()["checks"] == {"web": "ok", "database": "down", "redis": "ok"}
    finally:
        server.terminate()
        server.wait(timeout=20)
