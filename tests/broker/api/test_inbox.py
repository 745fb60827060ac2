"""Tasks, heartbeat, context, observations and deliverables over the signed API."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from brainframe.models import Agent, AgentTask, ContextBucketEntry, Deliverable
from brainframe.services.access.credentials import agent_credential_issue
from tests import factories as f
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db


def test_inbox_lists_own_tasks_by_status(henry: SignedClient) -> None:
    todo = henry.get("/api/v1/tasks/?status=todo").json()
    assert todo and all(t["status"] == "todo" for t in todo)
    assert [t["priority"] for t in todo] == sorted((t["priority"] for t in todo), reverse=True)


def test_kanban_flow_claim_progress_complete(henry: SignedClient) -> None:
    task = f.AgentTaskFactory(agent_id="henry", title="Vehicle check")
    base = f"/api/v1/tasks/{task.task_id}"
    claimed = henry.post(f"{base}/claim/")
    assert claimed.status_code == 200 and claimed.json()["status"] == "in_progress"
    again = henry.post(f"{base}/claim/")
    assert again.status_code == 409 and again.json()["code"] == "task_state_conflict"
    assert (
        henry.post(f"{base}/progress/", {"progress": 50, "note": "half"}).json()["progress"] == 50
    )
    assert henry.post(f"{base}/progress/", {"progress": 150}).status_code == 400
    done = henry.post(f"{base}/complete/", {"result": {"vehicle": "ok"}}).json()
    assert done["status"] == "done" and done["result"] == {"vehicle": "ok"}


def test_task_with_an_open_approval_completes_into_review(henry: SignedClient) -> None:
    task = f.AgentTaskFactory(agent_id="henry", status="in_progress")
    f.ApprovalRequestFactory(agent_id="henry", task=task)
    done = henry.post(f"/api/v1/tasks/{task.task_id}/complete/", {"result": "sent"}).json()
    assert done["status"] == "review"


def test_fail_records_the_reason(henry: SignedClient) -> None:
    task = f.AgentTaskFactory(agent_id="henry")
    body = henry.post(f"/api/v1/tasks/{task.task_id}/fail/", {"reason": "no vehicle"}).json()
    assert body["status"] == "failed" and body["failure_reason"] == "no vehicle"


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_claims_have_one_winner() -> None:
    from django.test import Client

    from brainframe.services.seed import seed_brainframe

    seed_brainframe()
    secret = agent_credential_issue(agent=Agent.objects.get(agent_id="henry"))
    for _ in range(10):
        task = f.AgentTaskFactory(agent_id="henry")
        results: list[int] = []
        barrier = threading.Barrier(2)

        def claim(
            task: AgentTask = task,
            results: list[int] = results,
            barrier: threading.Barrier = barrier,
        ) -> None:
            agent = SignedClient(Client(), "henry", secret)
            barrier.wait()
            results.append(agent.post(f"/api/v1/tasks/{task.task_id}/claim/").status_code)
            connection.close()

        threads = [threading.Thread(target=claim) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(results) == [200, 409]
        assert AgentTask.objects.get(pk=task.task_id).status == "in_progress"


def test_heartbeat_updates_status(henry: SignedClient) -> None:
    body = henry.post("/api/v1/heartbeat/", {"status": "active", "uptime_seconds": 3600}).json()
    assert body["status"] == "active"
    agent = Agent.objects.get(agent_id="henry")
    assert agent.status == "active" and agent.uptime_seconds == 3600 and agent.last_heartbeat_at
    assert (
        henry.post("/api/v1/heartbeat/", {"status": "paused", "uptime_seconds": 1}).status_code
        == 400
    )


def test_context_has_notes_directives_and_observations(henry: SignedClient) -> None:
    body = henry.get("/api/v1/context/?bucket=transportation").json()
    assert "Always CC manager on emails" in [n["content"] for n in body["notes"]]
    preamble = body["directives_preamble"]
    assert "PRIVACY_NO_PII" in preamble and "SAFETY_FIRST" in preamble
    assert preamble.index("NDIS_COMPLIANCE") > preamble.index("PRIVACY_NO_PII")
    assert [o["entity"] for o in body["observations"]] == ["Hiace 2"]


def test_observations_reinforce(henry: SignedClient) -> None:
    payload = {
        "bucket": "transportation",
        "entity": "Hiace 3",
        "pattern_type": "recurring_issue",
        "observation": "Rear door sticks",
        "severity": 3,
    }
    first = henry.post("/api/v1/observations/", payload)
    assert first.status_code == 201 and first.json()["frequency"] == 1
    ContextBucketEntry.objects.filter(entity="Hiace 3").update(decay=0.5)
    second = henry.post("/api/v1/observations/", payload)
    assert second.status_code == 200
    assert second.json()["frequency"] == 2 and second.json()["decay"] == 1.0
    assert second.json()["current_score"] == 6.0
    bad = henry.post("/api/v1/observations/", {**payload, "bucket": "gossip"})
    assert bad.status_code == 400 and bad.json()["field"] == "bucket"


def _multipart(henry: SignedClient, data: dict[str, Any]) -> Any:
    from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

    body = encode_multipart(BOUNDARY, data)
    return henry.post("/api/v1/deliverables/", raw=body, content_type=MULTIPART_CONTENT)


def test_deliverable_upload_with_limits(henry: SignedClient, settings: Any, tmp_path: Any) -> None:
    settings.MEDIA_ROOT = tmp_path
    task = f.AgentTaskFactory(agent_id="henry")
    ok = _multipart(
        henry,
        {
            "file": SimpleUploadedFile("roster_week12.csv", b"a,b\n1,2\n"),
            "task_id": str(task.task_id),
        },
    )
    assert ok.status_code == 201, ok.content
    item = Deliverable.objects.get(pk=ok.json()["deliverable_id"])
    assert item.task == task and item.size_bytes == 8 and item.content_type == "text/csv"
    assert item.file.name.startswith(f"outbox/henry/{task.task_id}/")

    exe = _multipart(henry, {"file": SimpleUploadedFile("payload.exe", b"MZ")})
    assert exe.status_code == 415 and exe.json()["code"] == "file_type_not_allowed"
    settings.RABS_DELIVERABLE_MAX_BYTES = 4
    big = _multipart(henry, {"file": SimpleUploadedFile("big.txt", b"0123456789")})
    assert big.status_code == 413 and big.json()["code"] == "file_too_large"
    other = f.AgentTaskFactory(agent_id="reggie")
    settings.RABS_DELIVERABLE_MAX_BYTES = 1000
    theirs = _multipart(
        henry, {"file": SimpleUploadedFile("x.txt", b"x"), "task_id": str(other.task_id)}
    )
    assert theirs.status_code == 404
    assert Deliverable.objects.count() == 1
