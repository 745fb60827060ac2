"""Validation of the JSON documents staff write in the registry (the condition language of V-Pols,
directives and constitution rules is in ``brainframe.safety.policy.conditions``).

Each function returns a list of human-readable problems (empty when valid), so the admin can
show them next to the field and the API can return them with their path.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

from brainframe.models import Tool
from brainframe.safety.policy.conditions import document_errors

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
            # For the read replica's callable (rabs.replica_query, docs/agents.md): its named
            # queries (values bound by name), row cap and statement timeout.
            "queries": {
                "type": "object",
                "propertyNames": {"pattern": "^[a-z][a-z0-9_]{0,62}$"},
                "additionalProperties": {
                    "type": "object",
                    "required": ["sql"],
                    "additionalProperties": False,
                    "properties": {
                        "sql": {"type": "string", "minLength": 1},
                        "params": {"type": "array", "items": {"type": "string"}},
                        "description": {"type": "string"},
                    },
                },
            },
            "row_cap": {"type": "integer", "minimum": 1, "maximum": 10000},
            "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 60000},
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
    Tool.HandlerType.MCP: {
        "type": "object",
        "required": ["upstream", "tool"],
        "additionalProperties": False,
        "properties": {
            "upstream": {"type": "string", "pattern": r"^[-a-zA-Z0-9_]+$"},
            "tool": {"type": "string", "minLength": 1, "maxLength": 128},
            # sha256 of the definition imported (set by the import; a change upstream is flagged).
            "definition_sha256": {"type": "string", "pattern": r"^[0-9a-f]{64}$"},
            "timeout_s": _TIMEOUT,
        },
    },
    Tool.HandlerType.A2A: {
        "type": "object",
        "required": ["card_url"],
        "additionalProperties": False,
        "properties": {
            # Where the external agent's card is (its interfaces, skills, security schemes).
            "card_url": {"type": "string", "pattern": r"^https?://", "maxLength": 2000},
            # For each security scheme the card names: the environment variable holding this
            # deployment's credential for it (never the credential itself).
            "credential_env": {
                "type": "object",
                "additionalProperties": {"type": "string", "pattern": r"^[A-Z_][A-Z0-9_]*$"},
            },
            # The card's skills as last read (set by the registration; shown in the admin).
            "skills": {"type": "array", "items": {"type": "object"}},
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
            # The sandbox's limits (broker.handlers.sandbox.LIMIT_DEFAULTS, LIMIT_CAPS).
            "limits": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "memory_mb": {"type": "integer", "minimum": 64, "maximum": 8192},
                    "cpu_s": {"type": "integer", "minimum": 1, "maximum": 600},
                    "nofile": {"type": "integer", "minimum": 16, "maximum": 1024},
                    "fsize_mb": {"type": "integer", "minimum": 1, "maximum": 512},
                    "nproc": {"type": "integer", "minimum": 1, "maximum": 256},
                    "workspace_mb": {"type": "integer", "minimum": 1, "maximum": 1024},
                },
            },
            # The workspace's files become deliverables of the calling agent.
            "keep_outputs": {"type": "boolean"},
            # Network access through the call's own proxy (broker.handlers.egress): these hosts
            # (exact or "*.suffix") on these ports only; none without it.
            "egress": {
                "type": "object",
                "required": ["allow"],
                "additionalProperties": False,
                "properties": {
                    "allow": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "string",
                            "pattern": r"^(\*\.)?[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$",
                        },
                    },
                    "ports": {
                        "type": "array",
                        "minItems": 1,
                        "items": {"type": "integer", "minimum": 1, "maximum": 65535},
                    },
                },
            },
        },
    },
}


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
    problems = document_errors(schema, config)
    if not problems and handler_type == Tool.HandlerType.SQL:
        problems += _statement_problems("query", config["query"])
    if not problems and handler_type == Tool.HandlerType.FUNCTION:
        for name, named in (config.get("queries") or {}).items():
            problems += _statement_problems(f"queries.{name}.sql", named["sql"])
    return problems


def _statement_problems(where: str, text: str) -> list[str]:
    query = text.strip().rstrip(";")
    problems = []
    if ";" in query:
        problems.append(f"{where}: one statement only")
    if "{" in query or "%s" in query.replace("%%", ""):
        problems.append(f"{where}: use named %(name)s placeholders, never formatting")
    return problems
