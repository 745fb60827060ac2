"""What the audit hashes and how: the canonical JSON of a row, its content, row and outcome
hashes (see the package docstring for the chain)."""

from __future__ import annotations

import hashlib
from typing import Any

from brainframe.canonical import canonical_json as _canonical_json

GENESIS_HASH = "0" * 64

HASHED_FIELDS = (
    "id",
    "agent_id",
    "requested_tool_id",
    "tool_id",
    "task_id",
    "r_tag_id",
    "o_tag_id",
    "vpol_id",
    "input",
    "decision",
    "decision_code",
    "decision_detail",
    "decision_errors",
    "threat_assessment",
    "idempotency_key",
    "request_hash",
    "seq",
    "prev_hash",
    "timestamp",
)
# Scheme 2: the content the application hashes; seq and prev_hash enter in the database.
CONTENT_FIELDS_2 = (*(f for f in HASHED_FIELDS if f not in ("seq", "prev_hash")), "hash_scheme")
# Scheme 3: and the face the call came in by (REST, MCP, A2A…); the outcome is sealed to the
# row's content hash rather than its row hash, so a call whose outcome is known before it is
# recorded (a read without side effects) is written whole in one statement.
CONTENT_FIELDS = (*CONTENT_FIELDS_2, "face")
CONTENT_FIELDS_BY_SCHEME = {2: CONTENT_FIELDS_2, 3: CONTENT_FIELDS}
HASH_SCHEME = 3
OUTCOME_FIELDS = (
    "outcome",
    "output",
    "error",
    "duration_ms",
    "executed_at",
    "executed_arguments",
    "outbound_findings",
)


def canonical_json(value: Any, *, strict: bool = True) -> bytes:
    """The system's canonical JSON with the audit's ``default`` (dates as ISO 8601): strict,
    as ``brainframe.canonical``'s; ``strict=False`` only for fingerprints of what is not stored."""
    return _canonical_json(value, strict=strict, default=json_default)


def json_default(value: Any) -> str:
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    return str(value)


def compute_content_hash(values: dict[str, Any]) -> str:
    """sha256 of the row's recorded content, by its ``hash_scheme`` (2 or 3)."""
    fields = CONTENT_FIELDS_BY_SCHEME[values.get("hash_scheme", HASH_SCHEME)]
    return hashlib.sha256(canonical_json({k: values[k] for k in fields})).hexdigest()


def compute_row_hash(values: dict[str, Any]) -> str:
    """The row hash of a tool_calls row, by its ``hash_scheme``."""
    if values.get("hash_scheme", 1) == 1:
        return hashlib.sha256(
            canonical_json({k: values[k] for k in HASHED_FIELDS}, strict=False)
        ).hexdigest()
    link = f"{values['prev_hash']}:{values['seq']}:{compute_content_hash(values)}"
    return hashlib.sha256(link.encode()).hexdigest()


def compute_outcome_hash(anchor: str, values: dict[str, Any]) -> str:
    """sha256(anchor + canonical outcome); the anchor is the row hash (schemes 1, 2) or the
    content hash (scheme 3): see ``outcome_anchor``."""
    payload = anchor.encode() + canonical_json({k: values[k] for k in OUTCOME_FIELDS})
    return hashlib.sha256(payload).hexdigest()


def outcome_anchor(values: dict[str, Any]) -> str:
    """What a row's outcome hash is sealed to, by its hash scheme."""
    if values.get("hash_scheme", 1) < 3:
        return str(values["row_hash"])
    return compute_content_hash(values)


def arguments_hash(arguments: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(arguments, strict=False)).hexdigest()
