"""The agent SDK against a real broker (daphne on the test database): signed requests, typed
outcomes, waiting for approvals, and retries that never execute twice."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import Group

from agents_vm.client.sdk import (
    BrokerClient,
    BrokerError,
    Denied,
    Executed,
    InvalidArguments,
    PendingApproval,
    Rejected,
)
from brainframe.models import Agent, ApprovalRequest, ToolCall
from brainframe.services.access.credentials import agent_credential_issue
from brainframe.services.seed import seed_brainframe
from broker.services.approvals import approval_decide
from tests import factories as f

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
READ = {"date_from": "2026-03-02", "date_to": "2026-03-02"}


@pytest.fixture
def secret() -> str:
    seed_brainframe()
    return agent_credential_issue(agent=Agent.objects.get(agent_id="henry"))


@pytest.fixture
def client(live_server_url: str, secret: str) -> Iterator[BrokerClient]:
    with BrokerClient(live_server_url, agent_id="henry", secret=secret, backoff=0.05) as sdk:
        yield sdk


def test_typed_outcomes(client: BrokerClient) -> None:
    executed = client.call_tool("roster.shift.read", READ, reason="check cover")
    assert isinstance(executed, Executed) and executed.ok and executed.result["shifts"]
    assert executed.r_tag and executed.o_tag
    denied = client.call_tool("hr.kpi.update", {}, reason="x")  # role required
    assert isinstance(denied, Denied) and denied.code == "role_required"
    invalid = client.call_tool("roster.shift.read", {"date_from": "soon"}, reason="x")
    assert isinstance(invalid, InvalidArguments)
    assert {e["path"] for e in invalid.errors} == {"/date_to", "/date_from"}
    with pytest.raises(BrokerError) as refused:
        client.call_tool("roster.shift.read", READ, reason="x", task_id="not-a-uuid")
    assert refused.value.status == 400 and refused.value.code == "invalid_request"


def test_wait_for_an_approval(client: BrokerClient) -> None:
    reviewer = f.UserFactory(username="alice")
    reviewer.groups.add(Group.objects.get(name="reviewers"))
    pending = client.call_tool(
        "comms.notification.push",
        {"staff_ids": ["ST-1"], "message": "Bus late"},
        reason="tell staff",
    )
    assert isinstance(pending, PendingApproval)
    assert isinstance(client.wait(pending, timeout=0.2), PendingApproval)  # bound respected

    def approve_soon() -> None:
        approval_decide(approval_id=pending.approval_id, reviewer=reviewer, action="approve")

    timer = threading.Timer(0.5, approve_soon)
    timer.start()
    done = client.wait(pending, timeout=20, first_poll=0.1)
    timer.join()
    assert isinstance(done, Executed) and done.result == {"delivered": 1, "urgency": "normal"}

    second = client.call_tool(
        "comms.notification.push", {"staff_ids": ["ST-2"], "message": "x"}, reason="tell staff"
    )
    assert isinstance(second, PendingApproval)
    approval_decide(
        approval_id=second.approval_id, reviewer=reviewer, action="reject", reason="not needed"
    )
    rejected = client.wait(second, timeout=5)
    assert isinstance(rejected, Rejected) and rejected.reason == "not needed"


class DropFirstResponse:
    """A TCP proxy that forwards every request but drops the first response on the floor:
    the call reaches the broker, the agent never hears back (a lost answer)."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.target = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.dropped = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn, socket.create_connection(self.target) as upstream:
            conn.settimeout(10)
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(65536)
            head, _, body = request.partition(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                ),
                0,
            )
            while len(body) < length:
                body += conn.recv(65536)
            upstream.sendall(head.replace(b"keep-alive", b"close") + b"\r\n\r\n" + body)
            response = b""
            while chunk := upstream.recv(65536):
                response += chunk
            if self.dropped == 0:
                self.dropped += 1
                return  # close without answering
            conn.sendall(response)

    def close(self) -> None:
        self.server.close()


def test_a_lost_answer_is_retried_without_a_second_execution(
    live_server_url: str, secret: str
) -> None:
    proxy = DropFirstResponse(live_server_url)
    try:
        with BrokerClient(proxy.url, agent_id="henry", secret=secret, backoff=0.05) as sdk:
            outcome = sdk.call_tool(
                "roster.shift.read", READ, reason="check cover", idempotency_key="retry-me-1"
            )
    finally:
        proxy.close()
    assert proxy.dropped == 1
    assert isinstance(outcome, Executed) and outcome.ok
    calls = ToolCall.objects.filter(agent_id="henry", idempotency_key="retry-me-1")
    assert calls.count() == 1  # the retry was answered from the first call
    assert ApprovalRequest.objects.count() == 0


def test_inbox_context_observations_and_deliverables(client: BrokerClient) -> None:
    todo = client.tasks("todo")
    assert todo
    task_id = todo[0]["task_id"]
    assert client.claim(task_id)["status"] == "in_progress"
    with pytest.raises(BrokerError) as again:
        client.claim(task_id)
    assert again.value.status == 409
    client.progress(task_id, 40, "halfway")
    assert "PRIME DIRECTIVES" in client.context(task_id)["directives_preamble"]
    note = client.observe(
        bucket="transportation",
        entity="Hiace 2",
        pattern_type="recurring_issue",
        observation="Hoist sticks again",
    )
    assert note["frequency"] >= 2
    upload = client.upload("roster_week12.csv", b"a,b\n1,2\n", task_id=task_id)
    assert upload["size_bytes"] == 8
    assert client.complete(task_id, {"sent": True})["status"] == "done"
    assert client.heartbeat("active", 120)["status"] == "active"
    assert any(t["tool_id"] == "roster.shift.read" for t in client.tools())
