"""MCP results shared by the face's tools: JSON text, and a refusal a model can read."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from ..errors import BrokerRefusal


def json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, indent=1)


def refusal_result(refusal: BrokerRefusal) -> types.CallToolResult:
    """A request the broker refused before it became a call (an unknown task, a bad _meta)."""
    detail = {"status": "refused", "code": refusal.code, "reason": refusal.detail}
    if refusal.field:
        detail["field"] = refusal.field
    return types.CallToolResult(
        content=[types.TextContent(text=f"refused ({refusal.code}): {refusal.detail}")],
        structured_content=detail,
        is_error=True,
    )
