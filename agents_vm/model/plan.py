"""Plans: a goal and steps (intent, tools, dependencies) that must form a DAG.

The model saves a plan with the ``save_plan`` tool; ``plan_validate`` refuses it with a list of
problems (missing fields, duplicate or unknown step ids, a dependency cycle, a tool the agent
cannot call) that go back to the model, and otherwise returns the steps in a topological order
(ties keep the model's order), which is the order the loop runs them in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

SAVE_PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "goal": {"type": "string", "description": "What the task must achieve."},
        "steps": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "Short unique id, e.g. s1."},
                    "intent": {"type": "string", "description": "What this step achieves."},
                    "tools": {"type": "array", "items": {"type": "string"}},
                    "depends_on": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["id", "intent", "tools"],
            },
        },
    },
    "required": ["goal", "steps"],
}


class PlanError(ValueError):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Step:
    id: str
    intent: str
    tools: tuple[str, ...]
    depends_on: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "intent": self.intent,
            "tools": list(self.tools),
            "depends_on": list(self.depends_on),
        }


@dataclass(frozen=True)
class Plan:
    goal: str
    steps: tuple[Step, ...]  # in topological order

    def as_dict(self) -> dict[str, Any]:
        return {"goal": self.goal, "steps": [s.as_dict() for s in self.steps]}


def plan_id(task_id: str, plan: Plan) -> str:
    """A stable id of one saved plan of one task (the same plan saved again: the same id)."""
    digest = hashlib.sha256(
        json.dumps([task_id, plan.as_dict()], sort_keys=True).encode()
    ).hexdigest()
    return f"plan-{digest[:24]}"


def _strings(value: Any) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return list(value)
    return None


def plan_validate(raw: Any, *, known_tools: Iterable[str]) -> Plan:
    """A valid plan in run order, or ``PlanError`` listing every problem found."""
    problems: list[str] = []
    if not isinstance(raw, dict):
        raise PlanError(["the plan must be an object with goal and steps"])
    goal = raw.get("goal")
    if not isinstance(goal, str) or not goal.strip():
        problems.append("goal: required text")
    raw_steps = raw.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise PlanError([*problems, "steps: at least one step is required"])
    known = set(known_tools)
    steps: list[Step] = []
    seen: set[str] = set()
    for n, item in enumerate(raw_steps):
        where = f"steps[{n}]"
        if not isinstance(item, dict):
            problems.append(f"{where}: must be an object")
            continue
        step_id, intent = item.get("id"), item.get("intent")
        tools = _strings(item.get("tools", []))
        deps = _strings(item.get("depends_on", []))
        if not isinstance(step_id, str) or not step_id:
            problems.append(f"{where}.id: required text")
            continue
        if step_id in seen:
            problems.append(f"{where}.id: duplicate step id {step_id!r}")
        seen.add(step_id)
        if not isinstance(intent, str) or not intent.strip():
            problems.append(f"{where}.intent: required text")
        if tools is None:
            problems.append(f"{where}.tools: a list of tool ids")
            tools = []
        for tool in tools:
            if tool not in known:
                problems.append(f"{where}.tools: {tool!r} is not a tool you can call")
        if deps is None:
            problems.append(f"{where}.depends_on: a list of step ids")
            deps = []
        steps.append(Step(step_id, str(intent or ""), tuple(tools), tuple(deps)))
    ids = {s.id for s in steps}
    for step in steps:
        for dep in step.depends_on:
            if dep not in ids:
                problems.append(f"step {step.id}: depends on unknown step {dep!r}")
            elif dep == step.id:
                problems.append(f"step {step.id}: depends on itself")
    if problems:
        raise PlanError(problems)

    # Kahn's algorithm; among ready steps, the model's order.
    order: list[Step] = []
    done: set[str] = set()
    remaining = list(steps)
    while remaining:
        ready = [s for s in remaining if set(s.depends_on) <= done]
        if not ready:
            cycle = ", ".join(s.id for s in remaining)
            raise PlanError([f"dependency cycle among steps: {cycle}"])
        step = ready[0]
        order.append(step)
        done.add(step.id)
        remaining.remove(step)
    return Plan(goal=str(goal), steps=tuple(order))
