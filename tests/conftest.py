"""The suite's shared fixtures, and its process hygiene: a run that ends in any way (passes,
fails, is interrupted, killed by SIGTERM or SIGKILL) leaves no process behind."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import SyncToAsync
from django.conf import settings
from django.db import connections
from django.test import Client

from brainframe.models import Agent
from brainframe.services.access.credentials import agent_credential_issue
from brainframe.services.seed import seed_brainframe
from broker.handlers.function import functions_register
from rabs.stack.devstack import free_port, start_daphne, wait_until_up
from rabs.stack.embedded import database_url, var_dir
from rabs.stack.matrix import Homeserver, Secrets
from rabs.stack.matrix import start as matrix_start
from rabs.stack.procs import parent_death_signal
from tests.flush import install as fast_flush_install
from tests.processes import process_env
from tests.signing import SignedClient

# Run under `make test`, the suite dies with make (make's SIGTERM reaches it, but make killed
# outright would otherwise leave it running).
parent_death_signal()
# Transactional tests end by deleting the rows they wrote, not by truncating every table.
fast_flush_install()
# Every process this run starts carries the mark; the reaper stops what is left when it ends.
# A run started by a test (the kill test) gets a mark of its own.
os.environ["RABS_TEST_RUN"] = uuid.uuid4().hex
_REAPER = subprocess.Popen(
    [sys.executable, "-m", "tests.reaper", os.environ["RABS_TEST_RUN"], str(var_dir())],
    cwd=Path(__file__).resolve().parents[1],
    stdin=subprocess.PIPE,
    start_new_session=True,
)


def _threads_give_their_connections_back() -> None:
    """A thread that used the ORM keeps its pooled connection until it calls close(); the pool
    is small (rabs/settings/test.py), so a test's helper thread (a reviewer deciding while a
    call waits, an HTTP server's request thread) that forgets would starve every later test.
    Each thread started by the suite gives its connections back when it ends."""
    run = threading.Thread.run

    def run_then_close(self: threading.Thread) -> None:
        try:
            run(self)
        finally:
            connections.close_all()

    threading.Thread.run = run_then_close  # type: ignore[method-assign]


_threads_give_their_connections_back()


@pytest.fixture(autouse=True)
def async_tests_give_their_connection_back() -> Iterator[None]:
    """An async test's `sync_to_async` code runs in asgiref's one long-lived thread, whose
    connection would otherwise stay checked out of the pool after the test."""
    yield
    executor = SyncToAsync.single_thread_executor
    if executor is not None and not getattr(executor, "_shutdown", False):
        executor.submit(connections.close_all).result(timeout=10)


#: The longest test modules, longest first (seconds of tests on 2 cores, `--durations=0`), and
#: run first. With ``--dist loadfile`` a worker takes the next module as it frees; a long module
#: left to the end kept one worker busy for a minute or two while the other had nothing left.
LONGEST_FIRST = (
    "tests/broker/approvals/test_races.py",
    "tests/broker/api/test_schemathesis.py",
    "tests/rabs/test_killed_run.py",
    "tests/agents_vm/test_service.py",
    "tests/rabs/test_multiprocess.py",
    "tests/broker/mcp/test_mcp.py",
    "tests/brainframe/safety/test_pii.py",
    "tests/brainframe/memory/test_bucket_checker.py",
    "tests/broker/audit/test_database_down.py",
    "tests/agents_vm/test_runtime.py",
    "tests/browser/test_first_hour.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest modules first (``LONGEST_FIRST``), the rest in their order."""
    rank = {path: n for n, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """No tests collected (a selection that matches nothing) is not a failure of the suite."""
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK


@pytest.fixture(autouse=True)
def fresh_channel_layer() -> None:
    """Each test gets a channel layer of its own. channels_redis keeps an asyncio lock per
    channel prefix, bound to the event loop that first waited on it: a board consumer still
    receiving when an earlier async test's loop closed (a slow disconnect on a loaded machine)
    held it locked for good, and every later test of the process then failed with "bound to a
    different event loop"."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()


@pytest.fixture(autouse=True)
def fresh_rate_limits() -> None:
    """Each test starts with the agents' request counters and loop latches at zero: they live in
    Redis, which outlives a test's database, so a test that sends many requests (schemathesis)
    would otherwise leave the next one throttled (or latched)."""
    from django.core.cache import cache

    redis = cache.redis()  # type: ignore[attr-defined]
    stale = list(redis.scan_iter(match=cache.make_key("throttle:agent:*")))
    # The model gateway's counters and running spends: a test's budget starts from its records.
    stale += list(redis.scan_iter(match=cache.make_key("llm:*")))
    stale += list(redis.scan_iter(match=cache.make_key("loop:calls:*")))  # the loop latch
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


@dataclass(frozen=True)
class MatrixPlan:
    """Where this test process's homeserver will run (started only by tests that need it,
    ``homeserver``): known before daphne starts, so daphne knows its tokens."""

    data: Path
    port: int
    keys: Secrets

    def env(self) -> dict[str, str]:
        return {
            "RABS_MATRIX_URL": f"http://127.0.0.1:{self.port}",
            "RABS_MATRIX_SERVER_NAME": "rabs.local",
            "RABS_MATRIX_AS_TOKEN": self.keys.as_token,
            "RABS_MATRIX_HS_TOKEN": self.keys.hs_token,
        }


@pytest.fixture(scope="session")
def matrix_plan() -> MatrixPlan:
    # One data directory per test process, kept between runs (the homeserver's schema is made
    # once); each parallel process has its own.
    data = var_dir() / f"matrix-test-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
    data.mkdir(parents=True, exist_ok=True)
    return MatrixPlan(data, free_port(), Secrets.load_or_make(data))


@pytest.fixture(scope="session")
def replica_standby(django_db_setup: Any) -> Iterator[dict[str, str] | None]:
    """A streaming standby of the embedded PostgreSQL (the test database's cluster), one for
    the whole session (``rabs.stack.replica``): the URLs of its test database as the read-only role
    (``reader``) and as the cluster's superuser (``admin``), and the primary's (``primary``).
    None when the tests run on a server that is not the embedded one."""
    from pgserver.utils import PostmasterInfo  # only the embedded server's tests need it

    from rabs.stack.replica import replica_start, replica_stop

    db = settings.DATABASES["default"]
    primary = var_dir() / "pgdata"
    info = PostmasterInfo.read_from_pgdata(primary) if primary.exists() else None
    if info is None or str(info.socket_dir) != str(db.get("HOST")):
        yield None
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    pgdata = var_dir() / f"pgreplica-test-{worker}"
    shutil.rmtree(pgdata, ignore_errors=True)  # a fresh copy: the test database is new
    standby = replica_start(primary_pgdata=primary, pgdata=pgdata, port=5433)
    try:
        yield {
            "reader": standby.url(database=db["NAME"], role=settings.RABS_REPLICA_ROLE),
            "admin": standby.url(database=db["NAME"], role="postgres"),
            "primary": database_url(db),
        }
    finally:
        replica_stop(pgdata, process=standby.process)
        shutil.rmtree(pgdata, ignore_errors=True)


@pytest.fixture(scope="session")
def live_server_url(
    django_db_setup: Any,
    django_db_blocker: Any,
    matrix_plan: MatrixPlan,
    replica_standby: dict[str, str] | None,
) -> Iterator[str]:
    """daphne serving the app against the test database, for the whole session (its read
    replica: the session's standby)."""
    port = free_port()
    env = process_env(
        DJANGO_DEBUG="true",
        # Where the app says it is (status callbacks are signed for this URL).
        RABS_PUBLIC_URL=f"http://127.0.0.1:{port}",
        **matrix_plan.env(),
        RABS_REPLICA_URL=replica_standby["reader"] if replica_standby else "",
    )
    ARTIFACTS.mkdir(exist_ok=True)
    log = ARTIFACTS / f"daphne-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.log"
    server = start_daphne(env, port, log=log)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, server)
    except RuntimeError:
        raise RuntimeError(f"daphne did not start; see {log}") from None
    yield url
    server.terminate()
    server.wait(timeout=10)


@pytest.fixture(scope="session")
def homeserver(matrix_plan: MatrixPlan, live_server_url: str) -> Iterator[Homeserver]:
    """A Matrix homeserver (Synapse) for the session, the live server its application service;
    it dies with this process (``die_with_parent``) if the teardown never runs."""
    server = matrix_start(
        data=matrix_plan.data, port=matrix_plan.port, appservice_url=live_server_url
    )
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "matrix-start.txt").write_text(f"{server.started_seconds:.2f} s\n")
    yield server
    server.stop()


