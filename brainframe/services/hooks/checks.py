"""What a hook may be: its definition checked, field by field (``HookError`` names the field
at fault), and which hooks policy lets go live without staff review."""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from django.conf import settings
from jsonschema import Draft202012Validator

from brainframe.events import (
    EVENT_FAMILIES,
    EVENT_TYPES,
)
from brainframe.models import (
    Agent,
    Hook,
)
from brainframe.safety.policy.conditions import _CONDITION
from brainframe.selectors import tools_for_agent

EFFECT_TYPES = ("wake", "message", "invoke")
MAX_EFFECTS = 5


class HookError(Exception):
    def __init__(self, code: str, detail: str, *, field: str | None = None, status: int = 400):
        super().__init__(detail)
        self.code, self.detail, self.field, self.status = code, detail, field, status


# --- definitions ------------------------------------------------------------------------------

#: The condition language of V-Pols, over ``event.*`` (name, family, agent_id, subject,
#: payload.…) and ``origin.*`` (an inbound event's text, type, platform, metadata.…).
_HOOK_CONDITION = copy.deepcopy(_CONDITION)
_HOOK_CONDITION["oneOf"][3]["properties"]["field"]["pattern"] = (
    r"^(event|origin)(\.[A-Za-z0-9_]+)*$"
)
HOOK_CONDITION_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$ref": "#/$defs/condition",
    "$defs": {"condition": _HOOK_CONDITION},
}
_condition_validator = Draft202012Validator(HOOK_CONDITION_SCHEMA)

DEFINITION_FIELDS = (
    "name",
    "description",
    "kind",
    "events",
    "condition",
    "prompt",
    "model",
    "schedule",
    "timezone",
    "effects",
    "max_fires_per_hour",
)


def _listens_to(name: str) -> bool:
    return name in EVENT_TYPES or name in EVENT_FAMILIES


def hook_definition_check(agent: Agent, definition: dict[str, Any]) -> dict[str, Any]:
    """The definition, checked (HookError names the field at fault), with defaults filled."""
    unknown = sorted(set(definition) - set(DEFINITION_FIELDS))
    if unknown:
        raise HookError("unknown_field", f"no such field: {', '.join(unknown)}", field=unknown[0])
    d: dict[str, Any] = {
        "description": "",
        "events": [],
        "condition": None,
        "prompt": "",
        "model": "",
        "schedule": "",
        "timezone": settings.TIME_ZONE,
        "max_fires_per_hour": 30,
        **definition,
    }
    name = d.get("name")
    if not isinstance(name, str) or not 1 <= len(name.strip()) <= 120:
        raise HookError("invalid_name", "a name of 1 to 120 characters", field="name")
    d["name"] = name.strip()
    if d.get("kind") not in Hook.Kind.values:
        raise HookError("invalid_kind", f"kind is one of {Hook.Kind.values}", field="kind")
    kind = d["kind"]
    if kind == Hook.Kind.SCHEDULED:
        if d["events"]:
            raise HookError(
                "invalid_events", "a scheduled hook listens to no event", field="events"
            )
        try:
            zone = ZoneInfo(str(d["timezone"]))
        except (ZoneInfoNotFoundError, ValueError):
            raise HookError("invalid_timezone", "an IANA time zone", field="timezone") from None
        if not isinstance(d["schedule"], str) or not d["schedule"].strip():
            raise HookError("schedule_required", "a cron expression", field="schedule")
        try:
            next(CronSim(d["schedule"], datetime.now(zone)))
        except (CronSimError, StopIteration) as exc:
            raise HookError(
                "invalid_schedule", f"not a cron expression: {exc}", field="schedule"
            ) from None
    else:
        if d["schedule"]:
            raise HookError("invalid_schedule", "only scheduled hooks have one", field="schedule")
        events = d["events"]
        if (
            not isinstance(events, list)
            or not events
            or not all(isinstance(e, str) for e in events)
        ):
            raise HookError(
                "events_required", "the events or families it listens to", field="events"
            )
        strangers = [e for e in events if not _listens_to(e)]
        if strangers:
            raise HookError(
                "unknown_event", f"no such event or family: {', '.join(strangers)}", field="events"
            )
    needs_condition = kind in (Hook.Kind.DETERMINISTIC, Hook.Kind.HYBRID)
    if needs_condition and d["condition"] is None:
        raise HookError("condition_required", f"a {kind} hook needs a condition", field="condition")
    if d["condition"] is not None:
        errors = sorted(_condition_validator.iter_errors(d["condition"]), key=lambda e: e.path)
        if errors:
            where = "/".join(str(p) for p in errors[0].absolute_path)
            raise HookError(
                "invalid_condition",
                f"{errors[0].message}" + (f" (at {where})" if where else ""),
                field="condition",
            )
    needs_prompt = kind in (Hook.Kind.LLM, Hook.Kind.HYBRID)
    if needs_prompt and not str(d["prompt"]).strip():
        raise HookError("prompt_required", f"a {kind} hook needs a prompt", field="prompt")
    if not needs_prompt and d["prompt"]:
        raise HookError("invalid_prompt", f"a {kind} hook has no prompt", field="prompt")
    if not isinstance(d["max_fires_per_hour"], int) or not 1 <= d["max_fires_per_hour"] <= 600:
        raise HookError("invalid_rate", "1 to 600 firings an hour", field="max_fires_per_hour")
    d["effects"] = _effects_check(agent, d.get("effects"))
    return d


