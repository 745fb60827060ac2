"""The MCP face with clients nobody here wrote, each in its own environment (``make clients``):
an agent built with the OpenAI Agents SDK (default timeouts, its model through ``/llm/v1``
against a model server that refuses function names as OpenAI does), and the official MCP
TypeScript SDK (initialize, list, call, a call held for a reviewer with progress)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.db import connection

from brainframe.models import Agent, ApprovalRequest, LLMBudget, LLMRequest, ToolCall
from brainframe.services.access.credentials import agent_token_issue
from brainframe.services.llm.admission import llm_key_issue, llm_upstream_set
from brainframe.services.seed import seed_brainframe
from broker.services.approvals import approval_decide
from rabs.stack.procs import die_with_parent
from tests import factories as f
from tests.conftest import MCP_HOLD as HOLD
from tests.llm_server import OpenAICompatibleServer

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT = settings.BASE_DIR
AGENTS_SDK = ROOT / "var" / "clients" / "openai-agents" / "bin" / "python"
TS_SDK = ROOT / "var" / "clients" / "ts"
BOOK = {
    "vehicle_id": "hiace-2",
    "driver_id": "ST-031",
    "start": "2026-03-02T09:00:00+10:00",
    "end": "2026-03-02T15:00:00+10:00",
    "purpose": "Community outing",
    "passengers": 3,
}
NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@pytest.fixture(scope="module")
def clients() -> None:
    """The clients' environments, built from their pinned versions if they are not yet."""
    subprocess.run(
        ["make", "-s", "clients"], cwd=ROOT, check=True, timeout=600, preexec_fn=die_with_parent
    )


@pytest.fixture
def world(transactional_db: None) -> dict[str, Any]:
    seed_brainframe()
    henry = Agent.objects.get(agent_id="henry")
    reviewer = f.UserFactory(username="alice", email="alice@rabs.test")
    reviewer.groups.add(Group.objects.get(name="reviewers"))
    return {"henry": henry, "reviewer": reviewer, "token": agent_token_issue(agent=henry)}


def _approve(reviewer: Any, tool_id: str, *, after: float) -> threading.Thread:
    """A reviewer who approves the agent's pending call of ``tool_id`` ``after`` seconds once
    it is there."""

    def run() -> None:
        deadline = time.monotonic() + 60
        try:
            while time.monotonic() < deadline:
                approval = ApprovalRequest.objects.filter(
                    status="pending", agent_id="henry", tool_id=tool_id
                ).first()
                if approval is not None:
                    time.sleep(after)
                    approval_decide(approval_id=approval.pk, reviewer=reviewer, action="approve")
                    return
                time.sleep(0.1)
        finally:
            connection.close()  # back to the pool: a thread's connection is not closed for it

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content)


def _henry_the_model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """Reads the roster, asks to notify the carers, then waits for the reviewer with
    ``rabs_approval_wait`` until the call ran."""
    results = [_text(m.get("content")) for m in messages if m.get("role") == "tool"]
    if not results:
        args = {"date_from": "2026-03-02", "date_to": "2026-03-02"}
        return {"tool_calls": [{"name": "roster_shift_read", "arguments": args}]}
    if len(results) == 1:
        args = {"staff_ids": ["ST-014"], "message": "Bus running late"}
        return {"tool_calls": [{"name": "comms_notification_push", "arguments": args}]}
    found = re.search(r"approval ([0-9a-f-]{36})", " ".join(results))
    if found and "Waiting for a human reviewer" in results[-1] and len(results) < 10:
        wait = {"approval_id": found.group(1)}
        return {"tool_calls": [{"name": "rabs_approval_wait", "arguments": wait}]}
    return {"content": "done: " + results[-1][:300]}


@pytest.fixture
def model_server() -> Iterator[OpenAICompatibleServer]:
    server = OpenAICompatibleServer()
    server.function_name_rule = True
    server.chat_script = _henry_the_model
    with server.running():
        yield server


@pytest.mark.timeout(240)
def test_an_openai_agents_sdk_agent_with_default_timeouts(
    clients: None, mcp_url: str, world: dict[str, Any], model_server: OpenAICompatibleServer
) -> None:
    llm_upstream_set(
        name="local",
        base_url=model_server.base_url,
        served_models=["small-model"],
        api_key="",
        price_in=Decimal("1"),
        price_out=Decimal("1"),
        external=False,
    )
    LLMBudget.objects.create(agent=world["henry"], allowed_models=["small-model"])
    env = {
        **os.environ,
        "RABS_URL": mcp_url,
        "RABS_MCP_TOKEN": world["token"],
        "RABS_LLM_KEY": llm_key_issue(agent=world["henry"]),
    }
    reviewer = _approve(world["reviewer"], "comms.notification.push", after=HOLD + 1.0)
    run = subprocess.run(
        [str(AGENTS_SDK), str(ROOT / "tests" / "clients" / "openai_agent.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        preexec_fn=die_with_parent,
    )
    reviewer.join()
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.splitlines()[-1])["final_output"].startswith("done:")
    chats = [body for path, body in model_server.requests if path.endswith("/chat/completions")]
    offered = {t["function"]["name"] for t in chats[0]["tools"]}
    assert {"roster_shift_read", "comms_notification_push", "rabs_approval_wait"} <= offered
    assert all(NAME.fullmatch(name) for name in offered)
    calls = {c.requested_tool_id: c for c in ToolCall.objects.filter(agent_id="henry")}
    assert (
        calls["roster.shift.read"].face == "mcp"
        and calls["roster.shift.read"].outcome == "succeeded"
    )
    pushed = calls["comms.notification.push"]
    assert pushed.face == "mcp" and pushed.outcome == "succeeded"
    # The pending answer came back as a result the model read, then the wait gave the outcome.
    told = [_text(m.get("content")) for m in chats[-1]["messages"] if m.get("role") == "tool"]
    assert any("Waiting for a human reviewer" in t for t in told)
    assert LLMRequest.objects.filter(agent_id="henry").count() == len(chats)


@pytest.mark.timeout(120)
def test_the_typescript_sdk_initializes_lists_calls_and_waits_with_progress(
    clients: None, mcp_url: str, world: dict[str, Any]
) -> None:
    env = {
        **os.environ,
        "RABS_URL": mcp_url,
        "RABS_MCP_TOKEN": world["token"],
        "RABS_BOOK": json.dumps(BOOK),
    }
    reviewer = _approve(world["reviewer"], "transport.vehicle.book", after=6.0)
    # Beside its node_modules: an ES module finds its packages from where it lies.
    script = TS_SDK / "ts_client.mjs"
    shutil.copyfile(ROOT / "tests" / "clients" / "ts_client.mjs", script)
    run = subprocess.run(
        ["node", str(script)],
        cwd=TS_SDK,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        preexec_fn=die_with_parent,
    )
    reviewer.join()
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout.splitlines()[-1])
    assert seen["server"]["name"] == "rabs-brainframe"
    assert seen["capabilities"]["tools"]["listChanged"] is True
    assert "logging" in seen["capabilities"]
    tools = {t["name"]: t for t in seen["tools"]}
    assert all(NAME.fullmatch(name) for name in tools)
    assert tools["roster_shift_read"]["title"] == "roster.shift.read"
    assert tools["roster_shift_read"]["meta"] == {"rabs/tool_id": "roster.shift.read"}
    assert not seen["read"].get("isError")
    # Held past the client's 5 s timeout by progress alone, then the real outcome.
    assert seen["held"]["structuredContent"]["status"] == "booked", seen["held"]
    assert len(seen["progress"]) >= 4


