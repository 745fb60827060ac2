"""Tool names on the MCP face: every name matches ``^[a-zA-Z0-9_-]{1,64}$`` (what model APIs
accept as a function name, since agent frameworks hand MCP tool names to the model unchanged).

A registry id's name is ``brainframe.services.registry.tools.mcp_names``: its dots as ``_``
(``roster.shift.read`` → ``roster_shift_read``), the short form (55 characters, ``_``, eight
hex digits of its sha256) when it is longer than 64 characters or shares its plain name with
another id or with one of the broker's own tools. The registry id is the tool's ``title`` and
its ``_meta["rabs/tool_id"]``. A call may name a tool either way.
"""

from __future__ import annotations

import base64
import binascii

import mcp_types as types

from brainframe.services.registry.tools import mcp_name_plain

from ..registry import registry_remembered, registry_snapshot

#: The ``_meta`` key of a listed tool that holds its registry id (or the broker's own tool's
#: dotted id).
META_TOOL_ID = "rabs/tool_id"


#: ``_meta`` key of the broker's own tools (follow-ups, discovery, hooks, the ledger): true.
META_BUILTIN = "rabs/builtin"


def renamed(tool: types.Tool, tool_id: str, name: str) -> types.Tool:
    """The broker's own ``tool`` under its MCP ``name``, its id as title and in ``_meta``."""
    annotations = tool.annotations
    if annotations is not None:
        annotations = annotations.model_copy(update={"title": tool_id})
    return tool.model_copy(
        update={
            "name": name,
            "title": tool_id,
            "meta": {**(tool.meta or {}), META_TOOL_ID: tool_id, META_BUILTIN: True},
            "annotations": annotations,
        }
    )


class Builtins:
    """The broker's own tools (follow-ups, discovery, hooks, the ledger) under MCP names."""

    def __init__(self, tools: list[types.Tool]) -> None:
        self.ids = {mcp_name_plain(t.name): t.name for t in tools}
        self.tools = [renamed(t, t.name, mcp_name_plain(t.name)) for t in tools]
        self.reserved = frozenset(self.ids)

    def resolve(self, name: str) -> str | None:
        """The dotted id of the broker's own tool called ``name`` (either name), or None."""
        if name in self.ids:
            return self.ids[name]
        return name if name in self.ids.values() else None


def registry_names(
    reserved: frozenset[str], *, current: bool
) -> tuple[dict[str, str], dict[str, str]]:
    """(registry id → MCP name, MCP name → registry id): from this process's registry
    snapshot as it is, or (``current``) as of the registry's generation now."""
    snapshot = (None if current else registry_remembered()) or registry_snapshot()
    return snapshot.mcp_names(reserved)


def registry_id(name: str, reserved: frozenset[str]) -> str:
    """The registry id a ``tools/call`` names: by its MCP name or by the id itself, else the
    name as given (nothing the registry knows: the pipeline refuses it as any unknown tool).
    Read from the process's snapshot as it is (no query: the decision's statement checks the
    snapshot's generation); a name it does not know is looked up in the current one (a tool
    added a moment ago)."""
    remembered = registry_remembered()
    for snapshot in (remembered, None) if remembered is not None else (None,):
        by_id, by_name = (snapshot or registry_snapshot()).mcp_names(reserved)
        found = by_name.get(name)
        if found is not None:
            return found
        if name in by_id:
            return name
    return name


# --- pagination -------------------------------------------------------------------------------


class BadCursor(Exception):
    pass


def cursor_encode(after: str) -> str:
    return base64.urlsafe_b64encode(after.encode()).decode().rstrip("=")


def page(
    tools: list[types.Tool], cursor: str | None, size: int
) -> tuple[list[types.Tool], str | None]:
    """One page of ``tools`` (sorted by name) after ``cursor`` (the last name of the page
    before, opaque to the client), and the cursor of the next page (None: the last page).
    Keyed by name, so a tool added or removed between pages moves no other tool across the
    page boundary."""
    ordered = sorted(tools, key=lambda t: t.name)
    if cursor:
        try:
            after = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise BadCursor(cursor) from None
        if not after:
            raise BadCursor(cursor)
        ordered = [t for t in ordered if t.name > after]
    shown = ordered[:size]
    more = len(ordered) > size
    return shown, (cursor_encode(shown[-1].name) if more and shown else None)
