"""The agent service's parts: configuration, private memory, plans."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import threading
from pathlib import Path

import pytest

from agents_vm.loop.modes import select_mode
from agents_vm.loop.phases import Phases
from agents_vm.memory import MIGRATIONS, SCHEMA_VERSION, AgentMemory, JournalKeyError
from agents_vm.model.plan import PlanError, plan_validate
from agents_vm.service.config import ConfigError, load_config

KEY = os.urandom(32)
TOOLS = ["roster.shift.read", "transport.vehicle.book", "comms.sms.send"]


def _config(tmp_path: Path, extra: str = "", control: str = "") -> Path:
    path = tmp_path / "agent.toml"
    path.write_text(
        f"""
agent_id = "henry"
broker_url = "http://127.0.0.1:8000/"
secret_env = "TEST_AGENT_SECRET"
data_dir = "data"
{extra}
[control]
port = 0
token_env = "TEST_CONTROL_TOKEN"
{control}
[llm]
base_url = "http://127.0.0.1:9/v1"
model = "scripted"
[memory]
journal_key_env = "TEST_JOURNAL_KEY"
"""
    )
    return path


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_AGENT_SECRET", "s3cret")
    monkeypatch.setenv("TEST_CONTROL_TOKEN", "t0ken")
    monkeypatch.setenv("TEST_JOURNAL_KEY", base64.b64encode(KEY).decode())


def test_config_loads_with_secrets_from_the_environment(tmp_path: Path, env: None) -> None:
    config = load_config(_config(tmp_path))
    assert config.agent_id == "henry" and config.broker_url == "http://127.0.0.1:8000"
    assert config.secret == "s3cret" and config.control_token == "t0ken"
    assert config.journal_key == KEY
    assert config.data_dir == tmp_path / "data"
    assert config.memory_path == tmp_path / "data" / "agent_memory.db"
    assert config.control_host == "127.0.0.1"


@pytest.mark.parametrize(
    ("extra", "control", "message"),
    [
        ("", 'host = "0.0.0.0"', "control.host must be a loopback address"),
        ("", 'host = "10.0.2.15"', "control.host must be a loopback address"),
        ('secret = "inline"', "", "put secrets in secret_env or secret_file"),
        ("", "port = 70000", "control.port must be 0–65535"),
        ("", 'port = "8765"', "control.port must be a int"),
    ],
)
def test_config_errors_name_the_setting(
    tmp_path: Path, env: None, extra: str, control: str, message: str
) -> None:
    path = _config(tmp_path, extra, control)
    text = path.read_text()
    if extra.startswith("secret ="):
        text = text.replace('secret_env = "TEST_AGENT_SECRET"\n', "")
    if "port =" in control:
        text = text.replace("port = 0\n", "")
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_config_missing_secret_and_bad_key(
    tmp_path: Path, env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TEST_AGENT_SECRET")
    with pytest.raises(ConfigError, match="TEST_AGENT_SECRET is unset"):
        load_config(_config(tmp_path))
    monkeypatch.setenv("TEST_AGENT_SECRET", "x")
    monkeypatch.setenv("TEST_JOURNAL_KEY", base64.b64encode(b"short").decode())
    with pytest.raises(ConfigError, match="32 bytes"):
        load_config(_config(tmp_path))
    (tmp_path / "broken.toml").write_text("agent_id = ")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(tmp_path / "broken.toml")


def test_journal_is_unreadable_without_the_key(tmp_path: Path) -> None:
    path = tmp_path / "agent_memory.db"
    memory = AgentMemory(path, journal_key=KEY)
    secret_line = "Maria's carer prefers calls after 4 pm; Tom is anxious about the new roster"
    memory.journal_write(secret_line)
    memory.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())  # the db, its WAL and shm
    assert b"Maria" not in raw and b"prefers calls" not in raw
    assert AgentMemory(path, journal_key=KEY).journal() == [secret_line]
    with pytest.raises(JournalKeyError):
        AgentMemory(path, journal_key=os.urandom(32)).journal()
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_schema_upgrades_itself(tmp_path: Path) -> None:
    path = tmp_path / "agent_memory.db"
    old = sqlite3.connect(path)
    old.executescript(MIGRATIONS[0])
    old.execute("PRAGMA user_version = 1")
    old.execute("INSERT INTO user_preferences (key, value, updated_at) VALUES ('tea', 'white', 0)")
    old.commit()
    old.close()
    memory = AgentMemory(path, journal_key=KEY)
    assert memory.version == SCHEMA_VERSION == 6
    assert memory.preferences() == {"tea": "white"}  # kept across the upgrade
    memory.task_state_save("t1", status="in_progress")  # the v2 table exists
    assert memory.task_state("t1") == {"plan": None, "done_steps": [], "status": "in_progress"}
    assert memory.turn_get("t1") is None  # the v5 column exists
    memory.turn_set("t1", "turn-1")
    assert memory.turn_get("t1") == "turn-1"
    assert memory.task_state("t1")["status"] == "in_progress"  # type: ignore[index]
    memory.clarification_park("thread-1", "t1", "Which day?")  # the v6 table exists
    memory.db.execute("PRAGMA user_version = 99")
    with pytest.raises(RuntimeError, match="newer than this agent's"):
        memory.upgrade()


def test_conversations_are_a_rolling_window(tmp_path: Path) -> None:
    memory = AgentMemory(tmp_path / "m.db", journal_key=KEY)
    memory.append_message("t1", {"role": "user", "content": "old"})
    memory.db.execute("UPDATE conversations SET created_at = created_at - 40 * 86400")
    memory.append_message("t1", {"role": "user", "content": "new"})
    assert memory.prune(30) == 1
    assert memory.messages("t1") == [{"role": "user", "content": "new"}]


def test_plan_runs_in_topological_order() -> None:
    plan = plan_validate(
        {
            "goal": "outing",
            "steps": [
                {"id": "notify", "intent": "tell carer", "tools": ["comms.sms.send"],
                 "depends_on": ["book"]},
                {"id": "check", "intent": "who is rostered", "tools": ["roster.shift.read"]},
                {"id": "book", "intent": "book the van", "tools": ["transport.vehicle.book"],
                 "depends_on": ["check"]},
            ],
        },
        known_tools=TOOLS,
    )  # fmt: skip
    assert [s.id for s in plan.steps] == ["check", "book", "notify"]


def test_plan_refusals_list_every_problem() -> None:
    with pytest.raises(PlanError) as cycle:
        plan_validate(
            {
                "goal": "g",
                "steps": [
                    {"id": "a", "intent": "x", "tools": [], "depends_on": ["b"]},
                    {"id": "b", "intent": "y", "tools": [], "depends_on": ["a"]},
                ],
            },
            known_tools=TOOLS,
        )
    assert cycle.value.problems == ["dependency cycle among steps: a, b"]
    with pytest.raises(PlanError) as bad:
        plan_validate(
            {
                "goal": "",
                "steps": [
                    {"id": "a", "intent": "x", "tools": ["system.config.update"]},
                    {"id": "a", "intent": "", "tools": [], "depends_on": ["zz"]},
                ],
            },
            known_tools=TOOLS,
        )
    assert set(bad.value.problems) == {
        "goal: required text",
        "steps[0].tools: 'system.config.update' is not a tool you can call",
        "steps[1].id: duplicate step id 'a'",
        "steps[1].intent: required text",
        "step a: depends on unknown step 'zz'",
    }
    with pytest.raises(PlanError, match="at least one step"):
        plan_validate({"goal": "g", "steps": []}, known_tools=TOOLS)


def test_modes_need_both_models(tmp_path: Path, env: None) -> None:
    path = _config(tmp_path)
    path.write_text(path.read_text() + '[modes]\nnormal = "gpt-4o-mini"\nsuper = "gpt-4o"\n')
    assert load_config(path).modes == {"normal": "gpt-4o-mini", "super": "gpt-4o"}
    path.write_text(_config(tmp_path).read_text() + '[modes]\nnormal = "gpt-4o-mini"\n')
    with pytest.raises(ConfigError, match="give both normal and super"):
        load_config(path)
    path.write_text(_config(tmp_path).read_text() + '[modes]\nturbo = "x"\n')
    with pytest.raises(ConfigError, match="modes"):
        load_config(path)


@pytest.mark.parametrize(
    ("query", "channel", "mode"),
    [
        ("When is Tom's next shift?", "text", "normal"),
        ("Is the Hiace free on Monday morning?", "text", "normal"),
        ("What is Maria's support coordinator's phone number?", "sms", "normal"),
        ("Please book the van for Friday's outing", "text", "super"),
        ("Cancel my Tuesday session", "text", "super"),
        ("Why were three shifts unfilled last week?", "text", "super"),
        ("Draft a reply to the carer's complaint", "text", "super"),
        ("Who is on tomorrow? And who covers Saturday?", "text", "super"),
        ("Hello, I'd like to ask about Monday", "voice", "external"),
        ("When is Tom's next shift?", "phone_call", "external"),
    ],
)
def test_mode_selection_flow(query: str, channel: str, mode: str) -> None:
    choice = select_mode(query, channel=channel)
    assert choice.mode == mode, choice
    assert choice.reason


def test_a_handler_change_is_checked_before_it_is_asked_for(tmp_path: Path, env: None) -> None:
    """The loop's update_handler tool (seed 004 Self-Managed Handlers) asks the broker's governed
    agent.update_handler for a change, and stores it only once that executed (end to end:
    tests/agents_vm/test_runtime.py). A change that cannot be stored is refused here, before
    anyone is asked, and nothing is written."""
    config = load_config(_config(tmp_path))
    memory = AgentMemory(config.memory_path, journal_key=KEY)
    phases = Phases(config, memory=memory, broker=None, llm=None, stop=threading.Event())  # type: ignore[arg-type]

    def call(arguments: dict[str, object]) -> dict[str, object]:
        function = {"name": "update_handler", "arguments": json.dumps(arguments)}
        answer, _ = phases._dispatch("t1", None, {"id": "c1", "function": function}, None, [])
        return answer

    refusals = {
        "config must be a JSON object": {"name": "loop", "config": "fast please"},
        "name: one of loop, answer, result": {"name": "everything", "config": {}},
        "the loop handler takes configuration only": {"name": "loop", "code": "x = 1"},
        "code must define handle(...)": {"name": "answer", "code": "x = 1"},
    }
    for detail, arguments in refusals.items():
        assert call(arguments) == {"status": "error", "detail": detail}
    assert call({"name": "answer", "code": "def handle(:"})["detail"].startswith(
        "code does not load: SyntaxError"
    )
    assert memory.handlers() == {}
    memory.close()
