"""``mcp`` handlers: a registry tool that forwards to a tool of an upstream MCP server.

The call has been through the whole pipeline by now (schema, Guardian on the arguments,
directives, V-Pol, gate, audit, outbound PII filter). The upstream's answer is read by the
Guardian too, as untrusted text: an answer it would block (an injection riding back in a tool
result) is withheld and the call fails saying why. An upstream that cannot be reached, or
answers an error, is a failed outcome like any handler's.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from brainframe.models import Tool
from brainframe.safety.guardian.core import argument_strings, assess

from ..registry import tool_upstream_checked
from ..upstream_client import UpstreamTimeout, UpstreamUnavailable, upstream_call
from .base import HandlerFailure, HandlerTimeout


def _text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def _strings(text: str, structured: Any) -> list[str]:
    """Every string of the answer, as the Guardian reads a call's arguments: JSON's own quotes
    must not pass an injection off as a quotation."""
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = text
    return argument_strings(parsed) + argument_strings(structured)


def run(*, tool: Tool, arguments: dict[str, Any], call_id: uuid.UUID, timeout: float) -> Any:
    config = tool.handler_config
    name = config.get("upstream", "")
    try:
        # Checked again here: an approved call runs later, and the upstream may have changed.
        upstream, problem = tool_upstream_checked(tool)
    except (UpstreamTimeout, UpstreamUnavailable, MCPError) as exc:
        raise HandlerFailure(f"upstream {name} unreachable: {exc}") from exc
    if upstream is None:
        raise HandlerFailure(f"upstream MCP server {name!r} is not registered or is disabled")
    if problem is not None:
        raise HandlerFailure(f"upstream_tool_changed: {problem}")
    try:
        result = upstream_call(
            upstream,
            config["tool"],
            arguments,
            timeout=timeout,
            meta={"rabs/call_id": str(call_id)},
        )
    except UpstreamTimeout:
        raise HandlerTimeout(f"upstream {name} did not answer within {timeout:g}s") from None
    except UpstreamUnavailable as exc:
        raise HandlerFailure(f"upstream {name} unreachable: {exc}") from exc
    except MCPError as exc:
        raise HandlerFailure(f"upstream {name} refused the call: {exc.message}") from exc
    text = _text(result)
    if result.is_error:
        raise HandlerFailure(f"upstream {name}: {text[:2000] or 'an error without text'}")
    structured = result.structured_content
    verdict = assess("\n".join(_strings(text, structured)), "untrusted")
    if verdict.action == "block":
        raise HandlerFailure(
            f"the answer of upstream {name} was withheld: the Guardian blocks it "
            f"({', '.join(verdict.patterns)})"
        )
    return structured if isinstance(structured, dict) else {"content": text}