def _snippets() -> list[tuple[str, str]]:
    """(language, code) of each fenced block of docs/mcp.md's "Connect your agent", in order."""
    text = (ROOT / "docs" / "mcp.md").read_text()
    section = text.split("## Connect your agent", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(\w+)\n(.*?)```", section, flags=re.DOTALL)


def _roster_then_done(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> dict[str, Any]:
    if not any(m.get("role") == "tool" for m in messages):
        args = {"date_from": "2026-03-02", "date_to": "2026-03-02"}
        return {"tool_calls": [{"name": "roster_shift_read", "arguments": args}]}
    return {"content": "done: " + _text(messages[-1].get("content"))[:200]}


@pytest.mark.timeout(240)
def test_the_connect_snippets_work_as_written(
    clients: None,
    mcp_url: str,
    world: dict[str, Any],
    model_server: OpenAICompatibleServer,
    tmp_path: Any,
) -> None:
    model_server.chat_script = _roster_then_done
    llm_upstream_set(
        name="local",
        base_url=model_server.base_url,
        served_models=["small-model"],
        api_key="",
        price_in=Decimal("1"),
        price_out=Decimal("1"),
        external=False,
    )
    LLMBudget.objects.create(
        agent=world["henry"], allowed_models=["small-model"], aliases={"actuator": "small-model"}
    )
    key = llm_key_issue(agent=world["henry"])

    def written(code: str) -> str:
        return (
            code.replace("http://127.0.0.1:8000", mcp_url)
            .replace("rabs_…", world["token"])
            .replace("rabs-llm-…", key)
        )

    snippets = _snippets()
    assert [lang for lang, _ in snippets] == ["sh", "json", "json", "python", "js", "python"]
    (_, claude_code), (_, claude_desktop) = snippets[1], snippets[2]

    # Claude Code: the server entry as written, initialize and list.
    server = json.loads(written(claude_code))["mcpServers"]["rabs"]
    headers = {**server["headers"], "Accept": "application/json, text/event-stream"}
    opened = httpx.post(server["url"], headers=headers, timeout=30, json=_initialize())
    assert opened.status_code == 200 and opened.json()["result"]["serverInfo"]
    # Claude Desktop: its command as written (mcp-remote over stdio), driven by an MCP client.
    desktop = json.loads(written(claude_desktop))["mcpServers"]["rabs"]
    listed = asyncio.run(_stdio_tools(desktop))
    assert "roster_shift_read" in listed

    runs = {
        "agents": ([str(AGENTS_SDK), "snippet.py"], snippets[3][1], tmp_path / "snippet.py"),
        "ts": (["node", "snippet.mjs"], snippets[4][1], TS_SDK / "snippet.mjs"),
        "mcp": ([sys.executable, "snippet.py"], snippets[5][1], tmp_path / "mcp" / "snippet.py"),
    }
    out = {}
    for name, (command, code, path) in runs.items():
        path.parent.mkdir(exist_ok=True)
        path.write_text(written(code))
        run = subprocess.run(
            command,
            cwd=path.parent,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=die_with_parent,
        )
        assert run.returncode == 0, (name, run.stderr[-3000:])
        out[name] = run.stdout
    assert out["agents"].startswith("done:") and "ST-014" in out["agents"]
    assert re.match(r"\d+ \{\"shifts\"", out["ts"])
    assert re.match(r"\d+ False \{'shifts'", out["mcp"])
    assert ToolCall.objects.filter(requested_tool_id="roster.shift.read", face="mcp").count() == 3


def _initialize() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "claude-code-config", "version": "1"},
        },
    }


async def _stdio_tools(server: dict[str, Any]) -> list[str]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=server["command"],
        args=server["args"],
        env={**os.environ, **server["env"]},
        cwd=str(TS_SDK),  # npx finds mcp-remote there, installed by make clients
    )
    async with Client(params, mode="legacy") as client:
        return [tool.name for tool in (await client.list_tools()).tools]
