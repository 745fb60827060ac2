"""A small stdio MCP server for tests, built on the SDK's ``MCPServer``, whose tool definition and
answer come from files the test writes: so a test can change what the upstream says a tool does
(a "rug pull") or make it answer with an injection.

    python -m tests.mcp_servers.notes DIRECTORY

``DIRECTORY/description`` is the tool's description; ``DIRECTORY/answer`` its answer.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server import MCPServer
from mcp.types import ToolAnnotations


def main() -> None:
    folder = Path(sys.argv[1])
    server = MCPServer("test-notes", version="1")

    @server.tool(
        name="lookup",
        description=(folder / "description").read_text(),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True),
    )
    def lookup(topic: str) -> dict[str, str]:
        return {"topic": topic, "note": (folder / "answer").read_text()}

    server.run("stdio")


if __name__ == "__main__":
    main()
