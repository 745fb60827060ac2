"""JSON Schema validation on the hot path: the arguments of every call, the output of every
handler. Validators are compiled once per distinct schema."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator, FormatChecker

Validators = tuple[jsonschema_rs.Validator, Draft202012Validator]


@lru_cache(maxsize=2048)
def _validators(schema_json: str) -> Validators:
    """(fast check, reference validator) for one JSON Schema (its canonical JSON text).

    The compiled (Rust) validator answers "valid?" in microseconds and checks every format it
    knows; only when it says no does the reference ``jsonschema`` validator run, and its answer
    (with every error, path and message) is the one that counts.
    """
    schema = json.loads(schema_json)
    fast = jsonschema_rs.Draft202012Validator(schema, validate_formats=True, offline=True)
    return fast, Draft202012Validator(schema, format_checker=FormatChecker())


def schema_validators(schema: Any) -> Validators:
    """The validators of a schema, compiled once per distinct schema."""
    return _validators(json.dumps(schema, sort_keys=True))


def schema_validators_by_key(key: str) -> Validators:
    """The validators of a schema whose canonical JSON text the caller already has."""
    return _validators(key)
