"""The MCP face, driven by the official ``mcp`` client over real HTTP against a daphne of its own:
authentication, tools/list, every outcome of tools/call, the held-open approval, follow-up tools,
resources, cross-agent isolation, and the raw JSON-RPC error shapes."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.utils import timezone
from mcp.shared.exceptions import MCPError

from brainframe.models import Agent, AgentToken, ApprovalRequest, ToolCall
from brainframe.selectors import tools_for_agent
from brainframe.services.access.credentials import agent_token_issue
from broker.services.approvals import approval_decide
from tests import factories as f
from tests.broker.mcp.conftest import BOOK, READ, WAIT, call_tool, connect

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_first_mcp_request_after_start_up_succeeds(server: str, world: dict[str, Any]) -> None:
    async def first() -> list[str]:
        async with connect(server, world["henry_token"]) as client:
            return [t.name for t in (await client.list_tools()).tools]

    assert "roster_shift_read" in asyncio.run(first())


def test_tools_list_is_exactly_the_agents_own(server: str, world: dict[str, Any]) -> None:
    async def listed(token: str) -> dict[str, Any]:
        async with connect(server, token) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    henrys, reggies = (
        asyncio.run(listed(world["henry_token"])),
        asyncio.run(listed(world["reggie_token"])),
    )
    allowed = set(tools_for_agent(world["henry"]).values_list("tool_id", flat=True))
    assert {t.title for t in henrys.values()} == allowed | {
        "rabs.approval.status",
        "rabs.approval.wait",
        "rabs.discover",
        "loop.enable_hook",
        "loop.hook_state",
        "loop.yield_turn",
        "ledger.turn_start",
        "ledger.turn_record",
        "ledger.turn",
        "ledger.turn_note",
        "ledger.turn_complete",
        "ledger.compact",
        "ledger.thread_context",
    }
    assert all(t.meta and t.meta["rabs/tool_id"] == t.title for t in henrys.values())
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name) for name in henrys)
    henrys = {t.title: t for t in henrys.values()}
    reggies = {t.title: t for t in reggies.values()}
    assert henrys["rabs.approval.wait"].name == "rabs_approval_wait"
    read = henrys["roster.shift.read"]
    assert read.input_schema["required"] == ["date_from", "date_to"]
    assert read.annotations.read_only_hint is True and read.annotations.idempotent_hint is True
    assert read.title and read.output_schema is not None
    book = henrys["transport.vehicle.book"]
    assert book.annotations.read_only_hint is False
    external = [t for t in henrys.values() if t.annotations and t.annotations.open_world_hint]
    assert external, "an external-channel tool is marked openWorldHint"


@pytest.mark.parametrize(
    ("header", "code"),
    [
        (None, "auth_missing"),
        ("Bearer rabs_not-a-real-token", "auth_unknown_token"),
        ("Basic dXNlcjpwYXNz", "auth_missing"),
    ],
)
def test_no_token_or_a_wrong_one_is_401_before_mcp(
    server: str, world: dict[str, Any], header: str | None, code: str
) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if header:
        headers["Authorization"] = header
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = httpx.post(f"{server}/mcp", json=body, headers=headers, timeout=10)
    assert response.status_code == 401 and response.json()["code"] == code
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_revoked_expired_and_paused_are_refused(server: str, world: dict[str, Any]) -> None:
    henry = world["henry"]
    revoked, expired = agent_token_issue(agent=henry), agent_token_issue(agent=henry)
    AgentToken.objects.filter(prefix=revoked[:12]).update(revoked_at=timezone.now())
    AgentToken.objects.filter(prefix=expired[:12]).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )

    def status(token: str) -> tuple[int, str]:
        response = httpx.post(
            f"{server}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json, text/event-stream",
            },
            timeout=10,
        )
        return response.status_code, response.json().get("code", "")

    assert status(revoked) == (401, "auth_token_revoked")
    assert status(expired) == (401, "auth_token_expired")
    Agent.objects.filter(pk="henry").update(status="paused")
    assert status(world["henry_token"]) == (401, "auth_agent_paused")


def test_an_executed_call_returns_its_result_and_is_audited_as_mcp(
    server: str, world: dict[str, Any]
) -> None:
    result = call_tool(
        server, world["henry_token"], "roster.shift.read", READ, **{"rabs/reason": "cover"}
    )
    assert not result.is_error
    assert result.structured_content["shifts"]
    assert "shifts" in result.content[0].text
    call = ToolCall.objects.get(agent_id="henry", requested_tool_id="roster.shift.read")
    assert call.face == "mcp" and call.outcome == "succeeded" and call.hash_scheme == 3
    assert call.r_tag.thought == "cover"
    from broker.audit.verify import verify_chain

    assert verify_chain("henry") is None


def test_invalid_arguments_list_each_field_for_the_model(
    server: str, world: dict[str, Any]
) -> None:
    result = call_tool(server, world["henry_token"], "roster.shift.read", {"date_from": 3})
    assert result.is_error
    paths = {e["path"] for e in result.structured_content["errors"]}
    assert {"/date_from", "/date_to"} <= paths
    assert "/date_to" in result.content[0].text


def test_a_denial_names_its_code_and_reason(server: str, world: dict[str, Any]) -> None:
    result = call_tool(
        server,
        world["henry_token"],
        "comms.sms.send",
        {"to": "+61400000000", "message": "Her tax file number is 123 456 782"},
    )
    body = result.structured_content
    assert result.is_error and body["status"] == "denied"
    assert body["code"] and body["reason"] and body["r_tag"] and body["o_tag"]
    assert body["code"] == "directive:PRIVACY_NO_PII" and body["code"] in result.content[0].text


def test_a_handler_failure_is_an_error_result(server: str, world: dict[str, Any]) -> None:
    result = call_tool(server, world["henry_token"], "test.broken", {})
    assert result.is_error and "no function registered" in result.content[0].text


@pytest.mark.parametrize("tool", ["no.such.tool", "reggie.only.tool"])
def test_unknown_or_not_allowed_tools_are_one_json_rpc_error(
    server: str, world: dict[str, Any], tool: str
) -> None:
    f.ToolFactory(tool_id="reggie.only.tool", agent_access=["reggie"], execution_mode="auto")
    with pytest.raises(MCPError) as refused:
        call_tool(server, world["henry_token"], tool, {})
    assert refused.value.code == -32602 and refused.value.message == f"Unknown tool: {tool}"


def test_a_reviewer_deciding_within_the_wait_gets_the_real_outcome(
    server: str, world: dict[str, Any]
) -> None:
    def approve_when_pending() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            approval = ApprovalRequest.objects.filter(status="pending", agent_id="henry").first()
            if approval is not None:
                approval_decide(
                    approval_id=approval.pk, reviewer=world["reviewer"], action="approve"
                )
                return
            time.sleep(0.1)

    reviewer = threading.Thread(target=approve_when_pending)
    reviewer.start()
    started = time.monotonic()
    result = call_tool(server, world["henry_token"], "transport.vehicle.book", BOOK)
    reviewer.join()
    assert not result.is_error, result.content[0].text
    assert result.structured_content["status"] == "booked"
    assert time.monotonic() - started < WAIT + 2


def test_an_undecided_call_says_how_to_follow_up_and_the_wait_tool_gets_the_outcome(
    server: str, world: dict[str, Any]
) -> None:
    result = call_tool(server, world["henry_token"], "transport.vehicle.book", BOOK)
    pending = result.structured_content
    assert result.is_error and pending["status"] == "pending_approval"
    assert pending["approval_id"] and pending["expires_at"]
    assert "rabs_approval_wait" in result.content[0].text
    status = call_tool(
        server,
        world["henry_token"],
        "rabs.approval.status",
        {"approval_id": pending["approval_id"]},
    )
    assert status.structured_content["status"] == "pending_approval"
    approval_decide(
        approval_id=pending["approval_id"],
        reviewer=world["reviewer"],
        action="reject",
        reason="the van is booked for maintenance",
    )
    waited = call_tool(
        server,
        world["henry_token"],
        "rabs.approval.wait",
        {"approval_id": pending["approval_id"], "timeout_s": 5},
    )
    assert waited.is_error and waited.structured_content["status"] == "rejected"
    assert "maintenance" in waited.structured_content["reason"]
    # Another agent cannot follow Henry's approval.
    other = call_tool(
        server,
        world["reggie_token"],
        "rabs.approval.status",
        {"approval_id": pending["approval_id"]},
    )
    assert other.is_error and other.structured_content["code"] == "unknown_approval"


def test_knock_on_calls_carry_the_chain_through_meta(server: str, world: dict[str, Any]) -> None:
    first = call_tool(server, world["henry_token"], "roster.shift.read", READ)
    second = call_tool(
        server,
        world["henry_token"],
        "roster.shift.read",
        READ,
        **{"rabs/parent_r_tag": _last_r_tag() if first else None},
    )
    assert not second.is_error
    calls = list(ToolCall.objects.filter(agent_id="henry").order_by("seq"))
    assert calls[1].r_tag.parent_id == calls[0].r_tag_id
    assert calls[1].o_tag_id == calls[0].o_tag_id


def _last_r_tag() -> str:
    call = ToolCall.objects.filter(agent_id="henry").order_by("-seq").first()
    assert call is not None
    return str(call.r_tag_id)


def test_resources_are_the_agents_own(server: str, world: dict[str, Any]) -> None:
    call_tool(server, world["henry_token"], "roster.shift.read", READ)
    henrys_call = ToolCall.objects.get(agent_id="henry")

    async def read(token: str, uri: str) -> Any:
        async with connect(server, token) as client:
            listed = {str(r.uri) for r in (await client.list_resources()).resources}
            assert {"rabs://approvals", "rabs://calls", "rabs://tasks"} <= listed
            try:
                return await client.read_resource(uri)
            except MCPError as error:
                return error

    own = asyncio.run(read(world["henry_token"], f"rabs://calls/{henrys_call.id}"))
    assert str(henrys_call.id) in own.contents[0].text
    calls = asyncio.run(read(world["henry_token"], "rabs://calls"))
    assert "roster.shift.read" in calls.contents[0].text
    directives = asyncio.run(read(world["henry_token"], "rabs://directives"))
    assert "SAFETY_FIRST" in directives.contents[0].text
    refused = asyncio.run(read(world["reggie_token"], f"rabs://calls/{henrys_call.id}"))
    assert isinstance(refused, MCPError) and refused.code == -32002
    reggies = asyncio.run(read(world["reggie_token"], "rabs://calls"))
    assert str(henrys_call.id) not in reggies.contents[0].text


def test_discovery_and_hooks_over_mcp(server: str, world: dict[str, Any]) -> None:
    """``rabs.discover`` answers as ``GET /api/v1/discover/``; a hook is a ``loop://hooks/{id}``
    resource of its own agent only."""
    from brainframe.models import Hook

    found = call_tool(server, world["henry_token"], "rabs.discover", {"query": "book a vehicle"})
    assert not found.is_error
    assert found.structured_content["mode"] in ("hybrid", "text")
    assert any(t["tool_id"] == "transport.vehicle.book" for t in found.structured_content["tools"])
    bad = call_tool(server, world["henry_token"], "rabs.discover", {"query": ""})
    assert bad.is_error and bad.structured_content["code"] == "invalid_arguments"

    proposed = call_tool(
        server,
        world["henry_token"],
        "loop.enable_hook",
        {
            "name": "mcp hook",
            "kind": "scheduled",
            "schedule": "0 7 * * 1-5",
            "effects": [{"type": "message", "text": "roster"}],
        },
    )
    assert not proposed.is_error and proposed.structured_content["status"] == "active"
    hook = Hook.objects.get(pk=proposed.structured_content["id"])
    assert hook.proposed_by == "agent:henry"
    refused = call_tool(
        server,
        world["henry_token"],
        "loop.enable_hook",
        {"name": "x", "kind": "scheduled", "schedule": "nope", "effects": [{"type": "wake"}]},
    )
    assert refused.is_error and refused.structured_content["field"] == "schedule"
    off = call_tool(
        server, world["henry_token"], "loop.hook_state", {"hook_id": str(hook.pk), "enabled": False}
    )
    assert off.structured_content["status"] == "disabled"
    not_reggies = call_tool(
        server, world["reggie_token"], "loop.hook_state", {"hook_id": str(hook.pk), "enabled": True}
    )
    assert not_reggies.is_error and not_reggies.structured_content["code"] == "unknown_hook"

    async def read(token: str) -> Any:
        async with connect(server, token) as client:
            try:
                return await client.read_resource(f"loop://hooks/{hook.pk}")
            except MCPError as error:
                return error

    own = asyncio.run(read(world["henry_token"]))
    assert '"name": "mcp hook"' in own.contents[0].text
    assert isinstance(asyncio.run(read(world["reggie_token"])), MCPError)


def test_raw_json_rpc_error_shapes(server: str, world: dict[str, Any]) -> None:
    """What any MCP client sees on the wire, without the SDK."""
    headers = {
        "Authorization": f"Bearer {world['henry_token']}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-11-25",
    }

    def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
        response = httpx.post(
            f"{server}/mcp",
            json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params},
            headers=headers,
            timeout=30,
        )
        assert response.status_code == 200, response.text
        if response.headers["content-type"].startswith("text/event-stream"):
            data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
            import json

            return dict(json.loads(data[-1]))
        return dict(response.json())

    unknown = rpc("tools/call", {"name": "no.such.tool", "arguments": {}})
    assert unknown["id"] == 7
    assert unknown["error"]["code"] == -32602
    assert unknown["error"]["message"] == "Unknown tool: no.such.tool"
    invalid = rpc("tools/call", {"name": "roster.shift.read", "arguments": {}})
    assert invalid["result"]["isError"] is True
    assert invalid["result"]["structuredContent"]["status"] == "invalid_arguments"


def test_agent_key_prints_a_working_mcp_token(server: str, world: dict[str, Any]) -> None:
    from io import StringIO

    from django.core.management import call_command

    out, err = StringIO(), StringIO()
    call_command("agent_key", "henry", "--mcp", "--expires-days", "1", stdout=out, stderr=err)
    token = out.getvalue().strip()
    assert token.startswith("rabs_") and "expires" in err.getvalue()
    stored = AgentToken.objects.get(prefix=token[:12])
    assert stored.token_sha256 != token and stored.expires_at is not None
    assert not call_tool(server, token, "roster.shift.read", READ).is_error


def test_an_imported_upstream_tool_is_called_over_mcp_and_audited(
    server: str, world: dict[str, Any]
) -> None:
    """mcp-server-time behind the gateway: imported, enabled for Henry, called by an MCP client."""
    import sys

    from brainframe.models import MCPUpstream, Tool
    from brainframe.services.registry.tools import tool_set_enabled
    from broker.services.upstreams import upstream_import

    upstream = MCPUpstream.objects.create(
        name="time",
        transport="stdio",
        command=[sys.executable, "-m", "mcp_server_time"],
        trust="trusted",  # its readOnlyHint is taken as staff's proposal: run without review
    )
    upstream_import(upstream=upstream)
    tool_set_enabled(tools=Tool.objects.filter(pk="time.convert_time"), enabled=True)
    Tool.objects.filter(pk="time.convert_time").update(agent_access=["henry"])
    arguments = {"source_timezone": "Australia/Brisbane", "time": "09:30", "target_timezone": "UTC"}
    result = call_tool(server, world["henry_token"], "time.convert_time", arguments)
    assert not result.is_error, result.content[0].text
    assert result.structured_content["target"]["timezone"] == "UTC"
    assert result.structured_content["target"]["datetime"].endswith("23:30:00+00:00")
    call = ToolCall.objects.get(requested_tool_id="time.convert_time")
    assert call.face == "mcp" and call.outcome == "succeeded" and call.outcome_hash


def test_turns_over_mcp(server: str, world: dict[str, Any]) -> None:
    """The agents ledger over MCP answers as its REST endpoints: a turn started, noted,
    completed with a call of the agent's own, compacted; another agent's turn is not found."""
    token = world["henry_token"]
    started = call_tool(
        server, token, "ledger.turn_start", {"text": "check the roster", "title": "mcp"}
    )
    assert not started.is_error, started
    turn = started.structured_content
    assert turn["status"] == "open" and turn["messages"][0]["content"] == "check the roster"
    noted = call_tool(
        server, token, "ledger.turn_note", {"turn_id": turn["turn_id"], "content": "ok"}
    )
    assert [m["role"] for m in noted.structured_content["messages"]] == ["user", "agent"]
    call_tool(
        server, token, "roster.shift.read", {"date_from": "2026-03-02", "date_to": "2026-03-03"}
    )
    from brainframe.models import ToolCall

    latest = ToolCall.objects.filter(agent_id="henry").order_by("-seq").first()
    assert latest is not None and latest.requested_tool_id == "roster.shift.read"
    call_id = str(latest.pk)
    done = call_tool(
        server,
        token,
        "ledger.turn_complete",
        {"turn_id": turn["turn_id"], "answer": "all covered", "tool_calls": [call_id]},
    )
    assert done.structured_content["status"] == "completed"
    assert done.structured_content["tool_calls"] == [call_id]
    again = call_tool(
        server, token, "ledger.turn_complete", {"turn_id": turn["turn_id"], "answer": ""}
    )
    assert again.is_error and again.structured_content["code"] == "turn_closed"
    compacted = call_tool(
        server,
        token,
        "ledger.compact",
        {"thread": turn["thread"], "summary": "roster checked",
         "summarised_through": turn["turn_id"]},
    )  # fmt: skip
    assert compacted.structured_content["turn_type"] == "compaction"
    context = call_tool(server, token, "ledger.thread_context", {"thread": turn["thread"]})
    assert context.structured_content["summary"] == "roster checked"
    theirs = call_tool(server, world["reggie_token"], "ledger.turn", {"turn_id": turn["turn_id"]})
    assert theirs.is_error and theirs.structured_content["code"] == "unknown_turn"
    whole = call_tool(
        server,
        token,
        "ledger.turn_record",
        {"text": "who drives?", "answer": "Bob", "tool_calls": [call_id], "notes": ["asked"]},
    )
    assert whole.structured_content["status"] == "completed"
    assert [m["role"] for m in whole.structured_content["messages"]] == ["user", "agent", "answer"]
    bad = call_tool(server, token, "ledger.turn", {"turn_id": "nope"})
    assert bad.is_error and bad.structured_content["field"] == "turn_id"