@pytest.fixture
def matrix(homeserver: Homeserver, settings: Any, live_server_url: str) -> Homeserver:
    """The session's homeserver, with this process's settings pointing at it (and at the live
    server, where providers' callbacks go)."""
    for key, value in homeserver.env().items():
        setattr(settings, key, value)
    settings.RABS_PUBLIC_URL = live_server_url
    return homeserver


#: The MCP face's holds in the daphne of ``mcp_url``: without a progressToken (the default), and
#: with one.
MCP_HOLD = 3.0
MCP_PROGRESS_HOLD = 8.0


@pytest.fixture(scope="session")
def mcp_url(django_db_setup: Any, django_db_blocker: Any) -> Iterator[str]:
    """A daphne shared by the tests that drive the MCP face (and the REST API beside it) with
    outside clients: the official SDKs, agent frameworks, the agent service."""
    port = free_port()
    env = process_env(
        RABS_MCP_HOLD_SECONDS=str(MCP_HOLD),
        RABS_MCP_APPROVAL_WAIT_SECONDS=str(MCP_PROGRESS_HOLD),
        RABS_MCP_PROGRESS_SECONDS="1",
    )
    process = start_daphne(env, port)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, process)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # a notification stream a client left open
            process.kill()
            process.wait(timeout=10)
