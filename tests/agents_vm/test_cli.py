"""``python -m agents_vm call`` / ``tools`` against a real broker: the answer as JSON, the exit
status by outcome, and clear refusals for a bad command line, a bad secret or no broker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group

from brainframe.models import Agent, ApprovalRequest, ToolCall
from brainframe.services.access.credentials import agent_credential_issue
from brainframe.services.seed import seed_brainframe
from broker.services.approvals import approval_decide
from tests import factories as f
from tests.conftest import free_port

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]
READ = '{"date_from": "2026-03-02", "date_to": "2026-03-02"}'


@pytest.fixture
def agent_env(live_server_url: str) -> dict[str, str]:
    seed_brainframe()
    secret = agent_credential_issue(agent=Agent.objects.get(agent_id="henry"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RABS_")}
    return {**env, "RABS_BROKER_URL": live_server_url, "RABS_AGENT_ID": "henry",
            "RABS_AGENT_SECRET": secret}  # fmt: skip


def agents_vm(env: dict[str, str], *args: str) -> tuple[int, Any, str]:
    done = subprocess.run(
        [sys.executable, "-m", "agents_vm", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    body = json.loads(done.stdout) if done.stdout.strip() else None
    return done.returncode, body, done.stderr


def test_a_call_from_the_shell_is_decided_audited_and_answered(agent_env: dict[str, str]) -> None:
    rc, body, _ = agents_vm(
        agent_env, "call", "roster.shift.read", READ, "--reason", "check Monday's cover"
    )
    assert rc == 0 and body["status"] == "executed" and body["result"]["shifts"]
    call = ToolCall.objects.get(pk=body["call_id"])
    assert call.agent_id == "henry" and call.r_tag.thought == "check Monday's cover"
    assert str(call.o_tag_id) == body["o_tag"]

    rc, body, _ = agents_vm(agent_env, "call", "roster.shift.read", '{"date_from": "soon"}',
                           "--reason", "x")  # fmt: skip
    assert rc == 5 and body["status"] == "invalid"
    assert {e["path"] for e in body["errors"]} == {"/date_to", "/date_from"}

    rc, body, _ = agents_vm(agent_env, "call", "hr.kpi.update", "--reason", "x")
    assert rc == 4 and body["status"] == "denied" and body["code"] == "role_required"

    rc, body, _ = agents_vm(agent_env, "tools")
    assert rc == 0 and "roster.shift.read" in {t["tool_id"] for t in body["tools"]}


def test_waiting_for_a_reviewer(agent_env: dict[str, str]) -> None:
    push = '{"staff_ids": ["ST-1"], "message": "Bus late"}'
    rc, body, _ = agents_vm(agent_env, "call", "comms.notification.push", push,
                           "--reason", "tell staff")  # fmt: skip
    assert rc == 3 and body["status"] == "pending_approval" and body["approval_id"]

    reviewer = f.UserFactory(username="alice")
    reviewer.groups.add(Group.objects.get(name="reviewers"))
    for action, rc_expected, status in (("approve", 0, "executed"), ("reject", 4, "rejected")):
        waiting = subprocess.Popen(
            [sys.executable, "-m", "agents_vm", "call", "comms.notification.push", push,
             "--reason", f"tell staff ({action})", "--wait", "60"],
            cwd=ROOT, env=agent_env, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        approval = _await_approval(f"tell staff ({action})")
        approval_decide(approval_id=approval.pk, reviewer=reviewer, action=action, reason="ok")
        out, _ = waiting.communicate(timeout=60)
        body = json.loads(out)
        assert waiting.returncode == rc_expected and body["status"] == status
        assert body["call_id"] == str(approval.tool_call_id)
    assert body["reason"] == "ok"


def _await_approval(reason: str) -> ApprovalRequest:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        approval = ApprovalRequest.objects.filter(reason=reason).first()
        if approval is not None:
            return approval
        time.sleep(0.1)
    raise AssertionError(f"no approval for {reason!r}")


def test_refusals_say_what_is_wrong(agent_env: dict[str, str], tmp_path: Path) -> None:
    rc, body, _ = agents_vm({**agent_env, "RABS_AGENT_SECRET": "not-the-secret"}, "tools")
    assert rc == 6 and body["http_status"] == 401 and body["code"] == "auth_bad_signature"

    no_secret = {k: v for k, v in agent_env.items() if k != "RABS_AGENT_SECRET"}
    rc, body, err = agents_vm(no_secret, "tools")
    assert rc == 2 and body is None and "RABS_AGENT_SECRET" in err
    secret_file = tmp_path / "secret"
    secret_file.write_text(agent_env["RABS_AGENT_SECRET"] + "\n")
    rc, body, _ = agents_vm(no_secret, "tools", "--secret-file", str(secret_file))
    assert rc == 0

    for arguments, says in (("{not json", "not valid JSON"), ("[1]", "must be a JSON object")):
        rc, body, err = agents_vm(agent_env, "call", "roster.shift.read", arguments,
                                 "--reason", "x")  # fmt: skip
        assert rc == 2 and says in err
    rc, _, err = agents_vm(agent_env, "call", "roster.shift.read", READ)
    assert rc == 2 and "--reason" in err
    before = ToolCall.objects.count()

    nobody = f"http://127.0.0.1:{free_port()}"
    rc, body, _ = agents_vm(agent_env, "tools", "--broker", nobody)
    assert rc == 7 and body["status"] == "unreachable" and nobody in body["detail"]
    assert ToolCall.objects.count() == before
