"""The agent service as a real subprocess (``python -m agents_vm serve``) beside the broker on
daphne, and a local OpenAI-compatible model server: what the service tests share."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agents_vm.runtime_kit import wait_for
from tests.llm_server import OpenAICompatibleServer

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "control-token-for-tests"


@pytest.fixture
def llm() -> Iterator[OpenAICompatibleServer]:
    """A local model server; a test sets its ``chat_script``."""
    server = OpenAICompatibleServer()
    with server.running():
        yield server


@pytest.fixture
def start_service(
    live_server_url: str, llm: OpenAICompatibleServer, tmp_path: Path
) -> Iterator[Any]:
    """Start ``python -m agents_vm serve`` for an agent; stopped (and its logs kept) after."""
    started: list[tuple[subprocess.Popen[bytes], Path, str]] = []

    def start(
        agent_id: str, secret: str, extra: str = "", *, url: str = "", mcp_token: str = ""
    ) -> dict[str, Any]:
        """``mcp_token``: the service's tool calls go over ``url``'s MCP face with it."""
        home = tmp_path / agent_id
        home.mkdir()
        config = home / "agent.toml"
        transport = 'transport = "mcp"\nmcp_token_env = "RABS_MCP_TOKEN"' if mcp_token else ""
        config.write_text(
            f"""
agent_id = "{agent_id}"
broker_url = "{url or live_server_url}"
secret_env = "RABS_AGENT_SECRET"
data_dir = "{home / "data"}"
{transport}
[control]
port = 0
token_env = "RABS_CONTROL_TOKEN"
[llm]
base_url = "{llm.base_url}"
api_key_env = "OPENAI_API_KEY"
model = "scripted-model"
[memory]
journal_key_env = "RABS_JOURNAL_KEY"
[loop]
poll_seconds = 0.3
approval_wait_seconds = 120
{extra}
"""
        )
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "RABS_AGENT_SECRET": secret,
            "RABS_MCP_TOKEN": mcp_token,
            "RABS_CONTROL_TOKEN": TOKEN,
            "RABS_JOURNAL_KEY": base64.b64encode(os.urandom(32)).decode(),
            "OPENAI_API_KEY": "sk-test",
        }
        env.pop("DJANGO_SETTINGS_MODULE", None)
        log = home / "supervisor.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "agents_vm", "serve", "--config", str(config)],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=home,
            )
        started.append((proc, home, agent_id))
        port_file = home / "data" / "control.port"
        wait_for(port_file.exists, 30, "the control API")
        return {"port": int(port_file.read_text()), "proc": proc, "data": home / "data"}

    yield start
    artifacts = ROOT / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    for proc, home, agent_id in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        for name, path in (
            ("supervisor", home / "supervisor.log"),
            ("worker", home / "data" / "worker.log"),
        ):
            if path.exists():
                (artifacts / f"agent-{agent_id}-{name}.log").write_bytes(path.read_bytes())
