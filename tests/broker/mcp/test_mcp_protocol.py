"""What MCP clients expect of a gateway, over real HTTP with the official ``mcp`` client: tool
names a model API accepts (calls by either name), holds that fit a client's patience (progress
when asked for), the logging capability, a session's notification stream (tools/list_changed,
approvals as log entries and resource updates), and tools/list pagination."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from django.contrib.auth.models import Group
from django.db import connection
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from brainframe.models import Agent, ApprovalRequest, Tool, ToolCall
from brainframe.services.access.credentials import agent_token_issue
from brainframe.services.registry.tools import mcp_name_hashed, mcp_names, tool_set_enabled
from brainframe.services.seed import seed_brainframe
from broker.mcp import names
from broker.services.approvals import approval_decide
from tests import factories as f
from tests.conftest import MCP_HOLD as HOLD

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

BOOK = {
    "vehicle_id": "hiace-2",
    "driver_id": "ST-031",
    "start": "2026-03-02T09:00:00+10:00",
    "end": "2026-03-02T15:00:00+10:00",
    "purpose": "Community outing",
    "passengers": 3,
}
LONG_ID = "reports.participants.monthly_summary_for_every_funding_source_and_every_region_of_qld"


@pytest.fixture
def world(transactional_db: None) -> dict[str, Any]:
    seed_brainframe()
    henry = Agent.objects.get(agent_id="henry")
    reviewer = f.UserFactory(username="alice", email="alice@rabs.test")
    reviewer.groups.add(Group.objects.get(name="reviewers"))
    for tool_id in (LONG_ID, "fleet.check_in", "fleet_check.in"):
        f.ToolFactory(
            tool_id=tool_id,
            risk_level="read",
            execution_mode="auto",
            agent_access=["henry"],
            input_schema={"type": "object"},
            output_schema={},
        )
    return {
        "henry": henry,
        "reviewer": reviewer,
        "token": agent_token_issue(agent=henry),
        "reggie_token": agent_token_issue(agent=Agent.objects.get(agent_id="reggie")),
    }


@asynccontextmanager
async def connect(url: str, token: str, **options: Any) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    transport = streamable_http_client(f"{url}/mcp", http_client=http)
    async with Client(transport, mode="legacy", **options) as client:
        yield client


def _approve_when_pending(reviewer: Any, *, after: float = 0.0, action: str = "approve") -> None:
    """A reviewer on a thread of its own (its database connection goes back to the pool)."""
    deadline = time.monotonic() + 20
    time.sleep(after)
    try:
        while time.monotonic() < deadline:
            approval = ApprovalRequest.objects.filter(status="pending", agent_id="henry").first()
            if approval is not None:
                approval_decide(
                    approval_id=approval.pk, reviewer=reviewer, action=action, reason="not today"
                )
                return
            time.sleep(0.1)
    finally:
        connection.close()


def _disable(tool_id: str) -> None:
    try:
        tool_set_enabled(tools=Tool.objects.filter(pk=tool_id), enabled=False)
    finally:
        connection.close()


def test_every_name_is_one_a_model_api_accepts_and_either_name_calls(
    mcp_url: str, world: dict[str, Any]
) -> None:
    async def run() -> tuple[dict[str, types.Tool], list[types.CallToolResult]]:
        async with connect(mcp_url, world["token"]) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            called = [
                await client.call_tool(name, {})
                for name in (mcp_name_hashed("fleet.check_in"), "fleet.check_in")
            ]
            with pytest.raises(MCPError, match="Unknown tool"):  # ambiguous: neither tool
                await client.call_tool("fleet_check_in", {})
            return listed, called

    listed, _ = asyncio.run(run())
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name) for name in listed)
    by_id = {t.title: t.name for t in listed.values()}
    assert len(by_id) == len(listed)  # unique
    assert by_id["roster.shift.read"] == "roster_shift_read"
    assert by_id["rabs.approval.wait"] == "rabs_approval_wait"
    # Too long, and two ids with one plain name: each a stable short form.
    assert by_id[LONG_ID] == mcp_name_hashed(LONG_ID) and len(by_id[LONG_ID]) == 64
    assert by_id["fleet.check_in"] == mcp_name_hashed("fleet.check_in") != "fleet_check_in"
    assert by_id["fleet_check.in"] == mcp_name_hashed("fleet_check.in")
    assert listed[by_id[LONG_ID]].meta == {"rabs/tool_id": LONG_ID}
    # The same names after a restart: they depend on the registry's ids only.
    assert mcp_names(Tool.objects.values_list("tool_id", flat=True))[LONG_ID] == by_id[LONG_ID]
    # The short form and the registry id reach the tool; the ambiguous plain name reaches none.
    called = list(
        ToolCall.objects.filter(agent_id="henry").values_list("requested_tool_id", flat=True)
    )
    assert called.count("fleet.check_in") == 2 and "fleet_check.in" not in called


def test_a_held_call_answers_pending_within_a_clients_patience(
    mcp_url: str, world: dict[str, Any]
) -> None:
    async def call(meta: dict[str, Any] | None) -> tuple[types.CallToolResult, float]:
        async with connect(mcp_url, world["token"]) as client:
            started = time.monotonic()
            result = await client.call_tool("transport_vehicle_book", BOOK, meta=meta)
            return result, time.monotonic() - started

    result, took = asyncio.run(call(None))
    assert result.structured_content["status"] == "pending_approval"
    assert HOLD - 0.5 <= took < HOLD + 1.5 and took < 5  # the default hold, under 5 s
    assert "rabs_approval_wait" in result.structured_content["follow_up"]
    result, took = asyncio.run(call({"rabs/hold_s": 0}))
    assert result.structured_content["status"] == "pending_approval" and took < 1.5
    refused, _ = asyncio.run(call({"rabs/hold_s": 10_000}))
    assert refused.structured_content["field"] == "rabs/hold_s"


def test_wait_tool_returns_the_real_outcome_after_a_pending_answer(
    mcp_url: str, world: dict[str, Any]
) -> None:
    async def run() -> types.CallToolResult:
        async with connect(mcp_url, world["token"]) as client:
            pending = await client.call_tool(
                "transport_vehicle_book", BOOK, meta={"rabs/hold_s": 0}
            )
            approval_id = pending.structured_content["approval_id"]
            reviewer = threading.Thread(
                target=_approve_when_pending, args=(world["reviewer"],), kwargs={"after": 0.5}
            )
            reviewer.start()
            waited = await client.call_tool(
                "rabs_approval_wait", {"approval_id": approval_id, "timeout_s": 15}
            )
            reviewer.join()
            return waited

    waited = asyncio.run(run())
    assert not waited.is_error and waited.structured_content["status"] == "booked"


def test_progress_and_log_entries_while_a_call_is_held(mcp_url: str, world: dict[str, Any]) -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    entries: list[types.LoggingMessageNotificationParams] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        entries.append(params)

    async def run() -> types.CallToolResult:
        async with connect(mcp_url, world["token"], logging_callback=on_log) as client:
            result = await client.call_tool(
                "transport_vehicle_book", BOOK, progress_callback=on_progress
            )
            # The session's own stream tells of the decision, on its own schedule: it may
            # arrive just after the call's answer.
            for _ in range(200):
                if len(entries) >= 2:
                    break
                await asyncio.sleep(0.05)
            return result

    reviewer = threading.Thread(
        target=_approve_when_pending, args=(world["reviewer"],), kwargs={"after": 3.5}
    )
    reviewer.start()
    result = asyncio.run(run())
    reviewer.join()
    assert not result.is_error and result.structured_content["status"] == "booked"
    assert len(progress) >= 2 and all("waiting for a reviewer" in (m or "") for *_, m in progress)
    assert [e.data["event"] for e in entries] == ["held", "approved"]
    assert entries[0].logger == "rabs.approvals" and entries[0].data["approval_id"]


def test_a_sessions_stream_tells_of_approvals_and_tool_list_changes(
    mcp_url: str, world: dict[str, Any]
) -> None:
    heard: list[Any] = []

    async def on_message(message: Any) -> None:
        heard.append(message)

    def methods() -> list[str]:
        return [getattr(m, "method", "") for m in heard]

    async def until(predicate: Any, seconds: float = 10) -> None:
        deadline = time.monotonic() + seconds
        while not predicate() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)

    async def run() -> None:
        async with connect(mcp_url, world["token"], message_handler=on_message) as client:
            await client.set_logging_level("info")
            await client.subscribe_resource("rabs://approvals")
            await asyncio.sleep(1.0)  # the stream is open
            pending = await client.call_tool(
                "transport_vehicle_book", BOOK, meta={"rabs/hold_s": 0}
            )
            assert pending.structured_content["status"] == "pending_approval"
            await asyncio.to_thread(_approve_when_pending, world["reviewer"], action="reject")
            await until(lambda: "notifications/resources/updated" in methods() and any(
                getattr(m, "params", None) and getattr(m.params, "data", {}) and
                m.params.data.get("event") == "denied" for m in heard
            ))  # fmt: skip
            await asyncio.to_thread(_disable, "fleet.check_in")
            await until(lambda: "notifications/tools/list_changed" in methods())

    asyncio.run(run())
    found = methods()
    assert "notifications/resources/updated" in found
    logged = [m.params.data for m in heard if getattr(m, "method", "") == "notifications/message"]
    assert [e["event"] for e in logged] == ["held", "denied"]
    assert "notifications/tools/list_changed" in found


def test_a_session_is_its_agents_only(mcp_url: str, world: dict[str, Any]) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    with httpx.Client(base_url=mcp_url, timeout=10) as http:
        opened = http.post(
            "/mcp", json=initialize, headers={**accept, "Authorization": f"Bearer {world['token']}"}
        )
        session_id = opened.headers["mcp-session-id"]
        assert opened.json()["result"]["capabilities"]["tools"]["listChanged"] is True
        assert opened.json()["result"]["capabilities"]["logging"] == {}
        other = {"Authorization": f"Bearer {world['reggie_token']}", "Mcp-Session-Id": session_id}
        assert http.get("/mcp", headers={**other, "Accept": "text/event-stream"}).status_code == 404
        assert http.delete("/mcp", headers=other).status_code == 404
        own = {"Authorization": f"Bearer {world['token']}", "Mcp-Session-Id": session_id}
        assert http.delete("/mcp", headers=own).status_code == 200
        assert http.delete("/mcp", headers=own).status_code == 404
        bad_cursor = http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "%%"}},
            headers={**accept, "Authorization": f"Bearer {world['token']}"},
        )
        assert bad_cursor.json()["error"]["code"] == -32602


def test_tools_list_pages_by_name() -> None:
    tools = [types.Tool(name=f"t{n:03}", input_schema={"type": "object"}) for n in range(7)]
    first, cursor = names.page(tools, None, 3)
    second, cursor2 = names.page(tools, cursor, 3)
    third, last = names.page(tools, cursor2, 3)
    assert [t.name for t in first + second + third] == [t.name for t in tools]
    assert last is None and len(third) == 1
    # A tool removed between pages moves nothing across the boundary.
    assert [t.name for t in names.page(tools[1:], cursor, 3)[0]] == ["t003", "t004", "t005"]
    with pytest.raises(names.BadCursor):
        names.page(tools, "%%", 3)


def test_the_fast_path_answers_as_the_sdk_does(mcp_url: str, world: dict[str, Any]) -> None:
    """A plain tools/call is answered without the SDK's transport (``broker/mcp/fast.py``):
    the same answers as through it (a request with any other parameter goes through it)."""
    headers = {
        "Authorization": f"Bearer {world['token']}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    read = {"date_from": "2026-03-02", "date_to": "2026-03-02"}
    cases = [
        ("roster_shift_read", read, {"rabs/reason": "cover"}),
        ("roster.shift.read", {"date_from": 3}, {}),
        ("no_such_tool", {}, {}),
        ("transport_vehicle_book", BOOK, {"rabs/hold_s": 0}),
        ("roster_shift_read", read, {"rabs/hold_s": -1}),
    ]

    def shape(value: Any) -> Any:  # ids and times differ between two calls; the rest may not
        if isinstance(value, dict):
            return {
                k: "…" if k in ("approval_id", "call_id", "r_tag", "o_tag", "expires_at") or
                k.startswith("rabs/") else shape(v)
                for k, v in value.items()
            }  # fmt: skip
        if isinstance(value, list):
            return [shape(v) for v in value]
        if isinstance(value, str):
            return re.sub(r"[0-9a-f-]{36}|\d{4}-\d\d-\d\dT[\d:.+]+", "…", value)
        return value

    with httpx.Client(base_url=mcp_url, timeout=30) as http:
        for n, (name, arguments, meta) in enumerate(cases):
            params: dict[str, Any] = {"name": name, "arguments": arguments, "_meta": meta}
            fast = http.post(
                "/mcp",
                json={"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params},
                headers=headers,
            )
            sdk = http.post(
                "/mcp",
                json={
                    "jsonrpc": "2.0",
                    "id": n,
                    "method": "tools/call",
                    "params": {**params, "task": None},  # not a plain call: the SDK answers
                },
                headers=headers,
            )
            assert fast.status_code == sdk.status_code == 200
            assert shape(fast.json()) == shape(sdk.json()), name
