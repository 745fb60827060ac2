"""Outbound PII filter (directive layer 4): text leaving for an external channel passes here
before the handler runs.

For a tool marked ``external_channel`` (e-mail, SMS and the like), every string in the arguments
is scanned; detected PII is replaced by ``<TYPE>`` and each redaction is recorded with the call
(``outbound_findings``), unless the call carries the explicit consent flag
``consent_pii: true``. If the filter itself fails, nothing is sent: the call fails closed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from brainframe.models import Tool
from brainframe.safety.pii.filter import pii_redact

CONSENT_FLAG = "consent_pii"

#: Tools whose recipient the broker works out itself (``channel.reply``), by tool id: the call
#: id → why the recipient may read personal information ("" when the filter applies). Such a
#: tool takes no consent flag from the agent.
ConsentDecider = Callable[[uuid.UUID], str]
CONSENT_DECIDERS: dict[str, ConsentDecider] = {}


def consent_decider_register(tool_id: str, decider: ConsentDecider) -> None:
    CONSENT_DECIDERS[tool_id] = decider


class OutboundFilterUnavailable(Exception):
    pass


@dataclass(frozen=True)
class Outbound:
    arguments: dict[str, Any]
    redactions: list[dict[str, Any]] = field(default_factory=list)
    consented: bool = False


def is_external(tool: Tool) -> bool:
    return bool(tool.external_channel)


def _redact(value: Any, path: str, redactions: list[dict[str, Any]]) -> Any:
    if isinstance(value, str):
        text, findings = pii_redact(value)
        redactions.extend({"path": path, **f.as_dict()} for f in findings)
        return text
    if isinstance(value, dict):
        return {
            k: v if k == CONSENT_FLAG else _redact(v, f"{path}/{k}", redactions)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact(v, f"{path}/{i}", redactions) for i, v in enumerate(value)]
    return value


def prepare_outbound(
    *, tool: Tool, arguments: dict[str, Any], call_id: uuid.UUID | None = None
) -> Outbound:
    if not is_external(tool):
        return Outbound(arguments=arguments)
    decider = CONSENT_DECIDERS.get(tool.tool_id)
    redactions: list[dict[str, Any]] = []
    try:
        if decider is not None:
            if call_id is not None and decider(call_id):
                return Outbound(arguments=arguments, consented=True)
        elif arguments.get(CONSENT_FLAG) is True:
            return Outbound(arguments=arguments, consented=True)
        redacted = _redact(arguments, "", redactions)
    except Exception as exc:  # the filter is our dependency: fail closed
        raise OutboundFilterUnavailable(f"outbound PII filter unavailable: {exc}") from exc
    return Outbound(arguments=redacted, redactions=redactions)
