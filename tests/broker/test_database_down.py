"""With the database unreachable, the API says so (503 database_unavailable, Retry-After) and does
nothing, instead of answering a bare 500: a real server pointed at a port where nothing listens."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from tests.signing import signed_request

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_database_unreachable_is_503(tmp_path: Path) -> None:
    port, dead = _free_port(), _free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "rabs.settings.test",
        "DATABASE_URL": f"postgres://nobody@127.0.0.1:{dead}/nothing",
        "REDIS_URL": settings.REDIS.cache,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
    }
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "daphne"), "-b", "127.0.0.1", "-p", str(port),
         "rabs.asgi:application"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/api/v1/tools/", timeout=30)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "daphne did not start"
                time.sleep(0.2)
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
    finally:
        server.terminate()
        server.wait(timeout=20)
