"""``make run-multi`` on the test database: two daphne processes behind one port, two Celery
workers, beat. Decisions from both web processes keep one intact hash chain; approvals decided
through either process run exactly once (counted by a real HTTP receiver the tool calls); a
board connected to one process sees calls answered by the other."""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from brainframe.models import Agent, AgentCredential, ApprovalRequest, ToolCall
from brainframe.services.access.credentials import agent_credential_issue
from brainframe.services.seed import seed_brainframe
from broker.audit.verify import verify_chain
from rabs.stack.devstack import free_port, launched
from tests import factories as f
from tests.flush import database_empty
from tests.processes import process_env
from tests.signing import signed_request

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]
READ = {"date_from": "2026-03-02", "date_to": "2026-03-02"}


@pytest.fixture
def receiver() -> Iterator[dict[str, Any]]:
    """The outside system the approved tool posts to; counts deliveries per call id."""
    deliveries: Counter[str] = Counter()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                deliveries[self.headers["X-RABS-Call-Id"]] += 1
            body = json.dumps({"delivered": True}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield {"url": f"http://127.0.0.1:{server.server_address[1]}/notify", "counts": deliveries}
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def stack_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the module's stack keeps its log and beat schedule."""
    return tmp_path_factory.mktemp("stack")


@pytest.fixture(scope="module")
def stack_url(django_db_setup: Any, django_db_blocker: Any, stack_dir: Path) -> Iterator[str]:
    """The whole stack, started once for this module's tests (a start-up is ~30 s of five
    processes on two cores); each test empties the database after itself, and ``stack`` seeds
    it again."""
    port = free_port()
    env = process_env(
        DJANGO_DEBUG="true",
        RABS_PORT=str(port),
        RABS_WEB_PROCESSES="2",
        RABS_WORKER_PROCESSES="2",
        RABS_WORKER_CONCURRENCY="2",
        RABS_CELERY_EAGER="false",
        RABS_PROCESS_HEADER="true",
        RABS_ADMIN_CREDENTIALS_FILE=str(stack_dir / "admin.json"),
    )
    log = stack_dir / "stack.log"
    try:
        with launched(env, log=log) as url:
            time.sleep(2)  # the workers join the queue
            yield url
    finally:
        # What its beat and workers wrote after the last test's emptying goes too.
        with django_db_blocker.unblock():
            database_empty("default")
        (ROOT / "test-artifacts").mkdir(exist_ok=True)
        (ROOT / "test-artifacts" / "multiprocess-stack.log").write_bytes(log.read_bytes())


@pytest.fixture
def stack(stack_url: str, transactional_db: None) -> str:
    """The module's stack, on the demo data (seeded again: the test before emptied it)."""
    seed_brainframe()
    return stack_url


def _reviewer(url: str, username: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=30)
    client.get("/admin/login/")
    client.post(
        "/admin/login/",
        data={
            "username": username,
            "password": "pw-for-tests-1",
            "csrfmiddlewaretoken": client.cookies["csrftoken"],
            "next": "/admin/",
        },
    )
    return client


def _answering_processes(url: str, *, connections: int) -> set[str]:
    """The web processes that answer ``connections`` connections opened back to back, before a
    request is sent on any (one ``/healthz`` each)."""
    address = urlsplit(url)
    request = f"GET /healthz HTTP/1.1\r\nHost: {address.netloc}\r\nConnection: close\r\n\r\n"
    sockets = [
        socket.create_connection((address.hostname, address.port), timeout=10)
        for _ in range(connections)
    ]
    processes = set()
    try:
        for sock in sockets:
            sock.sendall(request.encode())
        for sock in sockets:
            head = b""
            while b"\r\n\r\n" not in head and (chunk := sock.recv(4096)):
                head += chunk
            found = re.search(rb"(?i)^x-rabs-process: *(\d+)", head, re.MULTILINE)
            assert found, head[:300]
            processes.add(found.group(1).decode())
    finally:
        for sock in sockets:
            sock.close()
    return processes


def test_decisions_and_approvals_across_processes(
    stack: str, receiver: dict[str, Any], stack_dir: Path
) -> None:
    # Beat keeps this stack's schedule next to its log, apart from a `make run` of the checkout.
    assert list(stack_dir.glob("stack-beat-schedule*")), "no beat schedule next to the log"
    secret = agent_credential_issue(agent=Agent.objects.get(agent_id="henry"))
    reviewers = Group.objects.get(name="reviewers")
    for name in ("alice", "bob"):
        user = f.UserFactory(username=name, is_staff=True)
        user.set_password("pw-for-tests-1")
        user.save()
        user.groups.add(reviewers)
    f.ToolFactory(
        tool_id="test.multi.notify",
        risk_level="write",
        execution_mode="review",
        agent_access=["henry"],
        handler_type="api",
        handler_config={"method": "POST", "url": receiver["url"], "timeout_s": 5},
        input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
    )
    from brainframe.models import Tool

    Tool.objects.filter(tool_id="roster.shift.read").update(execution_mode="auto")

    def call(tool_id: str, arguments: dict[str, Any]) -> httpx.Response:
        return signed_request(
            stack,
            "henry",
            secret,
            "POST",
            "/api/v1/tool-calls/",
            {"tool_id": tool_id, "reason": "multi-process check", "arguments": arguments},
        )

    # Connections opened at once (agents starting together, kept alive after) are spread over
    # both processes, burst after burst: none leaves one process serving everybody.
    for burst in range(5):
        assert len(_answering_processes(stack, connections=16)) == 2, f"burst {burst}: one process"

    # Decisions from both web processes, concurrently: one intact chain.
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: call("roster.shift.read", READ), range(40)))
    assert [a.status_code for a in answers] == [200] * 40
    assert len({a.headers["X-RABS-Process"] for a in answers}) == 2, "one process answered all"
    assert verify_chain("henry") is None

    # Approvals: two reviewers approve each call at once, through whichever process answers;
    # the workers run each approved call exactly once.
    pending = [call("test.multi.notify", {"n": n}) for n in range(10)]
    assert {p.status_code for p in pending} == {202}
    alice, bob = _reviewer(stack, "alice"), _reviewer(stack, "bob")

    def approve(client: httpx.Client, approval_id: str) -> int:
        return client.post(
            f"/api/v1/review/approvals/{approval_id}/approve/",
            json={"reason": "ok"},
            headers={"X-CSRFToken": client.cookies["csrftoken"]},
        ).status_code

    ids = [p.json()["approval_id"] for p in pending]
    with ThreadPoolExecutor(4) as pool:
        codes = list(pool.map(lambda a: approve(*a), [(c, i) for i in ids for c in (alice, bob)]))
    assert codes.count(200) == 10, codes  # one decision per approval, the other refused
    call_ids = [p.json()["call_id"] for p in pending]

    def all_ran() -> bool:
        return all(
            ToolCall.objects.get(pk=c).outcome == ToolCall.Outcome.SUCCEEDED for c in call_ids
        )

    deadline = time.monotonic() + 60
    while not all_ran():
        assert time.monotonic() < deadline, "approved calls did not all run"
        time.sleep(0.3)
    time.sleep(1)  # a duplicate execution, if any, would arrive now
    assert {c: receiver["counts"][c] for c in call_ids} == dict.fromkeys(call_ids, 1)
    assert sum(receiver["counts"].values()) == 10
    assert set(ApprovalRequest.objects.filter(pk__in=ids).values_list("status", flat=True)) == {
        "approved"
    }
    assert verify_chain("henry") is None

    # Each process remembers henry and his key; pausing him, then revoking his key, is in force
    # from the next call in both (the decision's statement checks what it was decided under).
    def burst(expected: int, code: str | None = None) -> None:
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda _: call("roster.shift.read", READ), range(24)))
        assert {a.status_code for a in answers} == {expected}, [a.text for a in answers][:3]
        assert len({a.headers["X-RABS-Process"] for a in answers}) == 2
        if code is not None:
            assert {a.json()["code"] for a in answers} == {code}

    burst(200)
    calls = ToolCall.objects.count()
    Agent.objects.filter(agent_id="henry").update(status="paused")
    burst(401, "auth_agent_paused")
    Agent.objects.filter(agent_id="henry").update(status="active")
    burst(200)
    AgentCredential.objects.filter(agent_id="henry").update(revoked_at=timezone.now())
    burst(401, "auth_unknown_agent")
    assert ToolCall.objects.count() == calls + 24


