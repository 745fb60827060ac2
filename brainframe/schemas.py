"""Validation of the JSON documents staff write in the registry.

Each function returns a list of human-readable problems (empty when valid), so the admin can
show them next to the field and the API can return them with their path.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

from brainframe.models import Tool

_TIMEOUT = {"type": "number", "exclusiveMinimum": 0, "maximum": 300}

#: What ``handler_config`` must look like for each ``handler_type``.
HANDLER_CONFIG_SCHEMAS: dict[str, dict[str, Any]] = {
    Tool.HandlerType.FUNCTION: {
        "type": "object",
        "required": ["callable"],
        "additionalProperties": False,
        "properties": {
            "callable": {"type": "string", "pattern": r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$"},
            "timeout_s": _TIMEOUT,
        },
    },
    Tool.HandlerType.SQL: {
        "type": "object",
        "required": ["query"],
        "additionalProperties": False,
        "properties": {
            # Named placeholders only (%(name)s); values always travel as parameters.
            "query": {"type": "string", "minLength": 1},
            "params": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "timeout_s": _TIMEOUT,
        },
    },
    Tool.HandlerType.API: {
        "type": "object",
        "required": ["url", "method"],
        "additionalProperties": False,
        "properties": {
            "url": {"type": "string", "pattern": r"^https?://[^\s]+$"},
            "method": {"enum": ["GET", "POST", "PUT", "PATCH", "DELETE"]},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
            "timeout_s": _TIMEOUT,
        },
    },
    Tool.HandlerType.SCRIPT: {
        "type": "object",
        "required": ["argv"],
        "additionalProperties": False,
        "properties": {
            "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "cwd": {"type": "string", "pattern": r"^[^/].*$|^$"},
            "timeout_s": _TIMEOUT,
        },
    },
}


def _instance_errors(schema: dict[str, Any], instance: Any) -> list[str]:
    validator = Draft202012Validator(schema)
    problems = []
    for error in sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(part) for part in error.absolute_path)
        problems.append(f"{where or '(root)'}: {error.message}")
    return problems


def json_schema_errors(schema: Any, *, require_object: bool) -> list[str]:
    """Problems that make ``schema`` unusable as a tool's input or output JSON Schema."""
    if not isinstance(schema, dict):
        return ["must be a JSON object (a JSON Schema)"]
    if not schema and not require_object:
        return []  # an empty output schema accepts any output
    try:
        validator_for(schema, default=Draft202012Validator).check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(part) for part in exc.absolute_path)
        return [f"not a valid JSON Schema at {where or '(root)'}: {exc.message}"]
    if require_object and schema.get("type") != "object":
        return ['tool arguments are a JSON object: the schema needs "type": "object"']
    return []


def handler_config_errors(handler_type: str, config: Any) -> list[str]:
    """Problems with ``handler_config`` for the given ``handler_type``."""
    schema = HANDLER_CONFIG_SCHEMAS.get(handler_type)
    if schema is None:
        return [f"unknown handler type {handler_type!r}"]
    problems = _instance_errors(schema, config)
    if not problems and handler_type == Tool.HandlerType.SQL:
        query = config["query"].strip().rstrip(";")
        if ";" in query:
            problems.append("query: one statement only")
        if "{" in query or "%s" in query.replace("%%", ""):
            problems.append("query: use named %(name)s placeholders, never formatting")
    return problems


_CONDITION: dict[str, Any] = {
    "oneOf": [
        {
            "type": "object",
            "required": ["all"],
            "additionalProperties": False,
            "properties": {"all": {"type": "array", "items": {"$ref": "#/$defs/condition"}}},
        },
        {
            "type": "object",
            "required": ["any"],
            "additionalProperties": False,
            "properties": {"any": {"type": "array", "items": {"$ref": "#/$defs/condition"}}},
        },
        {
            "type": "object",
            "required": ["not"],
            "additionalProperties": False,
            "properties": {"not": {"$ref": "#/$defs/condition"}},
        },
        {
            "type": "object",
            "required": ["field", "op"],
            "additionalProperties": False,
            "properties": {
                # "arguments.amount", "agent.agent_id", "tool.risk_level", "context.hour"
                "field": {
                    "type": "string",
                    "pattern": r"^(arguments|agent|tool|context)(\.[A-Za-z0-9_]+)*$",
                },
                "op": {
                    "enum": [
                        "eq",
                        "ne",
                        "gt",
                        "gte",
                        "lt",
                        "lte",
                        "in",
                        "not_in",
                        "contains",
                        "matches",
                        "exists",
                        "missing",
                    ]
                },
                "value": {},
            },
        },
    ]
}

#: The V-Pol rule language: an ordered list; the first rule whose ``when`` holds decides.
VPOL_RULES_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "array",
    "items": {
        "type": "object",
        "required": ["id", "when", "action"],
        "additionalProperties": False,
        "properties": {
            "id": {"type": "string", "pattern": r"^[a-z0-9][a-z0-9_\-]*$"},
            "when": {"$ref": "#/$defs/condition"},
            "action": {"enum": ["allow", "review", "deny"]},
            "reason": {"type": "string"},
        },
    },
    "$defs": {"condition": _CONDITION},
}


def vpol_rules_errors(
    rules: Any, *, actions: tuple[str, ...] = ("allow", "review", "deny")
) -> list[str]:
    """Problems with a V-Pol's ``rules`` document (see ``VPOL_RULES_SCHEMA``), or with the
    predicates of a directive or constitution rule (the same language, other actions)."""
    schema = {
        **VPOL_RULES_SCHEMA,
        "items": {
            **VPOL_RULES_SCHEMA["items"],
            "properties": {
                **VPOL_RULES_SCHEMA["items"]["properties"],
                "action": {"enum": list(actions)},
            },
        },
    }
    problems = _instance_errors(schema, rules)
    if not problems:
        ids = [rule["id"] for rule in rules]
        duplicates = sorted({rule_id for rule_id in ids if ids.count(rule_id) > 1})
        if duplicates:
            problems.append(f"rule ids must be unique: {', '.join(duplicates)}")
    return problems