def _effects_check(agent: Agent, effects: Any) -> list[dict[str, Any]]:
    if not isinstance(effects, list) or not 1 <= len(effects) <= MAX_EFFECTS:
        raise HookError("effects_required", f"1 to {MAX_EFFECTS} effects", field="effects")
    checked = []
    for i, effect in enumerate(effects):
        where = f"effects[{i}]"
        if not isinstance(effect, dict) or effect.get("type") not in EFFECT_TYPES:
            raise HookError("invalid_effect", f"type is one of {EFFECT_TYPES}", field=where)
        kind = effect["type"]
        allowed = {
            "wake": {"type", "title", "priority", "instructions"},
            "message": {"type", "text"},
            "invoke": {"type", "tool_id", "arguments", "reason"},
        }[kind]
        extra = sorted(set(effect) - allowed)
        if extra:
            raise HookError("invalid_effect", f"{kind} takes no {', '.join(extra)}", field=where)
        if kind == "wake":
            title = effect.get("title")
            if not isinstance(title, str) or not title.strip():
                raise HookError("invalid_effect", "wake needs a task title", field=f"{where}.title")
            priority = effect.get("priority", 50)
            if not isinstance(priority, int) or not 0 <= priority <= 100:
                raise HookError("invalid_effect", "priority 0 to 100", field=f"{where}.priority")
        elif kind == "message":
            text = effect.get("text")
            if not isinstance(text, str) or not 1 <= len(text.strip()) <= 4000:
                raise HookError(
                    "invalid_effect", "message text of 1 to 4000 characters", field=f"{where}.text"
                )
        else:
            # The broker decides every invoked call; a tool the agent may not use is refused
            # here already, so a hook is never approved for what it cannot do.
            if not tools_for_agent(agent).filter(tool_id=str(effect.get("tool_id"))).exists():
                raise HookError(
                    "tool_not_allowed",
                    f"{agent.agent_id} may not call {effect.get('tool_id')!r}",
                    field=f"{where}.tool_id",
                )
            effect = {**effect, "arguments": effect.get("arguments") or {}}
            if not isinstance(effect["arguments"], dict):
                raise HookError(
                    "invalid_effect", "arguments is an object", field=f"{where}.arguments"
                )
            if not str(effect.get("reason", "")).strip():
                raise HookError(
                    "invalid_effect", "an invoked call needs a reason", field=f"{where}.reason"
                )
        checked.append(effect)
    return checked


def auto_approved(definition: dict[str, Any]) -> bool:
    kinds = set(settings.RABS_HOOKS_AUTO_APPROVE)
    return definition["kind"] in kinds and all(
        e["type"] in ("wake", "message") for e in definition["effects"]
    )
