"""The agent service's configuration: one TOML file, secrets from the environment or files.

Example (``agents_vm/example-config.toml``)::

    agent_id = "henry"
    broker_url = "http://10.0.2.2:8000"
    secret_env = "RABS_AGENT_SECRET"          # or secret_file = "/run/secrets/rabs_agent"
    transport = "mcp"                         # tool calls over /mcp (default "rest": signed)
    mcp_token_env = "RABS_MCP_TOKEN"          # or mcp_token_file; with transport = "mcp"
    data_dir = "/var/lib/rabs-agent"          # agent_memory.db, outbox/, supervisor.log

    [control]
    port = 8765                               # always bound to 127.0.0.1
    token_env = "RABS_CONTROL_TOKEN"          # or token_file

    [llm]
    base_url = "https://api.openai.com/v1"
    api_key_env = "OPENAI_API_KEY"
    model = "gpt-4o-mini"

    [memory]
    journal_key_env = "RABS_JOURNAL_KEY"      # or journal_key_file; 32 bytes, base64
    conversation_max_age_days = 30

    [modes]                                   # Reggie: model per mode (optional)
    normal = "gpt-4o-mini"
    super = "gpt-4o"

    [roles]                                   # Dreamer → Actuator (seed 002; optional)
    dreamer = "dreamer"                       # writes plans and decisions in plain language
    actuator = "actuator"                     # turns one decision into one tool call

    [dashboard]                               # the agent's own read-only page
    host = "127.0.0.1"                        # a LAN address in the compose deployment
    port = 3000                               # 0: a free port (written to data_dir/dashboard.port)

    [personas.reception]                      # personas and routing: agents_vm/service/personas.py
    identity_file = "IDENTITY.md"

    [loop]
    poll_seconds = 2.0
    approval_wait_seconds = 600
    max_model_turns = 40
    compact_after_turns = 20                  # a thread longer than this is compacted…
    compact_keep_turns = 5                    # …keeping its last turns whole

A missing or malformed setting stops the service at start with the setting's name.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents_vm.service.personas import Persona, PersonaError, Routing, personas_load, routing_load


class ConfigError(ValueError):
    """The configuration file is missing, malformed, or names a secret that is not there."""


@dataclass(frozen=True)
class LLMConfig:
    base_url: str
    api_key: str
    model: str
    timeout: float


@dataclass(frozen=True)
class Config:
    agent_id: str
    broker_url: str
    secret: str
    data_dir: Path
    control_host: str
    control_port: int
    control_token: str
    llm: LLMConfig
    journal_key: bytes
    conversation_max_age_days: int
    poll_seconds: float
    approval_wait_seconds: float
    max_model_turns: int
    source: Path
    compact_after_turns: int = 20
    compact_keep_turns: int = 5
    #: Reggie's modes: model per mode ("normal", "super"); empty = one mode, the full loop.
    modes: dict[str, str] = field(default_factory=dict)
    #: How tool calls reach the broker: "rest" (signed) or "mcp" (bearer token, /mcp).
    transport: str = "rest"
    mcp_token: str = ""
    #: Seed 002's roles (model aliases in the gateway): "dreamer" and "actuator"; empty = one
    #: model does both (the loop of ``loop.py``).
    roles: dict[str, str] = field(default_factory=dict)
    personas: dict[str, Persona] = field(default_factory=dict)
    routing: Routing = field(default_factory=Routing)
    #: The agent's dashboard (None: not served).
    dashboard_host: str = "127.0.0.1"
    dashboard_port: int | None = None

    @property
    def memory_path(self) -> Path:
        return self.data_dir / "agent_memory.db"

    @property
    def outbox(self) -> Path:
        return self.data_dir / "outbox"


def _secret(section: dict[str, Any], name: str, where: str, *, required: bool = True) -> str:
    """A secret given as ``<name>_env`` (an environment variable) or ``<name>_file``."""
    env_key, file_key = f"{name}_env", f"{name}_file"
    if env_key in section:
        value = os.environ.get(str(section[env_key]), "")
        if not value and required:
            raise ConfigError(f"{where}{env_key}: environment variable {section[env_key]} is unset")
        return value
    if file_key in section:
        path = Path(str(section[file_key]))
        try:
            return path.read_text().strip()
        except OSError as exc:
            raise ConfigError(f"{where}{file_key}: cannot read {path}: {exc.strerror}") from exc
    if name in section:
        raise ConfigError(f"{where}{name}: put secrets in {env_key} or {file_key}, not the file")
    if required:
        raise ConfigError(f"{where}{env_key} or {where}{file_key} is required")
    return ""


def _get(section: dict[str, Any], key: str, kind: type, where: str, default: Any = None) -> Any:
    if key not in section:
        if default is None:
            raise ConfigError(f"{where}{key} is required")
        return default
    value = section[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ConfigError(f"{where}{key} must be a {kind.__name__}")
    return value


def load_config(path: str | Path) -> Config:
    source = Path(path)
    try:
        raw = tomllib.loads(source.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read {source}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source} is not valid TOML: {exc}") from exc

    control = raw.get("control", {})
    llm = raw.get("llm", {})
    memory = raw.get("memory", {})
    loop = raw.get("loop", {})
    host = _get(control, "host", str, "control.", "127.0.0.1")
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ConfigError("control.host must be a loopback address: the control API is local only")

    key_text = _secret(memory, "journal_key", "memory.")
    try:
        journal_key = base64.b64decode(key_text, validate=True)
    except ValueError as exc:
        raise ConfigError("memory.journal_key: not base64") from exc
    if len(journal_key) != 32:
        raise ConfigError("memory.journal_key: must be 32 bytes (base64 of 32 random bytes)")

    port = _get(control, "port", int, "control.", 8765)
    if not 0 <= port <= 65535:
        raise ConfigError("control.port must be 0–65535")
    modes = raw.get("modes", {})
    if not isinstance(modes, dict) or set(modes) - {"normal", "super"}:
        raise ConfigError("modes: a table with normal and/or super = <model>")
    for mode, model in modes.items():
        if not isinstance(model, str) or not model:
            raise ConfigError(f"modes.{mode} must be a model name")
    if modes and set(modes) != {"normal", "super"}:
        raise ConfigError("modes: give both normal and super")
    transport = _get(raw, "transport", str, "", "rest")
    if transport not in ("rest", "mcp"):
        raise ConfigError('transport is "rest" or "mcp"')
    roles = raw.get("roles", {})
    if not isinstance(roles, dict) or set(roles) - {"dreamer", "actuator"}:
        raise ConfigError("roles: a table with dreamer and actuator = <model or role alias>")
    if roles and set(roles) != {"dreamer", "actuator"}:
        raise ConfigError("roles: give both dreamer and actuator")
    for role, model in roles.items():
        if not isinstance(model, str) or not model:
            raise ConfigError(f"roles.{role} must be a model name")
    dashboard = raw.get("dashboard")
    if dashboard is not None and not isinstance(dashboard, dict):
        raise ConfigError("dashboard must be a table")
    dashboard_port = None
    dashboard_host = "127.0.0.1"
    if dashboard is not None:
        dashboard_host = _get(dashboard, "host", str, "dashboard.", "127.0.0.1")
        dashboard_port = _get(dashboard, "port", int, "dashboard.", 3000)
        if not 0 <= dashboard_port <= 65535:
            raise ConfigError("dashboard.port must be 0–65535")
    try:
        personas = personas_load(raw.get("personas"), source.parent)
        routing = routing_load(raw.get("routing"), personas)
    except PersonaError as exc:
        raise ConfigError(str(exc)) from exc
    data_dir = Path(_get(raw, "data_dir", str, ""))
    if not data_dir.is_absolute():
        data_dir = (source.parent / data_dir).resolve()
    return Config(
        agent_id=_get(raw, "agent_id", str, ""),
        broker_url=_get(raw, "broker_url", str, "").rstrip("/"),
        secret=_secret(raw, "secret", ""),
        data_dir=data_dir,
        control_host=host,
        control_port=port,
        control_token=_secret(control, "token", "control."),
        llm=LLMConfig(
            base_url=_get(llm, "base_url", str, "llm."),
            api_key=_secret(llm, "api_key", "llm.", required=False) or "unused",
            model=_get(llm, "model", str, "llm."),
            timeout=_get(llm, "timeout", float, "llm.", 60.0),
        ),
        journal_key=journal_key,
        conversation_max_age_days=_get(memory, "conversation_max_age_days", int, "memory.", 30),
        poll_seconds=_get(loop, "poll_seconds", float, "loop.", 2.0),
        approval_wait_seconds=_get(loop, "approval_wait_seconds", float, "loop.", 600.0),
        max_model_turns=_get(loop, "max_model_turns", int, "loop.", 40),
        source=source,
        compact_after_turns=_get(loop, "compact_after_turns", int, "loop.", 20),
        compact_keep_turns=_get(loop, "compact_keep_turns", int, "loop.", 5),
        modes=dict(modes),
        transport=transport,
        mcp_token=_secret(raw, "mcp_token", "", required=transport == "mcp"),
        roles=dict(roles),
        personas=personas,
        routing=routing,
        dashboard_host=dashboard_host,
        dashboard_port=dashboard_port,
    )
