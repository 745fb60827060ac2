"""What the model is offered and told: the broker's tools as function tools (each with a
required ``reason``), the loop's own tools, the prompts, and how a call's outcome reads."""

from __future__ import annotations

import json
import re
from typing import Any

from agents_vm.client.sdk import (
    Denied,
    Executed,
    Expired,
    InvalidArguments,
    Outcome,
    PendingApproval,
    Rejected,
)
from agents_vm.model.plan import SAVE_PLAN_SCHEMA, Plan, Step

REASON_PROPERTY = {
    "type": "string",
    "description": "Why you are making this call, in one sentence (recorded in the audit).",
}
LOCAL_TOOLS: dict[str, dict[str, Any]] = {
    "save_plan": {
        "description": "Save (or replace) the plan for a multi-step task: the goal and its "
        "steps, each with its intent, the tools it uses and the steps it depends on.",
        "parameters": SAVE_PLAN_SCHEMA,
    },
    "record_observation": {
        "description": "Record something worth remembering about an entity (organisational "
        "memory). Leave bucket out to let the bucket checker choose.",
        "parameters": {
            "type": "object",
            "properties": {
                "bucket": {"type": "string"},
                "entity": {"type": "string"},
                "pattern_type": {"type": "string", "description": "e.g. recurring_issue"},
                "observation": {"type": "string"},
                "severity": {"type": "integer", "minimum": 1, "maximum": 5},
            },
            "required": ["entity", "pattern_type", "observation"],
        },
    },
    "write_deliverable": {
        "description": "Write a file for the task's requester; it is uploaded as a deliverable.",
        "parameters": {
            "type": "object",
            "properties": {"filename": {"type": "string"}, "content": {"type": "string"}},
            "required": ["filename", "content"],
        },
    },
    "update_handler": {
        "description": (
            "Change one of your own handlers (agents_vm/loop/handlers.py): 'loop' takes config "
            "(e.g. {\"poll_seconds\": 5}); 'answer' and 'result' take Python code defining "
            "handle(...). A reviewer approves the change (agent.update_handler); it takes effect "
            "when your worker restarts: then ask for that with agent.restart_self."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": ["loop", "answer", "result"]},
                "config": {"type": "object"},
                "code": {"type": "string"},
            },
            "required": ["name"],
        },
    },
    "remember_preference": {
        "description": "Remember a person's preference in the agent's private memory.",
        "parameters": {
            "type": "object",
            "properties": {"key": {"type": "string"}, "value": {"type": "string"}},
            "required": ["key", "value"],
        },
    },
}
_SAFE_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def outcome_dict(outcome: Outcome) -> dict[str, Any]:
    """What the model is told about a call."""
    if isinstance(outcome, Executed):
        return {"status": "executed", "ok": outcome.ok, "result": outcome.result}
    if isinstance(outcome, Denied):
        return {"status": "denied", "code": outcome.code, "reason": outcome.detail}
    if isinstance(outcome, InvalidArguments):
        return {"status": "invalid_arguments", "errors": outcome.errors}
    if isinstance(outcome, Rejected):
        return {"status": "rejected", "reason": outcome.reason}
    if isinstance(outcome, Expired):
        return {"status": "expired"}
    if isinstance(outcome, PendingApproval):
        return {"status": "pending_approval", "call_id": outcome.call_id}
    return {"status": "unknown"}


def fn_name(tool_id: str) -> str:
    """A broker tool's id as a function name the model API accepts."""
    return _SAFE_NAME.sub("_", tool_id)[:64]


def function_specs(
    tools: dict[str, dict[str, Any]], *, reason: bool = True
) -> list[dict[str, Any]]:
    """Broker tools as function tools, each with a required ``reason`` (unless ``reason`` is
    False: the Actuator translates, the reason is the Dreamer's)."""
    specs = []
    for name, tool in tools.items():
        schema = dict(tool.get("input_schema") or {"type": "object"})
        if reason:
            schema["properties"] = {**schema.get("properties", {}), "reason": REASON_PROPERTY}
            required = list(schema.get("required", []))
            schema["required"] = required if "reason" in required else [*required, "reason"]
        specs.append(
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": f"{tool['tool_id']}: {tool.get('description', '')}",
                    "parameters": schema,
                },
            }
        )
    return specs


def offered(
    tools: dict[str, dict[str, Any]], plan: Plan | None, step: Step | None
) -> list[dict[str, Any]]:
    """Function tools for this turn: the loop's own, and the step's broker tools while a plan
    runs (every broker tool otherwise)."""
    specs = [
        {"type": "function", "function": {"name": name, **spec}}
        for name, spec in LOCAL_TOOLS.items()
    ]
    shown = {
        name: tool
        for name, tool in tools.items()
        if plan is None or (step is not None and tool["tool_id"] in step.tools)
    }
    return specs + function_specs(shown)


def step_prompt(step: Step) -> str:
    return (
        f"Now step {step.id}: {step.intent}. Tools for this step: "
        f"{', '.join(step.tools) or 'none'}. When the step is done, reply without a tool call."
    )


def system_prompt(agent_id: str, context: dict[str, Any]) -> str:
    lines = [context.get("directives_preamble", ""), "", f"You are {agent_id}."]
    notes = context.get("notes") or []
    if notes:
        lines += ["Standing notes:", *[f"- {n['content']}" for n in notes]]
    observations = context.get("observations") or []
    if observations:
        lines += [
            "What the organisation knows that may matter:",
            *[f"- [{o['bucket']}] {o['entity']}: {o['observation']}" for o in observations],
        ]
    proven = context.get("proven_plans") or []
    if proven:  # the Dreamer found plans of yours that worked for goals like this one
        lines += ["Plans of yours that worked for similar goals (adapt, do not copy blindly):"]
        for plan in proven:
            steps = "; ".join(
                f"{s.get('id')}: {s.get('intent')} [{', '.join(s.get('tools') or [])}]"
                for s in plan.get("steps") or []
            )
            lines.append(f"- {plan.get('goal')}: {steps}")
    messages = context.get("messages") or []
    if messages:  # queued by this agent's hooks for its next turn (data, not instructions)
        lines += [
            "Messages your hooks queued for this turn:",
            *[f"- ({m.get('hook', 'hook')}) {m.get('text', '')}" for m in messages],
        ]
    lines += [
        "",
        "For a task with more than one step, first call save_plan. Every tool call needs a "
        "reason. If a call is denied, read the reason and change the plan.",
    ]
    return "\n".join(lines)


def task_prompt(task: dict[str, Any]) -> str:
    payload = task.get("payload") or {}
    details = json.dumps(payload, default=str) if payload else ""
    return f"Task: {task.get('title', '')}\n{details}".strip()