def test_live_updates_cross_processes(stack: str) -> None:
    """A board connected (websocket) to one web process shows calls the other one answered."""
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    secret = agent_credential_issue(agent=Agent.objects.get(agent_id="henry"))
    from brainframe.models import Tool

    Tool.objects.filter(tool_id="roster.shift.read").update(execution_mode="auto")
    user = f.UserFactory(username="carol", is_staff=True)
    user.set_password("pw-for-tests-1")
    user.save()
    user.groups.add(Group.objects.get(name="reviewers"))
    session = _reviewer(stack, "carol")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context()
        context.add_cookies(
            [
                {"name": name, "value": value, "url": stack}
                for name, value in session.cookies.items()
            ]
        )
        page = context.new_page()
        page.goto(f"{stack}/board/?agent=henry")
        page.wait_for_selector("#live-state[data-ok='1']", timeout=15000)
        with ThreadPoolExecutor(8) as pool:
            answers = list(
                pool.map(
                    lambda _: signed_request(
                        stack,
                        "henry",
                        secret,
                        "POST",
                        "/api/v1/tool-calls/",
                        {"tool_id": "roster.shift.read", "reason": "live", "arguments": READ},
                    ),
                    range(24),
                )
            )
        assert len({a.headers["X-RABS-Process"] for a in answers}) == 2
        for answer in answers:
            page.locator(f"#action-log #call-{answer.json()['call_id']}").first.wait_for(
                timeout=5000
            )
        browser.close()


