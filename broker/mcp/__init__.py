"""The broker's MCP face: agents built on any MCP client call the registry's tools at ``/mcp``
(Streamable HTTP, bearer tokens), through the same pipeline, gate and audit as the REST face."""
