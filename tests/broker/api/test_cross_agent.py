"""One agent can never reach another's calls, tasks, deliverables, reasons, origins or approvals:
every endpoint that takes an id answers as if the other agent's thing did not exist."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from brainframe.models import AgentTask, Deliverable, Tool, ToolCall
from tests import factories as f
from tests.signing import SignedClient

READ = {"date_from": "2026-03-02", "date_to": "2026-03-02"}


@pytest.fixture
def henrys(henry: SignedClient) -> dict[str, Any]:
    """Things that belong to Henry: a call (with its R-Tag and O-Tag), a task, an approval."""
    Tool.objects.filter(tool_id="roster.shift.read").update(execution_mode="auto")
    Tool.objects.filter(tool_id="comms.notification.push").update(execution_mode="review")
    task = f.AgentTaskFactory(agent_id="henry", title="Henry's own")
    call = henry.post(
        "/api/v1/tool-calls/",
        {"tool_id": "roster.shift.read", "reason": "mine", "arguments": READ},
    ).json()
    pending = henry.post(
        "/api/v1/tool-calls/",
        {
            "tool_id": "comms.notification.push",
            "reason": "mine",
            "arguments": {"staff_ids": ["ST-1"], "message": "hi"},
        },
    ).json()
    assert pending["status"] == "pending_approval"
    return {"task": str(task.task_id), "call": call, "pending": pending}


def _upload(agent: SignedClient, task_id: str) -> Any:
    upload = SimpleUploadedFile("note.txt", b"hello", content_type="text/plain")
    body = encode_multipart(BOUNDARY, {"file": upload, "task_id": task_id})
    return agent.post("/api/v1/deliverables/", raw=body, content_type=MULTIPART_CONTENT)


CROSSINGS: dict[str, Callable[[SignedClient, dict[str, Any]], Any]] = {
    "read another's call": lambda r, h: r.get(f"/api/v1/tool-calls/{h['call']['call_id']}/"),
    "poll another's pending call": lambda r, h: r.get(
        f"/api/v1/tool-calls/{h['pending']['call_id']}/"
    ),
    "claim another's task": lambda r, h: r.post(f"/api/v1/tasks/{h['task']}/claim/"),
    "progress on another's task": lambda r, h: r.post(
        f"/api/v1/tasks/{h['task']}/progress/", {"progress": 50}
    ),
    "complete another's task": lambda r, h: r.post(
        f"/api/v1/tasks/{h['task']}/complete/", {"result": {}}
    ),
    "fail another's task": lambda r, h: r.post(f"/api/v1/tasks/{h['task']}/fail/", {"reason": "x"}),
    "call a tool under another's task": lambda r, h: r.post(
        "/api/v1/tool-calls/",
        {"tool_id": "roster.shift.read", "reason": "x", "arguments": READ, "task_id": h["task"]},
    ),
    "follow on from another's R-Tag": lambda r, h: r.post(
        "/api/v1/tool-calls/",
        {
            "tool_id": "roster.shift.read",
            "reason": "x",
            "arguments": READ,
            "parent_r_tag": h["call"]["r_tag"],
        },
    ),
    "join another's O-Tag": lambda r, h: r.post(
        "/api/v1/tool-calls/",
        {
            "tool_id": "roster.shift.read",
            "reason": "x",
            "arguments": READ,
            "o_tag": h["call"]["o_tag"],
        },
    ),
    "context of another's task": lambda r, h: r.get(f"/api/v1/context/?task_id={h['task']}"),
    "deliverable for another's task": lambda r, h: _upload(r, h["task"]),
    "usage on another's task": lambda r, h: r.post(
        "/api/v1/usage/",
        {"mode": "normal", "model": "gpt-4o-mini", "prompt_tokens": 1, "task_id": h["task"]},
    ),
    "list the approvals": lambda r, h: r.get("/api/v1/review/approvals/"),
    "approve another's call": lambda r, h: r.post(
        f"/api/v1/review/approvals/{h['pending']['approval_id']}/approve/", {}
    ),
}


@pytest.mark.parametrize("crossing", sorted(CROSSINGS))
def test_cross_agent_access_is_refused(
    reggie: SignedClient, henrys: dict[str, Any], crossing: str
) -> None:
    calls_before = ToolCall.objects.count()
    response = CROSSINGS[crossing](reggie, henrys)
    # 404 where an id is looked up among the agent's own things; the reviewer API is for
    # signed-in people, never for agents (401/403).
    assert response.status_code in (401, 403, 404), (crossing, response.content)
    if response.status_code == 404:
        assert response.json()["code"].startswith("unknown_")
    assert ToolCall.objects.count() == calls_before  # nothing recorded on Henry's things
    task = AgentTask.objects.get(pk=henrys["task"])
    assert task.status == "todo" and task.progress == 0
    assert not Deliverable.objects.filter(task=task).exists()
    from brainframe.models import ApprovalRequest

    assert ApprovalRequest.objects.get(pk=henrys["pending"]["approval_id"]).status == "pending"