def test_model_limits_hold_across_processes(stack: str) -> None:
    """50 requests at once to the model gateway, answered by both web processes: never more than
    max_parallel_requests at the upstream, the rest refused with 429, none lost; tokens per
    minute and a spend budget hold the same way."""
    import openai

    from brainframe.models import LLMBudget
    from brainframe.services.llm.admission import llm_key_issue, llm_upstream_set
    from tests.llm_server import OpenAICompatibleServer

    upstream = OpenAICompatibleServer()
    upstream.hold_each_chat(0.5)  # counts how many are inside at once: upstream.peak
    with upstream.running():
        llm_upstream_set(
            name="local",
            base_url=upstream.base_url,
            served_models=["m"],
            api_key=None,
            external=False,
        )
        henry = Agent.objects.get(agent_id="henry")
        LLMBudget.objects.create(agent=henry, max_parallel_requests=5)
        client = openai.OpenAI(
            base_url=f"{stack}/llm/v1", api_key=llm_key_issue(agent=henry), max_retries=0
        )
        processes: set[str] = set()

        def one(_: int) -> str:
            try:
                raw = client.chat.completions.with_raw_response.create(
                    model="m", messages=[{"role": "user", "content": "hi"}]
                )
                processes.add(raw.headers["X-RABS-Process"])
                return "ok"
            except openai.RateLimitError as exc:
                processes.add(exc.response.headers["X-RABS-Process"])
                return "429"

        with ThreadPoolExecutor(max_workers=50) as pool:
            outcomes = list(pool.map(one, range(50)))
        assert len(processes) == 2, "one process answered all"
        assert upstream.peak <= 5, f"{upstream.peak} requests at the upstream at once"
        assert outcomes.count("ok") >= 5 and outcomes.count("ok") + outcomes.count("429") == 50
        # Tokens per minute, the same 50 at once: the limit holds within one request's tokens.
        upstream.chat_script = lambda messages, tools: {"content": "done"}
        LLMBudget.objects.filter(agent=henry).update(max_parallel_requests=None, tpm_limit=300)
        since, first_minute = timezone.now(), int(time.time() // 60)
        with ThreadPoolExecutor(max_workers=50) as pool:
            outcomes = list(pool.map(one, range(50)))
        minutes = int(time.time() // 60) - first_minute + 1
    from brainframe.models import LLMRequest

    deadline = time.monotonic() + 10
    while LLMRequest.objects.filter(created_at__gte=since).count() < 50:
        assert time.monotonic() < deadline, "requests not recorded"
        time.sleep(0.1)
    used = sum(
        r.prompt_tokens + r.completion_tokens
        for r in LLMRequest.objects.filter(created_at__gte=since, status=200)
    )
    assert outcomes.count("429") > 0 and outcomes.count("ok") >= 1
    assert used <= 300 * minutes + 100, (used, minutes)
    _a_model_budget_holds_under_50_requests_at_once(stack)


def _a_model_budget_holds_under_50_requests_at_once(stack: str) -> None:
    """A budget of a few requests' cost, 50 requests at once over both web processes: each
    admitted request reserves its worst case while it runs, so the spend passes the budget by at
    most one request's real cost (docs/llm-gateway.md). Run on the stack of the test above."""
    from decimal import Decimal

    import openai

    from brainframe.models import LLMBudget, LLMRequest
    from brainframe.services.llm.admission import llm_key_issue, llm_upstream_set
    from tests.llm_server import OpenAICompatibleServer

    upstream = OpenAICompatibleServer()
    upstream.hold_each_chat(0.3)  # all 50 are in flight together
    with upstream.running():
        llm_upstream_set(
            name="priced",
            base_url=upstream.base_url,
            served_models=["priced-m"],
            api_key=None,
            price_in=Decimal("1000"),  # USD per million tokens: each request a few cents
            price_out=Decimal("1000"),
            external=False,
        )
        reggie = Agent.objects.get(agent_id="reggie")
        LLMBudget.objects.update_or_create(
            agent=reggie, defaults={"max_budget": Decimal("0.1"), "budget_duration": "1d"}
        )
        client = openai.OpenAI(
            base_url=f"{stack}/llm/v1", api_key=llm_key_issue(agent=reggie), max_retries=0
        )
        since = timezone.now()

        def one(_: int) -> str:
            try:
                client.chat.completions.create(
                    model="priced-m", max_tokens=20, messages=[{"role": "user", "content": "hi"}]
                )
                return "ok"
            except openai.RateLimitError:
                return "429"

        with ThreadPoolExecutor(max_workers=50) as pool:
            outcomes = list(pool.map(one, range(50)))
    deadline = time.monotonic() + 10
    while LLMRequest.objects.filter(created_at__gte=since).count() < 50:
        assert time.monotonic() < deadline, "requests not recorded"
        time.sleep(0.1)
    answered = list(LLMRequest.objects.filter(created_at__gte=since, status=200))
    spent = sum((r.cost_usd for r in answered), Decimal(0))
    most = max(r.cost_usd for r in answered)
    assert outcomes.count("ok") == len(answered) >= 1 and outcomes.count("429") > 0
    assert spent <= Decimal("0.1") + most, (spent, most, len(answered))
