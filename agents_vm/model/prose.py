"""Everything the Dreamer reads, in words: tools and their arguments, outcomes of calls, plans.

Seed 002: "The Dreamer never sees JSON." Tool schemas and call outcomes are JSON on the wire;
here they become sentences and ``name: value`` lines, nested names joined with dots.
"""

from __future__ import annotations

from typing import Any

from agents_vm.model.plan import Plan, Step

MAX_RESULT_LINES = 40
MAX_VALUE = 300


def _value(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = str(value)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def _lines(value: Any, prefix: str, out: list[str]) -> None:
    if isinstance(value, dict):
        if not value:
            out.append(f"{prefix}: nothing" if prefix else "nothing")
        for key, item in value.items():
            _lines(item, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, list):
        if not value:
            out.append(f"{prefix}: none")
        for n, item in enumerate(value, start=1):
            _lines(item, f"{prefix} {n}" if prefix else f"item {n}", out)
    else:
        out.append(f"{prefix}: {_value(value)}" if prefix else _value(value))


def words(value: Any) -> str:
    """Any JSON value as ``name: value`` lines (at most ``MAX_RESULT_LINES``)."""
    out: list[str] = []
    _lines(value, "", out)
    if len(out) > MAX_RESULT_LINES:
        out = [*out[:MAX_RESULT_LINES], f"(and {len(out) - MAX_RESULT_LINES} more lines)"]
    return "\n".join(out)


def outcome_words(name: str, outcome: dict[str, Any]) -> str:
    """What became of a call, for the Dreamer."""
    status = str(outcome.get("status", "unknown"))
    head = {
        "executed": f"{name} was carried out",
        "denied": f"{name} was refused by the broker",
        "rejected": f"{name} was rejected by a reviewer",
        "expired": f"{name} waited for a reviewer until it expired",
        "pending_approval": f"{name} is still waiting for a reviewer",
        "invalid_arguments": f"{name} was refused: its values are not right",
        "plan_saved": "The plan was saved",
        "plan_refused": "The plan was refused",
        "error": f"{name} could not be done",
    }.get(status, f"{name}: {status.replace('_', ' ')}")
    if status == "executed" and outcome.get("ok") is False:
        head = f"{name} was attempted but failed"
    details = {k: v for k, v in outcome.items() if k not in ("status", "ok", "call_id")}
    body = words(details) if details else ""
    return f"{head}." + (f"\n{body}" if body else "")


def _schema_words(schema: dict[str, Any]) -> str:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts = []
    for name, spec in props.items():
        if name == "reason":
            continue
        spec = spec if isinstance(spec, dict) else {}
        kind = spec.get("type", "value")
        if isinstance(kind, list):
            kind = " or ".join(str(k) for k in kind)
        extra = []
        if "enum" in spec:
            extra.append("one of " + ", ".join(str(e) for e in spec["enum"]))
        if spec.get("format"):
            extra.append(str(spec["format"]))
        if spec.get("description"):
            extra.append(str(spec["description"]))
        need = "required" if name in required else "optional"
        detail = f" ({'; '.join(extra)})" if extra else ""
        parts.append(f"{name}, a {kind}, {need}{detail}")
    return "; ".join(parts) if parts else "no values"


def tools_words(tools: list[dict[str, Any]]) -> str:
    """Broker tools as sentences: what each does and what it needs."""
    if not tools:
        return "No broker tool is part of this step."
    lines = ["Tools you can use now:"]
    for tool in tools:
        schema = tool.get("input_schema") or {}
        lines.append(
            f"- {tool['tool_id']} ({tool.get('risk_level', 'read')}): "
            f"{tool.get('description', '').strip()} It takes: {_schema_words(schema)}."
        )
    return "\n".join(lines)


def plan_words(plan: Plan, done: list[str], current: Step | None) -> str:
    lines = [f"The plan's goal: {plan.goal}"]
    for step in plan.steps:
        mark = "done" if step.id in done else ("now" if current and step.id == current.id else "")
        after = f", after {', '.join(step.depends_on)}" if step.depends_on else ""
        tools = ", ".join(step.tools) or "no tool"
        lines.append(
            f"- step {step.id}: {step.intent} (using {tools}{after})"
            + (f" [{mark}]" if mark else "")
        )
    return "\n".join(lines)
