"""An approved call executes in a real Celery worker process, over the real Redis broker."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group

from brainframe.models import ToolCall
from broker.audit.hashing import arguments_hash
from broker.services.approvals import approval_decide
from rabs.celery import app as celery_app
from rabs.embedded import database_url
from tests import factories as f

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(django_db_setup: Any, settings: Any) -> Iterator[subprocess.Popen[bytes]]:
    db = settings.DATABASES["default"]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "rabs.settings.test",
        "DATABASE_URL": database_url(db),
        "REDIS_URL": settings.REDIS.cache,
    }
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
    # This test enqueues for real (Celery reads the Django setting live).
    settings.CELERY_TASK_ALWAYS_EAGER = False
    assert celery_app.conf.task_always_eager is False
    yield process
    process.terminate()
    process.wait(timeout=20)


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
