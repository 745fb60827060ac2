"""A web process keeps the bearer tokens it admitted and lets a tools/call through on one without
reading it; the statement that records the call's decision checks the agent's generation, which
revoking, re-dating or deleting a token renews (migration 0038). So a revoked token, a paused
agent or a deleted token is refused — 401, as at the door — from the next call, and nothing is
written or run. Anything but a tools/call reads the token as before."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from brainframe.models import ToolCall
from tests.broker.api.test_remembered_agents import _generation, _sql
from tests.broker.mcp.conftest import READ

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

BOOK = {"vehicle_id": "hiace-2", "driver_id": "ST-031", "start": "2026-03-02T09:00:00+10:00",
        "end": "2026-03-02T15:00:00+10:00", "purpose": "Outing", "passengers": 3}  # fmt: skip


def _rpc(url: str, token: str, method: str, params: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        f"{url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        },
        timeout=30,
    )


def _tool_call(url: str, token: str, name: str, arguments: dict[str, Any]) -> httpx.Response:
    return _rpc(url, token, "tools/call", {"name": name, "arguments": arguments})


def _succeeds(response: httpx.Response) -> None:
    assert response.status_code == 200, response.text
    assert response.json()["result"]["isError"] is False, response.text


def _refused(response: httpx.Response, code: str) -> None:
    assert response.status_code == 401, response.text
    assert response.json()["code"] == code
    assert response.headers["www-authenticate"] == f'Bearer realm="rabs", error="{code}"'


@pytest.mark.parametrize(
    "change, code",
    [
        ("UPDATE agent_tokens SET revoked_at = now() WHERE prefix = %s", "auth_token_revoked"),
        ("DELETE FROM agent_tokens WHERE prefix = %s", "auth_unknown_token"),
        (
            "UPDATE agents SET status = 'paused' WHERE agent_id ="
            " (SELECT agent_id FROM agent_tokens WHERE prefix = %s)",
            "auth_agent_paused",
        ),
    ],
    ids=["revoked", "deleted", "paused"],
)
def test_a_token_changed_by_sql_is_refused_from_the_next_tool_call_and_nothing_is_written(
    server: str,
    world: dict[str, Any],
    change: str,
    code: str,
) -> None:
    token = world["henry_token"]
    for _ in range(3):  # admitted, then remembered by the web process
        _succeeds(_tool_call(server, token, "roster.shift.read", READ))
    calls = ToolCall.objects.count()
    _sql(change, [token[:12]])
    _refused(_tool_call(server, token, "roster.shift.read", READ), code)  # no side effects
    _refused(_tool_call(server, token, "transport.vehicle.book", BOOK), code)  # side effects
    _refused(_tool_call(server, token, "rabs.approval.status", {"approval_id": "x"}), code)
    _refused(_rpc(server, token, "tools/list", {}), code)
    assert ToolCall.objects.count() == calls


def test_a_remembered_token_still_serves_everything_else_after_reading_it(
    server: str,
    world: dict[str, Any],
) -> None:
    token = world["henry_token"]
    _succeeds(_tool_call(server, token, "roster.shift.read", READ))
    _succeeds(_tool_call(server, token, "roster.shift.read", READ))
    listed = _rpc(server, token, "tools/list", {})
    assert listed.status_code == 200
    assert "roster_shift_read" in {t["name"] for t in listed.json()["result"]["tools"]}
    invalid = _tool_call(server, token, "roster.shift.read", {})  # refused before the decision
    assert invalid.json()["result"]["structuredContent"]["status"] == "invalid_arguments"
    bad_meta = _rpc(
        server,
        token,
        "tools/call",
        {"name": "roster.shift.read", "arguments": READ, "_meta": {"rabs/confidence": 7}},
    )
    assert bad_meta.status_code == 200 and bad_meta.json()["result"]["isError"] is True


def test_marking_a_token_used_is_not_a_change_but_revoking_it_is(
    world: dict[str, Any],
) -> None:
    before = _generation("henry")
    _sql("UPDATE agent_tokens SET last_used_at = now() WHERE agent_id = %s", ["henry"])
    assert _generation("henry") == before
    _sql("UPDATE agent_tokens SET label = 'renamed' WHERE agent_id = %s", ["henry"])
    renamed = _generation("henry")
    assert renamed != before
    _sql("TRUNCATE agent_tokens", [])
    assert _generation("henry") != renamed
