"""An approved call executes in a real Celery worker process, over the real Redis broker."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group

from brainframe.models import Agent, ToolCall
from broker.audit.hashing import arguments_hash
from broker.services.approvals import approval_decide
from rabs.celery import app as celery_app
from tests import factories as f
from tests.mail_servers import SMTPServer, WebhookReceiver
from tests.processes import process_env

ROOT = Path(__file__).resolve().parents[3]
pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _start_worker(settings: Any, **extra_env: str) -> subprocess.Popen[bytes]:
    # The worker publishes for real too (a retry is a new message, not an eager call).
    env = process_env(RABS_CELERY_EAGER="false", **extra_env)
    process = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "celery"),
            "-A",
            "rabs",
            "worker",
            "-P",
            "solo",
            "-l",
            "warning",
            "-Q",
            settings.CELERY_TASK_DEFAULT_QUEUE,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    # These tests enqueue for real (Celery reads the Django setting live).
    settings.CELERY_TASK_ALWAYS_EAGER = False
    assert celery_app.conf.task_always_eager is False
    return process


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(timeout=20)


@pytest.fixture
def worker(django_db_setup: Any, settings: Any) -> Iterator[subprocess.Popen[bytes]]:
    process = _start_worker(settings)
    yield process
    _stop(process)


def test_approved_call_runs_once_in_a_worker(worker: subprocess.Popen[bytes], seeded: None) -> None:
    reviewer = f.UserFactory(username="alice")
    reviewer.groups.add(Group.objects.get(name="reviewers"))
    tool = f.ToolFactory(
        tool_id="test.worker.write",
        risk_level="write",
        execution_mode="review",
        handler_config={"callable": "roster.shift_swap"},
    )
    arguments = {
        "shift_id": "SH-1",
        "to_staff_id": "ST-2",
        "from_staff_id": "ST-1",
        "reason": "swap",
    }
    call = f.ToolCallFactory(
        agent_id="henry", tool=tool, decision="pending_approval", input=arguments
    )
    approval = f.ApprovalRequestFactory(
        agent_id="henry",
        tool=tool,
        tool_call=call,
        arguments=arguments,
        arguments_hash=arguments_hash(arguments),
    )
    approval_decide(approval_id=approval.pk, reviewer=reviewer, action="approve")
    deadline = time.monotonic() + 60
    while ToolCall.objects.get(pk=call.pk).outcome in ("not_run", "pending"):
        assert worker.poll() is None, worker.stderr.read() if worker.stderr else ""
        assert time.monotonic() < deadline, "the worker did not execute the approved call"
        time.sleep(0.2)
    done = ToolCall.objects.get(pk=call.pk)
    assert done.outcome == "succeeded" and done.output["status"] == "swapped"
    assert done.outcome_hash


def test_a_flaky_webhook_is_retried_on_its_own_and_the_email_goes_once(
    django_db_setup: Any, settings: Any, seeded: None
) -> None:
    """Each channel is its own task with its own retries: a webhook failing four times, then
    succeeding, is delivered once, and the reviewers get exactly one e-mail."""
    from brainframe.models import ApprovalRequest, NotificationDelivery
    from broker.pipeline.context import CallRequest
    from broker.services.calls import tool_call_submit

    smtp, webhook = SMTPServer(), WebhookReceiver(failures=4)
    settings.RABS_APPROVAL_WEBHOOK_URL = webhook.url
    process = _start_worker(
        settings,
        RABS_TEST_EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
        EMAIL_HOST="127.0.0.1",
        EMAIL_PORT=str(smtp.port),
        RABS_APPROVAL_WEBHOOK_URL=webhook.url,
    )
    try:
        for name in ("alice", "bob"):
            user = f.UserFactory(username=name, email=f"{name}@rabs.test")
            user.groups.add(Group.objects.get(name="reviewers"))
        f.ToolFactory(
            tool_id="test.worker.write",
            risk_level="write",
            execution_mode="review",
            agent_access=["henry"],
            handler_config={"callable": "roster.shift_swap"},
        )
        answer = tool_call_submit(
            agent=Agent.objects.get(agent_id="henry"),
            request=CallRequest(tool_id="test.worker.write", arguments={}, reason="swap"),
        )
        approval = ApprovalRequest.objects.get(pk=answer.body["approval_id"])
        deadline = time.monotonic() + 90  # backoff: up to 1 + 2 + 4 + 8 s
        delivered = NotificationDelivery.objects.filter(
            approval=approval, delivered_at__isnull=False
        )
        while delivered.count() < 3:  # two e-mail recipients and the webhook
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, list(
                NotificationDelivery.objects.values_list("channel", "attempts", "last_error")
            )
            time.sleep(0.2)
    finally:
        _stop(process)
        smtp.close()
        webhook.close()
    assert len(webhook.bodies) == 5
    assert [sorted(to) for to, _ in smtp.messages] == [["alice@rabs.test", "bob@rabs.test"]]
    assert smtp.messages[0][1]["Subject"] == "Approval needed: test.worker.write for henry"
    assert NotificationDelivery.objects.get(approval=approval, channel="webhook").attempts == 5
