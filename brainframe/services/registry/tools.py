"""Registry changes staff make to tools (admin actions call these), how a tool is put to a
reviewer, and each tool's name on the MCP face."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

from django.db import transaction

from brainframe.choices import ExecutionMode, default_execution_mode
from brainframe.models import Tool


def tool_set_enabled(*, tools: Iterable[Tool], enabled: bool) -> int:
    """Disable tools, or re-enable them in their risk level's default mode. Returns the count.

    Saves row by row (not a bulk update) so each change lands in the tool's history.
    """
    changed = 0
    with transaction.atomic():
        for tool in tools:
            if enabled and tool.execution_mode == ExecutionMode.DISABLED:
                tool.execution_mode = default_execution_mode(tool.risk_level)
            elif not enabled and tool.execution_mode != ExecutionMode.DISABLED:
                tool.execution_mode = ExecutionMode.DISABLED
            else:
                continue
            tool.save(update_fields=["execution_mode", "updated_at"])
            changed += 1
    return changed


def tool_set_execution_mode(*, tools: Iterable[Tool], mode: str) -> int:
    """Set the execution mode of several tools at once. Returns how many changed."""
    if mode not in ExecutionMode.values:
        raise ValueError(f"unknown execution mode {mode!r}")
    changed = 0
    with transaction.atomic():
        for tool in tools:
            if tool.execution_mode != mode:
                tool.execution_mode = mode
                tool.save(update_fields=["execution_mode", "updated_at"])
                changed += 1
    return changed


_RISK_WORDS = {
    "read": "reads data and changes nothing",
    "write": "changes something in the business",
    "critical": "makes a change that is hard to undo",
}


def reviewer_summary(tool: Tool) -> str:
    """What running ``tool`` does, in a reviewer's words: the registry's reviewer summary, or a
    neutral sentence from its risk level. Never the description, which is written for agents
    (how to call it) and is not a reviewer's business."""
    written = (tool.reviewer_summary or "").strip()
    if written:
        return written
    what = _RISK_WORDS.get(tool.risk_level, "runs as registered")
    return f"{tool.get_category_display()} tool: it {what}; see its arguments below."


def call_summary(*, agent_name: str, tool: Tool, arguments: dict[str, Any]) -> str:
    """One line for a call a reviewer is asked about (approval cards, e-mails, digests)."""
    shown = []
    for key, value in list(arguments.items())[:8]:
        text = json.dumps(value, ensure_ascii=False)
        shown.append(f"{key}={text if len(text) <= 60 else text[:57] + '…'}")
    given = ", ".join(shown) or "no arguments"
    return f"{agent_name} asks to run {tool.tool_id} with {given}. {reviewer_summary(tool)}"


# --- names on the MCP face --------------------------------------------------------------------

#: What model APIs accept as a function name (OpenAI's rule; Anthropic's is the same), and so
#: what every tool's name on the MCP face matches: agent frameworks hand MCP tool names to the
#: model unchanged.
MCP_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MCP_NAME_MAX = 64
_NOT_ALLOWED = re.compile(r"[^a-zA-Z0-9_-]")


def mcp_name_hashed(tool_id: str) -> str:
    """The short form: the plain name cut to 55 characters, then ``_`` and eight hex digits of
    the id's sha256 — the same for the same id on every machine and after every restart."""
    digest = hashlib.sha256(tool_id.encode()).hexdigest()[:8]
    return f"{_NOT_ALLOWED.sub('_', tool_id)[:55]}_{digest}"


def mcp_name_plain(tool_id: str) -> str:
    """A registry id as an MCP name: every character a model API refuses (the dots) becomes
    ``_``; an id longer than 64 characters takes its short form."""
    name = _NOT_ALLOWED.sub("_", tool_id)
    return name if 0 < len(name) <= MCP_NAME_MAX else mcp_name_hashed(tool_id)


def mcp_names(tool_ids: Iterable[str], *, reserved: Iterable[str] = ()) -> dict[str, str]:
    """Each registry id's name on the MCP face. The plain name, unless another id (or one of
    the broker's own tools, ``reserved``) has the same plain name: then every such id takes its
    short form. So a name is unique across the registry, depends only on the ids there are,
    and stays the same across restarts."""
    ids = sorted(set(tool_ids))
    taken: dict[str, int] = {name: 1 for name in reserved}
    for tool_id in ids:
        plain = mcp_name_plain(tool_id)
        taken[plain] = taken.get(plain, 0) + 1
    names = {}
    for tool_id in ids:
        plain = mcp_name_plain(tool_id)
        names[tool_id] = plain if taken[plain] == 1 else mcp_name_hashed(tool_id)
    return names


def mcp_name_clash(tool_id: str) -> str | None:
    """The registry id whose MCP name a new tool ``tool_id`` would share, if any (staff are
    refused such an id in the admin, so names stay plain)."""
    plain = mcp_name_plain(tool_id)
    for other in Tool.objects.exclude(pk=tool_id).values_list("tool_id", flat=True):
        if mcp_name_plain(other) == plain:
            return str(other)
    return None
