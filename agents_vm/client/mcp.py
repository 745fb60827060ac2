"""Tool calls over the broker's MCP face (``transport = "mcp"``): the official ``mcp`` client with
the agent's bearer token, one session kept open on a thread of its own, answering with the
bodies the signed REST transport reads (``agents_vm.client.sdk.BrokerClient`` turns both into
the same ``Outcome`` kinds), so the cognitive loop does not know which one it runs on.

    tools = MCPTools("http://10.0.2.2:8000", token=TOKEN)
    body = tools.call_tool("roster.shift.read", {...}, reason="check Monday's cover")

Imports nothing from the control plane: it speaks only MCP over HTTP, as any agent framework.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Coroutine
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


class MCPRefusal(Exception):
    """The broker refused the request before it became a call (``status`` as REST's)."""

    def __init__(self, status: int, code: str, detail: str, body: dict[str, Any]) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status, self.code, self.detail, self.body = status, code, detail, body


#: ``_meta`` keys the broker reads on a ``tools/call`` (docs/mcp.md).
META = {
    "reason": "rabs/reason",
    "confidence": "rabs/confidence",
    "task_id": "rabs/task_id",
    "parent_r_tag": "rabs/parent_r_tag",
    "origin": "rabs/origin",
    "idempotency_key": "rabs/idempotency_key",
}
TAGS = ("call_id", "r_tag", "o_tag", "vpol")


class MCPTools:
    """The agent's tool calls through ``<base_url>/mcp``."""

    def __init__(self, base_url: str, *, token: str, timeout: float = 60.0) -> None:
        self.url = base_url.rstrip("/") + "/mcp"
        self.token = token
        self.timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="mcp-client", daemon=True
        )
        self._thread.start()
        self._client: Client | None = None
        self._closing: asyncio.Event | None = None
        self._session: asyncio.Future[None] | None = None

    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(self.timeout + 30)

    async def _connected(self) -> Client:
        if self._client is not None and self._session is not None and not self._session.done():
            return self._client
        opened: asyncio.Future[Client] = self._loop.create_future()
        self._closing = asyncio.Event()
        self._session = self._loop.create_task(self._hold_open(opened, self._closing))
        self._client = await opened
        return self._client

    async def _hold_open(self, opened: asyncio.Future[Client], closing: asyncio.Event) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        try:
            async with httpx2.AsyncClient(headers=headers, timeout=self.timeout) as http:
                transport = streamable_http_client(self.url, http_client=http)
                async with Client(transport, mode="legacy") as client:
                    opened.set_result(client)
                    await closing.wait()
        except BaseException as exc:
            if not opened.done():
                opened.set_exception(exc)
            raise

    async def _call(self, name: str, arguments: dict[str, Any], meta: dict[str, Any]) -> Any:
        client = await self._connected()
        return await client.call_tool(name, arguments, meta=meta)  # type: ignore[arg-type]

    # --- what BrokerClient asks of a transport ---------------------------------------------------

    def tools(self) -> list[dict[str, Any]]:
        """The agent's registry tools as the REST face lists them (the broker's own follow-up
        tools left out: this client follows calls itself)."""

        async def listed() -> list[types.Tool]:
            client = await self._connected()
            tools, cursor = [], None
            while True:
                page = await client.list_tools(cursor=cursor)
                tools += page.tools
                cursor = page.next_cursor
                if not cursor:
                    return tools

        return [
            {
                "tool_id": (tool.meta or {}).get("rabs/tool_id", tool.name),
                "mcp_name": tool.name,
                "description": tool.description or "",
                "input_schema": tool.input_schema,
                "output_schema": tool.output_schema or {},
            }
            for tool in self._run(listed())
            if not (tool.meta or {}).get("rabs/builtin")
        ]

    def call_tool(self, tool_id: str, arguments: dict[str, Any], **fields: Any) -> dict[str, Any]:
        meta = {META[k]: v for k, v in fields.items() if v is not None and k in META}
        try:
            result: types.CallToolResult = self._run(self._call(tool_id, arguments, meta))
        except MCPError as error:  # an unknown tool, or not this agent's
            code = "unknown_tool" if "Unknown tool" in str(error) else "mcp_error"
            raise MCPRefusal(404, code, str(error), {}) from None
        return body_of(result)

    def call_status(self, call_id: str) -> dict[str, Any]:
        async def read() -> types.ReadResourceResult:
            client = await self._connected()
            return await client.read_resource(f"rabs://calls/{call_id}")

        try:
            found = self._run(read())
        except MCPError as error:
            raise MCPRefusal(404, "not_found", str(error), {}) from None
        body: dict[str, Any] = json.loads(getattr(found.contents[0], "text", "{}"))
        return body

    def close(self) -> None:
        if self._closing is not None:
            self._loop.call_soon_threadsafe(self._closing.set)
            if self._session is not None:
                future = asyncio.run_coroutine_threadsafe(_settled(self._session), self._loop)
                future.result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


async def _settled(task: asyncio.Future[None]) -> None:
    await asyncio.wait([task], timeout=5)


def body_of(result: types.CallToolResult) -> dict[str, Any]:
    """An MCP tool result as the body REST answers (docs/mcp.md, the outcomes table); the tags
    come from the result's ``_meta``."""
    meta = result.meta or {}
    tags: dict[str, Any] = {key: meta.get(f"rabs/{key}") for key in TAGS}
    structured = result.structured_content or {}
    if not result.is_error:
        text = result.content[0].text if result.content else "null"  # type: ignore[union-attr]
        try:
            value = json.loads(text)
        except ValueError:
            value = text
        return {**tags, "status": "executed", "outcome": "succeeded", "result": value}
    status = structured.get("status")
    if status == "failed":
        return {
            **tags,
            "status": "executed",
            "outcome": str(structured.get("outcome")),
            "error": str(structured.get("error")),
        }
    if status == "refused":
        raise MCPRefusal(
            400, str(structured.get("code")), str(structured.get("reason")), structured
        )
    if status == "invalid_arguments":
        return {
            **tags,
            "status": "invalid",
            "code": str(structured.get("code") or "invalid_arguments"),
            "errors": list(structured.get("errors") or []),
        }
    body = {**structured, **{k: v for k, v in tags.items() if v is not None}}
    if status in ("rejected", "denied"):
        body.setdefault("rejection_reason", structured.get("reason"))
        body.setdefault("detail", structured.get("reason"))
    return body
