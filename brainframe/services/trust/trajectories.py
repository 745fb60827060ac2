"""Trajectories (seed 002, "training flywheel"): finished tasks as examples in the OpenAI
fine-tuning chat format, from the event log (the plans) and the audit (every tool call with its
reason, decision and result).

One JSON line per task: ``{"messages": [...], "tools": [...], "metadata": {...}}``. The messages
are the task as the agent got it (user), then, in order, each plan it saved (an assistant
``save_plan`` call and its answer) and each tool call it made (an assistant tool call whose
arguments carry its stated ``reason``, and the broker's answer: the result, or the denial's code
and detail), and the task's result (assistant). ``tools`` lists the function specs of the tools
used. Every string that leaves passes the PII filter (names, phone numbers, addresses… replaced by
their type); an example that cannot be filtered is not written (fail closed).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from brainframe.models import AgentTask, EventLogEntry, Tool, ToolCall
from brainframe.safety.pii.filter import pii_redact

OUTCOMES = {"success": AgentTask.Status.DONE, "failure": AgentTask.Status.FAILED}


def _fn(tool_id: str) -> str:
    return tool_id.replace(".", "_")


def _clean(value: Any) -> Any:
    """``value`` with every string PII-filtered (keys kept)."""
    if isinstance(value, str):
        return pii_redact(value)[0] if value.strip() else value
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def _answer(call: ToolCall) -> dict[str, Any]:
    if call.decision in (ToolCall.Decision.EXECUTED, ToolCall.Decision.EXECUTED_POST_REVIEW) or (
        call.outcome not in (ToolCall.Outcome.NOT_RUN, ToolCall.Outcome.PENDING)
    ):
        answer: dict[str, Any] = {"status": "executed", "outcome": call.outcome}
        if call.output is not None:
            answer["result"] = call.output
        if call.error:
            answer["error"] = call.error
        return answer
    return {"status": call.decision, "code": call.decision_code, "detail": call.decision_detail}


def trajectory(task: AgentTask) -> dict[str, Any]:
    """One task's example: what came from outside the agent (the task, arguments, answers, the
    result) PII-filtered; the instructions and tool specs are the product's own."""
    payload = task.payload if isinstance(task.payload, dict) else {}
    described = payload.get("description") or payload.get("instructions") or ""
    agent = task.agent
    messages: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": f"You are {agent.name}, the {agent.role or 'assistant'} agent. Every tool "
            "call needs a reason. For a task with more than one step, first call save_plan.",
        },
        {"role": "user", "content": f"Task: {_clean(task.title)}\n{_clean(described)}".strip()},
    ]
    steps: list[tuple[Any, int, dict[str, Any]]] = []
    plans = EventLogEntry.objects.filter(name="planner:plan_saved", subject=str(task.task_id))
    for event in plans.order_by("at", "id"):
        arguments = {"goal": event.payload.get("goal", ""), "steps": event.payload.get("steps")}
        steps.append((event.at, 0, {"plan": arguments, "id": f"plan-{event.pk}"}))
    calls = ToolCall.objects.filter(task=task).order_by("timestamp", "seq").select_related("r_tag")
    used: list[str] = []
    for call in calls:
        steps.append((call.timestamp, 1, {"call": call, "id": f"call-{call.pk}"}))
        if call.requested_tool_id not in used:
            used.append(call.requested_tool_id)
    for _, _, step in sorted(steps, key=lambda s: (s[0], s[1])):
        if "plan" in step:
            name, arguments = "save_plan", _clean(step["plan"])
            answer = {"status": "plan_saved"}
        else:
            call = step["call"]
            reason = call.r_tag.thought if call.r_tag_id else ""
            name = _fn(call.requested_tool_id)
            arguments = _clean({**call.input, "reason": reason})
            answer = _clean(_answer(call))
        messages.append(
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": step["id"],
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ],
            }
        )
        messages.append(
            {"role": "tool", "tool_call_id": step["id"], "content": json.dumps(answer, default=str)}
        )
    result = task.result if task.status == AgentTask.Status.DONE else None
    summary = result.get("summary") if isinstance(result, dict) else result
    if task.status == AgentTask.Status.FAILED:
        summary = f"I could not complete this task: {task.failure_reason}"
    messages.append({"role": "assistant", "content": _clean(str(summary or "Done."))})
    tools = [
        {
            "type": "function",
            "function": {
                "name": _fn(tool.tool_id),
                "description": tool.description,
                "parameters": tool.input_schema or {"type": "object"},
            },
        }
        for tool in Tool.objects.filter(tool_id__in=used).order_by("tool_id")
    ]
    return {
        "messages": messages,
        "tools": tools,
        "metadata": {
            "task_id": str(task.task_id),
            "agent_id": task.agent_id,
            "outcome": "success" if task.status == AgentTask.Status.DONE else "failure",
            "calls": len(calls),
        },
    }


def trajectories_export(
    *, outcome: str, since: datetime | None = None, agent_id: str | None = None
) -> Iterator[dict[str, Any]]:
    """The finished tasks' examples (``outcome``: success or failure), oldest first."""
    tasks = AgentTask.objects.filter(status=OUTCOMES[outcome]).select_related("agent")
    if since is not None:
        tasks = tasks.filter(updated_at__gte=since)
    if agent_id:
        tasks = tasks.filter(agent_id=agent_id)
    for task in tasks.order_by("updated_at").iterator(chunk_size=200):
        yield trajectory(task)
