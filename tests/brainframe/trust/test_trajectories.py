"""export_trajectories: finished tasks as fine-tuning examples, from the log and the audit,
PII-filtered, by outcome."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from brainframe.models import Agent, AgentTask
from brainframe.services.work.tasks import task_claim, task_complete, task_fail
from broker.pipeline.context import CallRequest
from broker.services.calls import tool_call_submit
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db


def _export(*args: str) -> list[dict[str, Any]]:
    """The examples of the tasks this test made (the demo has finished tasks of its own)."""
    out = StringIO()
    call_command("export_trajectories", *args, stdout=out, stderr=StringIO())
    examples = [json.loads(line) for line in out.getvalue().splitlines()]
    return [e for e in examples if e["metadata"]["task_id"] in MINE]


MINE: set[str] = set()


def test_a_finished_task_becomes_one_example(henry: SignedClient, tmp_path: Path) -> None:
    agent = Agent.objects.get(agent_id="henry")
    task = AgentTask.objects.create(
        agent=agent,
        title="Tell Mary Jones about Monday's bus",
        payload={"description": "Call Mary Jones on 0412 345 678 about the 9:30 pick-up."},
    )
    task_claim(agent=agent, task_id=task.task_id)
    henry.post(
        "/api/v1/plans/events/",
        {
            "event": "plan_saved",
            "plan_id": "plan-1",
            "task_id": str(task.task_id),
            "goal": "check the roster, then tell her",
            "steps": [{"id": "s1", "intent": "read the roster", "tools": ["roster.shift.read"]}],
        },
    )
    for arguments in ({"date_from": "2026-03-02", "date_to": "2026-03-02"}, {"date_from": "x"}):
        tool_call_submit(
            agent=agent,
            request=CallRequest(
                tool_id="roster.shift.read",
                arguments=arguments,
                reason="who drives Mary Jones on Monday",
                task_id=task.task_id,
            ),
        )
    task_complete(agent=agent, task_id=task.task_id, result={"summary": "Told Mary Jones."})
    failed = AgentTask.objects.create(agent=agent, title="Book a bus")
    MINE.update({str(task.task_id), str(failed.task_id)})
    task_claim(agent=agent, task_id=failed.task_id)
    task_fail(agent=agent, task_id=failed.task_id, reason="no bus free")

    (example,) = _export("--outcome", "success")
    roles = [m["role"] for m in example["messages"]]
    assert roles == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    plan_call = example["messages"][2]["tool_calls"][0]["function"]
    assert plan_call["name"] == "save_plan"
    assert json.loads(plan_call["arguments"])["goal"] == "check the roster, then tell her"
    first = example["messages"][4]["tool_calls"][0]["function"]
    assert first["name"] == "roster_shift_read"
    assert json.loads(first["arguments"])["date_from"] == "2026-03-02"
    assert json.loads(example["messages"][5]["content"])["status"] == "executed"
    refused = json.loads(example["messages"][7]["content"])
    assert refused["status"] == "invalid" and refused["code"] == "invalid_arguments"
    assert example["messages"][-1]["content"] == "Told <PERSON>."
    assert example["messages"][0]["content"].startswith("You are Henry")
    assert example["messages"][1]["content"].startswith("Task: Tell <PERSON> about")
    assert [t["function"]["name"] for t in example["tools"]] == ["roster_shift_read"]
    assert example["metadata"]["outcome"] == "success" and example["metadata"]["calls"] == 2
    text = json.dumps(example)
    assert "Mary Jones" not in text and "0412 345 678" not in text  # PII filtered

    (failure,) = _export("--outcome", "failure")
    assert failure["metadata"]["task_id"] == str(failed.task_id)
    assert "no bus free" in failure["messages"][-1]["content"]
    assert _export("--outcome", "success", "--since", "2100-01-01") == []

    target = tmp_path / "success.jsonl"
    call_command(
        "export_trajectories", "--outcome", "success", "--output", str(target), stderr=StringIO()
    )
    lines = target.read_text().splitlines()
    assert str(task.task_id) in "".join(lines) and all(json.loads(line) for line in lines)
    assert not (tmp_path / "success.jsonl.partial").exists()
