"""The suite's shared fixtures, and its process hygiene: a run that ends in any way (passes,
fails, is interrupted, killed by SIGTERM or SIGKILL) leaves no process behind."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from brainframe.models import Agent
from brainframe.services.access.credentials import agent_credential_issue
from brainframe.services.seed import seed_brainframe
from broker.handlers.function import functions_register
from rabs.devstack import free_port, start_daphne, wait_until_up
from rabs.embedded import database_url, var_dir
from rabs.procs import parent_death_signal
from tests.signing import SignedClient

# Run under `make test`, the suite dies with make (make's SIGTERM reaches it, but make killed
# outright would otherwise leave it running).
parent_death_signal()
# Every process this run starts carries the mark; the reaper stops what is left when it ends.
# A run started by a test (the kill test) gets a mark of its own.
os.environ["RABS_TEST_RUN"] = uuid.uuid4().hex
_REAPER = subprocess.Popen(
    [sys.executable, "-m", "tests.reaper", os.environ["RABS_TEST_RUN"], str(var_dir())],
    cwd=Path(__file__).resolve().parents[1],
    stdin=subprocess.PIPE,
    start_new_session=True,
)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """No tests collected (a selection that matches nothing) is not a failure of the suite."""
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK


@pytest.fixture(autouse=True)
def fresh_rate_limits() -> None:
    """Each test starts with the agents' request counters at zero: the counters live in Redis,
    which outlives a test's database, so a test that sends many requests (schemathesis) would
    otherwise leave the next one throttled."""
    from django.core.cache import cache

    redis = cache.redis()  # type: ignore[attr-defined]
    stale = list(redis.scan_iter(match=cache.make_key("throttle:agent:*")))
    # The model gateway's counters and running spends: a test's budget starts from its records.
    stale += list(redis.scan_iter(match=cache.make_key("llm:*")))
    if stale:
        redis.delete(*stale)


@pytest.fixture
def seeded(db: None) -> None:
    """The demo data, as `make run` loads it."""
    seed_brainframe()


EXECUTED: list[dict[str, Any]] = []


def _echo(args: dict[str, Any], *, call_id: Any) -> dict[str, Any]:
    EXECUTED.append(args)
    return {"echo": args}


functions_register({"tests.echo": _echo})


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


@pytest.fixture(scope="session")
def live_server_url(django_db_setup: Any, django_db_blocker: Any) -> Iterator[str]:
    """daphne serving the app against the test database, for the whole session."""
    db = settings.DATABASES["default"]
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "rabs.settings.test",
        "DATABASE_URL": database_url(db),
        "REDIS_URL": settings.REDIS.cache,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_DEBUG": "true",
    }
    ARTIFACTS.mkdir(exist_ok=True)
    log = ARTIFACTS / "daphne.log"
    server = start_daphne(env, port, log=log)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, server)
    except RuntimeError:
        raise RuntimeError(f"daphne did not start; see {log}") from None
    yield url
    server.terminate()
    server.wait(timeout=10)
