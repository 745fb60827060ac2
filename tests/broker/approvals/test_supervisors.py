"""Self-update through the gate (seed 004 "Supervisor"): an agent asks for its own restart with
the governed ``agent.restart_self`` tool; once a reviewer approves, the broker tells the agent's
real supervisor, which restarts its worker, and the command records who approved. Staff restart
and stop an agent from the board the same way; control URLs stay loopback-only."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.test import Client

from agents_vm.memory import AgentMemory
from brainframe.models import Agent, AgentSupervisor, ApprovalRequest, SupervisorCommand, ToolCall
from brainframe.services.work.supervisors import (
    SupervisorError,
    supervisor_set,
    supervisors_check,
)
from broker.services.approvals import approval_decide
from tests import factories as f
from tests.agents_vm.test_supervisor import (  # noqa: F401
    JOURNAL_KEY,
    TOKEN,
    _get,
    _wait,
    supervisor,
)
from tests.signing import SignedClient

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
CALLS = "/api/v1/tool-calls/"


def _worker_pid(s: dict[str, Any]) -> int:
    pid: int = _get(s, "/healthz").json()["worker"]["pid"]
    return pid


def test_an_approved_restart_self_restarts_the_real_worker(
    henry: SignedClient,
    supervisor: dict[str, Any],  # noqa: F811
) -> None:
    agent = Agent.objects.get(agent_id="henry")
    supervisor_set(agent=agent, control_url=supervisor["url"], token=TOKEN)
    before = _worker_pid(supervisor)
    # The agent changes its own handler configuration in its local store (seed 004)...
    memory = AgentMemory(
        supervisor["dir"] / "data" / "agent_memory.db", journal_key=base64.b64decode(JOURNAL_KEY)
    )
    memory.handler_set("loop", {"poll_seconds": 0.5})
    memory.close()
    health = _get(supervisor, "/healthz").json()
    assert health["handlers"] != health["worker"]["handlers"], "the running worker has it already"
    # ...and asks for the restart that puts it into effect.
    asked = henry.post(
        CALLS,
        {
            "tool_id": "agent.restart_self",
            "arguments": {"reason": "handler configuration changed"},
            "reason": "my local handler configuration changed; reload it",
        },
    )
    assert asked.status_code == 202, asked.json()
    assert _worker_pid(supervisor) == before, "restarted before anyone approved"
    alice = f.UserFactory(username="alice")
    alice.groups.add(Group.objects.get(name="reviewers"))
    approval_decide(approval_id=asked.json()["approval_id"], reviewer=alice, action="approve")
    call = ToolCall.objects.get(pk=asked.json()["call_id"])
    assert call.outcome == "succeeded", call.error
    assert call.output["restarted"] is True and call.output["approved_by"] == "alice"
    after = _wait(lambda: _worker_pid(supervisor) != before and _worker_pid(supervisor), 30, "pid")
    assert after != before
    health = _get(supervisor, "/healthz").json()
    assert health["restarts"] == 1 and health["worker"]["running"]
    assert health["worker"]["handlers"] == health["handlers"], "restarted without the change"
    (command,) = SupervisorCommand.objects.all()
    assert (command.action, command.ok, command.requested_by, command.call_id) == (
        "restart",
        True,
        alice,
        call.pk,
    )
    assert command.answer["previous"]["pid"] == before


def test_staff_restart_and_stop_from_the_board(
    supervisor: dict[str, Any],  # noqa: F811
    seeded: None,
    admin_client: Client,
) -> None:
    agent = Agent.objects.get(agent_id="henry")
    supervisor_set(agent=agent, control_url=supervisor["url"], token=TOKEN)
    assert supervisors_check() == {"reachable": 1, "unreachable": 0}
    page = admin_client.get("/board/?agent=henry")
    assert b"Supervisor" in page.content and b"reachable" in page.content
    before = _worker_pid(supervisor)
    url = "/board/agents/henry/supervisor/"
    forced = admin_client.post(url, {"action": "restart", "force": "on", "reason": "stuck"})
    assert forced.status_code == 200, forced.content
    assert _worker_pid(supervisor) != before
    command = SupervisorCommand.objects.get()
    assert command.force and command.requested_by.username == "admin" and command.call is None
    bad = admin_client.post(url, {"action": "reboot"})
    assert bad.status_code == 400 and bad.json() == {
        "code": "invalid_action",
        "detail": "unknown action 'reboot'",
        "field": "action",
    }
    stopped = admin_client.post(url, {"action": "shutdown", "reason": "maintenance"})
    assert stopped.status_code == 200
    supervisor["proc"].wait(timeout=90)
    assert supervisors_check() == {"reachable": 0, "unreachable": 1}
    assert AgentSupervisor.objects.get().error.startswith("ConnectError")
    page = admin_client.get("/board/?agent=henry")
    assert b"unreachable" in page.content


@pytest.mark.parametrize(
    "url",
    ["http://10.0.0.5:8765", "http://henry.example:8765", "http://169.254.169.254/", "ftp://x"],
)
def test_control_urls_are_loopback_only(seeded: None, url: str) -> None:
    agent = Agent.objects.get(agent_id="henry")
    with pytest.raises(SupervisorError) as refused:
        supervisor_set(agent=agent, control_url=url, token=TOKEN)
    assert refused.value.field == "control_url"
    assert not AgentSupervisor.objects.exists()


def test_restart_self_without_a_supervisor_fails_and_says_why(henry: SignedClient) -> None:
    asked = henry.post(
        CALLS,
        {"tool_id": "agent.restart_self", "arguments": {"reason": "reload"}, "reason": "reload"},
    )
    reviewer = f.UserFactory(username="bob")
    reviewer.groups.add(Group.objects.get(name="reviewers"))
    approval = ApprovalRequest.objects.get(pk=asked.json()["approval_id"])
    approval_decide(approval_id=approval.pk, reviewer=reviewer, action="approve")
    call = ToolCall.objects.get(pk=asked.json()["call_id"])
    assert call.outcome == "failed"
    assert "no_supervisor: no supervisor is registered for henry" in call.error


def test_the_command_registers_a_supervisor(seeded: None, monkeypatch: Any) -> None:
    monkeypatch.setenv("HENRY_CONTROL_TOKEN", TOKEN)
    call_command(
        "agent_supervisor", "henry", "--url", "http://127.0.0.1:8765", "--token-env",
        "HENRY_CONTROL_TOKEN",
    )  # fmt: skip
    stored = AgentSupervisor.objects.get(agent_id="henry")
    assert stored.control_url == "http://127.0.0.1:8765" and TOKEN not in stored.token_encrypted
    with pytest.raises(Exception, match="loopback"):
        call_command("agent_supervisor", "henry", "--url", "http://192.0.2.1:8765")
