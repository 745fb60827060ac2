from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.test import Client

from brainframe.models import Agent
from brainframe.services.credentials import agent_credential_issue
from brainframe.services.seed import seed_brainframe
from broker.handlers.function import register
from rabs.embedded import database_url
from tests.signing import SignedClient


@pytest.fixture
def seeded(db: None) -> None:
    """The demo data, as `make run` loads it."""
    seed_brainframe()


EXECUTED: list[dict[str, Any]] = []


@register("tests.echo")
def _echo(args: dict[str, Any], *, call_id: Any) -> dict[str, Any]:
    EXECUTED.append(args)
    return {"echo": args}


@pytest.fixture
def executed() -> list[dict[str, Any]]:
    """Arguments of every execution of the ``tests.echo`` handler during the test."""
    EXECUTED.clear()
    return EXECUTED


@pytest.fixture
def henry(seeded: None, client: Client) -> SignedClient:
    agent = Agent.objects.get(agent_id="henry")
    return SignedClient(client, "henry", agent_credential_issue(agent=agent))


@pytest.fixture
def reggie(seeded: None) -> SignedClient:
    agent = Agent.objects.get(agent_id="reggie")
    return SignedClient(Client(), "reggie", agent_credential_issue(agent=agent))


ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def live_server_url(django_db_setup: Any, django_db_blocker: Any) -> Iterator[str]:
    """daphne serving the app against the test database, for the whole session."""
    db = settings.DATABASES["default"]
    port = _free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "rabs.settings.test",
        "DATABASE_URL": database_url(db),
        "REDIS_URL": settings.REDIS.cache,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_DEBUG": "true",
    }
    log = ARTIFACTS / "daphne.log"
    ARTIFACTS.mkdir(exist_ok=True)
    with open(log, "w") as out:
        server = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "daphne"),
                "-b",
                "127.0.0.1",
                "-p",
                str(port),
                "rabs.asgi:application",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"{url}/api/schema/", timeout=1)
            break
        except httpx.HTTPError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"daphne did not start; see {log}") from None
            time.sleep(0.2)
    yield url
    server.terminate()
    server.wait(timeout=10)
