"""The MCP face's tests: ``server``, a daphne of the module's own (module-scoped: each module that
uses it gets a server no MCP request has reached), ``world``, the agents and tokens that call it
(a module may define a ``world`` of its own), and the official ``mcp`` client connected to it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from django.contrib.auth.models import Group
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from brainframe.models import Agent
from brainframe.services.access.credentials import agent_token_issue
from brainframe.services.seed import seed_brainframe
from rabs.stack.devstack import free_port, start_daphne, wait_until_up
from tests import factories as f
from tests.processes import process_env

WAIT = 3.0  # the server's RABS_MCP_APPROVAL_WAIT_SECONDS in these tests
READ = {"date_from": "2026-03-02", "date_to": "2026-03-02"}
BOOK = {
    "vehicle_id": "hiace-2",
    "driver_id": "ST-031",
    "start": "2026-03-02T09:00:00+10:00",
    "end": "2026-03-02T15:00:00+10:00",
    "purpose": "Community outing",
    "passengers": 3,
}


@pytest.fixture(scope="module")
def server(django_db_setup: Any, django_db_blocker: Any) -> Iterator[str]:
    """A daphne of this module's own: no MCP request has reached it before the first test."""
    port = free_port()
    env = process_env(RABS_MCP_APPROVAL_WAIT_SECONDS=str(WAIT))
    process = start_daphne(env, port)
    url = f"http://127.0.0.1:{port}"
    wait_until_up(url, process)
    yield url
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture
def world(transactional_db: None) -> dict[str, Any]:
    seed_brainframe()
    henry, reggie = Agent.objects.get(agent_id="henry"), Agent.objects.get(agent_id="reggie")
    reviewer = f.UserFactory(username="alice", email="alice@rabs.test")
    reviewer.groups.add(Group.objects.get(name="reviewers"))
    f.ToolFactory(
        tool_id="test.broken",
        risk_level="read",
        execution_mode="auto",
        agent_access=["henry"],
        handler_config={"callable": "no.such.callable"},
        input_schema={"type": "object"},
        output_schema={},
    )
    return {
        "henry": henry,
        "reggie": reggie,
        "reviewer": reviewer,
        "henry_token": agent_token_issue(agent=henry),
        "reggie_token": agent_token_issue(agent=reggie),
    }


@asynccontextmanager
async def connect(url: str, token: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        yield client


def call_tool(server: str, token: str, name: str, arguments: dict[str, Any], **meta: Any) -> Any:
    """The CallToolResult, or the MCPError the server answered with (raised here, outside the
    client's task group, so a test sees the error itself)."""

    async def run() -> Any:
        async with connect(server, token) as client:
            try:
                return await client.call_tool(name, arguments, meta=meta or None)
            except MCPError as error:
                return error

    answer = asyncio.run(run())
    if isinstance(answer, MCPError):
        raise answer
    return answer
