"""Outbound seam (directive layer 4): text leaving for an external channel passes here before
the handler runs. The PII filter plugs in at ``prepare_outbound``; until then arguments pass
unchanged and nothing is flagged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from brainframe.models import Tool


@dataclass(frozen=True)
class Outbound:
    arguments: dict[str, Any]
    redactions: list[dict[str, Any]] = field(default_factory=list)


def is_external(tool: Tool) -> bool:
    return bool(tool.external_channel)


def prepare_outbound(*, tool: Tool, arguments: dict[str, Any]) -> Outbound:
    return Outbound(arguments=arguments)
