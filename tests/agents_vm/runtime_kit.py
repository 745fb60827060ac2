"""What the runtime's end-to-end tests share: the Dreamer and the Actuator as two local
OpenAI-compatible servers behind the control plane's model gateway (``/llm/v1``, each reached by
its role's alias, as a deployment would), and the agent service started as a real subprocess.

The scripted models decide only from what they are sent: the Dreamer from its system prompt and
the last thing it was told, the Actuator from the one dream it is given.
"""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brainframe.models import Agent, AgentTask, LLMBudget
from brainframe.services.llm.admission import llm_key_issue, llm_upstream_set
from rabs.stack.procs import die_with_parent
from tests.llm_server import OpenAICompatibleServer

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
TOKEN = "control-token-for-runtime-tests"

Script = Callable[[list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]]


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@dataclass
class Roles:
    """The two role servers and what each was sent."""

    dreamer: OpenAICompatibleServer
    actuator: OpenAICompatibleServer

    def dreamer_requests(self) -> list[dict[str, Any]]:
        return [body for path, body in self.dreamer.requests if path.endswith("/completions")]

    def actuator_requests(self) -> list[dict[str, Any]]:
        return [body for path, body in self.actuator.requests if path.endswith("/completions")]


@contextmanager
def role_servers(dreamer: Script, actuator: Script) -> Iterator[Roles]:
    roles = Roles(OpenAICompatibleServer(), OpenAICompatibleServer())
    roles.dreamer.chat_script = dreamer
    roles.actuator.chat_script = actuator
    with roles.dreamer.running(), roles.actuator.running():
        yield roles


def gateway_for(agent_id: str, roles: Roles) -> str:
    """The gateway serves ``dreamer`` and ``actuator`` to ``agent_id`` from the two servers;
    returns the agent's virtual key."""
    from django.core.cache import cache

    redis = cache.redis()  # type: ignore[attr-defined]
    stale = list(redis.scan_iter(match=cache.make_key("llm:*")))
    if stale:  # counters of an earlier test's agents (the database is new)
        redis.delete(*stale)
    for name, server, model in (
        ("dreamer-server", roles.dreamer, "dreamer-model"),
        ("actuator-server", roles.actuator, "actuator-model"),
    ):
        llm_upstream_set(
            name=name, base_url=server.base_url, served_models=[model], api_key="", external=False
        )
    agent = Agent.objects.get(agent_id=agent_id)
    LLMBudget.objects.update_or_create(
        agent=agent,
        defaults={"aliases": {"dreamer": "dreamer-model", "actuator": "actuator-model"}},
    )
    return llm_key_issue(agent=agent)


@dataclass
class Service:
    agent_id: str
    home: Path
    process: subprocess.Popen[bytes]
    control_port: int
    dashboard_port: int | None
    started: list[Any] = field(default_factory=list)

    @property
    def data(self) -> Path:
        return self.home / "data"


@contextmanager
def agent_service(
    *,
    agent_id: str,
    secret: str,
    llm_key: str,
    broker_url: str,
    home: Path,
    extra: str = "",
    files: dict[str, str] | None = None,
) -> Iterator[Service]:
    """``python -m agents_vm serve`` with the Dreamer → Actuator roles (and ``extra`` TOML);
    stopped after, its logs kept under test-artifacts/."""
    home.mkdir(parents=True, exist_ok=True)
    for name, text in (files or {}).items():
        (home / name).write_text(text)
    config = home / "agent.toml"
    config.write_text(
        f"""
agent_id = "{agent_id}"
broker_url = "{broker_url}"
secret_env = "RABS_AGENT_SECRET"
data_dir = "{home / "data"}"
[control]
port = 0
token_env = "RABS_CONTROL_TOKEN"
[llm]
base_url = "{broker_url}/llm/v1"
api_key_env = "RABS_LLM_KEY"
model = "actuator"
[roles]
dreamer = "dreamer"
actuator = "actuator"
[memory]
journal_key_env = "RABS_JOURNAL_KEY"
[loop]
poll_seconds = 0.2
approval_wait_seconds = 120
{extra}
"""
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "RABS_AGENT_SECRET": secret,
        "RABS_CONTROL_TOKEN": TOKEN,
        "RABS_JOURNAL_KEY": base64.b64encode(os.urandom(32)).decode(),
        "RABS_LLM_KEY": llm_key,
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    with open(home / "supervisor.log", "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "agents_vm", "serve", "--config", str(config)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=home,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
    try:
        port_file = home / "data" / "control.port"
        wait_for(port_file.exists, 30, "the control API")
        dashboard = home / "data" / "dashboard.port"
        if "[dashboard]" in extra:
            wait_for(dashboard.exists, 30, "the dashboard")
        yield Service(
            agent_id=agent_id,
            home=home,
            process=process,
            control_port=int(port_file.read_text()),
            dashboard_port=int(dashboard.read_text()) if dashboard.exists() else None,
        )
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        ARTIFACTS.mkdir(exist_ok=True)
        for name, path in (
            ("supervisor", home / "supervisor.log"),
            ("worker", home / "data" / "worker.log"),
        ):
            if path.exists():
                (ARTIFACTS / f"runtime-{agent_id}-{name}.log").write_bytes(path.read_bytes())


#: The registry the runtime tests keep (a small one: every tool is embedded for discovery).
KEPT_TOOLS = [
    "transport.vehicle.availability",
    "transport.vehicle.book",
    "comms.sms.send",
    "comms.notification.push",
    "roster.shift.read",
    "agents.delegate",
    "agent.update_handler",
    "agent.restart_self",
    "channel.reply",
]


def task_ended(task_id: Any, timeout: float = 60) -> AgentTask:
    def ended() -> AgentTask | None:
        task = AgentTask.objects.get(pk=task_id)
        return task if task.status in ("done", "failed") else None

    return wait_for(ended, timeout, f"task {task_id} to end")  # type: ignore[no-any-return]
