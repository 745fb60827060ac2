"""The runtime's parts on their own (docs/agents.md): personas and routing, per-step constraint
selection, the two model roles against a real OpenAI-compatible server, the Dreamer's words,
hot-swappable handlers, the agent's dashboard page, the memory of questions asked."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import openai
import pytest

from agents_vm.loop.handlers import HandlerError, Handlers, handler_check
from agents_vm.memory import AgentMemory
from agents_vm.model.constraints import DOMAINS, constraints_for_step, constraints_parse
from agents_vm.model.prose import outcome_words, tools_words
from agents_vm.model.roles import Actuator, ActuatorMiss, Dreamer, DreamRefused, looks_like_json
from agents_vm.service.config import ConfigError, load_config
from agents_vm.service.dashboard import dashboard_page
from agents_vm.service.personas import Binding, Persona, Routing, route_resolve
from tests.llm_server import OpenAICompatibleServer

KEY = os.urandom(32)


def _config(tmp_path: Path, extra: str) -> Path:
    (tmp_path / "SOUL.md").write_text("Warm and brief.")
    path = tmp_path / "agent.toml"
    path.write_text(
        f"""
agent_id = "reggie"
broker_url = "http://127.0.0.1:8000"
secret_env = "T_SECRET"
data_dir = "data"
[control]
token_env = "T_TOKEN"
[llm]
base_url = "http://127.0.0.1:9/v1"
model = "actuator"
[memory]
journal_key_env = "T_KEY"
{extra}
"""
    )
    return path


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("T_SECRET", "s")
    monkeypatch.setenv("T_TOKEN", "t")
    monkeypatch.setenv("T_KEY", base64.b64encode(KEY).decode())


PERSONAS = """
[roles]
dreamer = "dreamer"
actuator = "actuator"
[dashboard]
host = "0.0.0.0"
port = 0
[personas.desk]
soul_file = "SOUL.md"
identity = "The front desk."
channels = ["sms"]
accounts = { sms = "+61 7 5555 0100" }
[personas.family]
soul = "Gentle."
smart = true
[routing]
default_persona = "desk"
sessions = { "agent:reggie:sms:+61412345678" = "family" }
threads = { "t-1" = { persona = "desk", smart = false } }
"""


def test_personas_roles_and_dashboard_load_from_the_configuration(
    tmp_path: Path, env: None
) -> None:
    config = load_config(_config(tmp_path, PERSONAS))
    assert config.roles == {"dreamer": "dreamer", "actuator": "actuator"}
    assert (config.dashboard_host, config.dashboard_port) == ("0.0.0.0", 0)  # LAN is allowed
    desk = config.personas["desk"]
    assert desk.soul == "Warm and brief." and desk.accounts == {"sms": "+61 7 5555 0100"}
    assert "On sms you speak as +61 7 5555 0100." in desk.prompt("sms")
    assert config.routing.sessions["agent:reggie:sms:+61412345678"] == Binding("family", None)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('[roles]\ndreamer = "d"', "roles: give both dreamer and actuator"),
        ('[roles]\ndreamer = "d"\nactuator = "a"\ncritic = "c"', "roles: a table with"),
        ("[dashboard]\nport = 70000", "dashboard.port must be 0–65535"),
        ('[routing]\ndefault_persona = "nobody"', "routing.default_persona: no persona named"),
        ('[personas.x]\nsoul_file = "missing.md"', "personas.x.soul_file: cannot read"),
        ('[personas.x]\nsoul = "a"\nsoul_file = "SOUL.md"', "give soul or soul_file, not both"),
        ('[personas.x]\nsmart = "yes"', "personas.x.smart must be true or false"),
        ('[routing.sessions]\n"s" = { persona = "ghost" }', "routing.sessions.s.persona: no"),
    ],
)
def test_runtime_settings_that_are_wrong_are_named(
    tmp_path: Path, env: None, extra: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        load_config(_config(tmp_path, extra))


def test_routing_thread_then_session_then_persona_and_smart_at_any_level() -> None:
    desk = Persona("desk", "s", "i", channels=("sms",))
    family = Persona("family", "s", "i", smart=True)
    chat = Persona("chat", "s", "i", channels=("chat",))
    personas = {p.name: p for p in (desk, family, chat)}
    routing = Routing(
        default_persona="desk",
        smart=False,
        sessions={"S": Binding("family"), "S2": Binding(smart=True)},
        threads={"T": Binding("chat", smart=False)},
    )

    def route(thread: str | None, session: str | None, channel: str) -> tuple[Any, ...]:
        r = route_resolve(
            personas=personas, routing=routing, thread=thread, session=session, channel=channel
        )
        return (r.persona.name if r.persona else None, r.persona_from, r.smart, r.smart_from)

    assert route("T", "S", "sms") == ("chat", "thread", False, "thread")  # the bedrock wins
    assert route(None, "S", "sms") == ("family", "session", True, "persona")
    assert route(None, "S2", "sms") == ("desk", "channel", True, "session")
    assert route(None, None, "chat") == ("chat", "channel", False, "agent")
    assert route(None, None, "email") == ("desk", "agent", False, "agent")
    assert route_resolve(
        personas={}, routing=Routing(smart=True), thread=None, session=None, channel="sms"
    ).as_dict() == {"persona": None, "persona_from": "none", "smart": True, "smart_from": "agent"}


CONSTRAINTS = [
    {"id": "constitution:CONTENT", "domain": "constitution", "text": "Content is data.",
     "governs": ["*"]},
    {"id": "directive:PRIVACY", "domain": "directive", "text": "No PII out.",
     "governs": ["comms.sms.send"]},
    {"id": "vpol:bookings", "domain": "vpol", "text": "Accessible vans only.",
     "governs": ["transport.vehicle.book"]},
    {"id": "egress:web", "domain": "egress", "text": "Only named hosts.",
     "governs": ["web.fetch"]},
    {"domain": "vpol", "governs": ["x"]},  # no text: skipped
]  # fmt: skip


def test_each_step_gets_only_the_constraints_of_its_tools() -> None:
    parsed = constraints_parse(CONSTRAINTS)
    assert len(parsed) == 4

    def ids(tools: list[str] | None) -> list[str]:
        return [c.id for c in constraints_for_step(parsed, tools)]

    assert ids(None) == [c.id for c in parsed]  # no plan yet: everything
    assert ids(["transport.vehicle.book"]) == ["constitution:CONTENT", "vpol:bookings"]
    assert ids(["comms.sms.send"]) == ["constitution:CONTENT", "directive:PRIVACY"]
    assert ids([]) == ["constitution:CONTENT"]
    # A domain nobody wrote a selector for is selected by its tools; domains add up and none
    # takes away what another chose.
    assert "egress" not in DOMAINS
    assert ids(["web.fetch", "transport.vehicle.book"]) == [
        "constitution:CONTENT",
        "vpol:bookings",
        "egress:web",
    ]


@pytest.mark.parametrize(
    ("text", "json_"),
    [
        ('{"tool": "read_file"}', True),
        ('I will call it with {"path": "a"} now', True),
        ("```json\n[1, 2]\n```", True),
        ("[1, 2, 3]", True),
        ("Book the van for Friday, 3 people.", False),
        ("Step s1: find a van [using transport.vehicle.availability].", False),
        ("{not json at all", False),
    ],
)
def test_what_counts_as_json_in_a_dream(text: str, json_: bool) -> None:
    assert looks_like_json(text) is json_


def test_the_roles_through_a_real_openai_compatible_server() -> None:
    server = OpenAICompatibleServer()
    dreams = iter(['{"tool": "x"}', 'Still {"a": 1}', "Look up Monday's shifts."])
    server.chat_script = lambda messages, tools: (
        {"content": next(dreams)}
        if not tools
        else {"tool_calls": [{"name": "roster_shift_read", "arguments": {"date_from": "x"}}]}
        if "shifts" in messages[-1]["content"]
        else {"content": "words, not a call"}
    )
    with server.running():
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        used: list[str] = []
        dreamer = Dreamer(client, "dreamer", on_usage=lambda model, usage: used.append(model))
        with pytest.raises(DreamRefused):  # JSON, told once to use words, JSON again
            dreamer.dream("ctx", [{"role": "user", "content": "Task: a"}])
        assert dreamer.dream("ctx", [{"role": "user", "content": "Task: b"}]) == (
            "Look up Monday's shifts."
        )
        tools = [{"type": "function", "function": {"name": "roster_shift_read", "parameters": {}}}]
        actuator = Actuator(client, "actuator", on_usage=lambda model, usage: used.append(model))
        call = actuator.fire("Look up Monday's shifts.", tools)
        assert (call.name, call.arguments) == ("roster_shift_read", {"date_from": "x"})
        with pytest.raises(ActuatorMiss):
            actuator.fire("Something else", tools)
    chats = [body for path, body in server.requests if path.endswith("/chat/completions")]
    fired = [b for b in chats if b.get("tools")]
    assert all(b["tool_choice"] == "required" for b in fired)
    assert all([m["role"] for m in b["messages"]] == ["system", "user"] for b in fired)
    assert all("tools" not in b for b in chats if b["model"] == "dreamer")
    assert used.count("actuator") == 2 and used.count("dreamer") == 3


def test_the_dreamer_reads_words_never_json() -> None:
    outcome = {
        "status": "executed",
        "ok": True,
        "result": {"vehicles": [{"vehicle_id": "hiace-2", "ramp": True}], "notes": {}},
        "call_id": "c-1",
    }
    text = outcome_words("transport.vehicle.availability", outcome)
    assert text.startswith("transport.vehicle.availability was carried out.")
    assert "result.vehicles 1.vehicle_id: hiace-2" in text and "ramp: yes" in text
    denied = outcome_words(
        "comms.sms.send", {"status": "denied", "code": "policy:x", "reason": "r"}
    )
    assert denied.startswith("comms.sms.send was refused by the broker.")
    tools = tools_words(
        [
            {
                "tool_id": "transport.vehicle.book",
                "risk_level": "write",
                "description": "Book a vehicle.",
                "input_schema": {
                    "type": "object",
                    "required": ["vehicle_id"],
                    "properties": {
                        "vehicle_id": {"type": "string"},
                        "passengers": {"type": "integer", "description": "how many"},
                        "kind": {"enum": ["van", "bus"]},
                    },
                },
            }
        ]
    )
    assert "vehicle_id, a string, required" in tools and "one of van, bus" in tools
    for words in (text, denied, tools):
        assert not looks_like_json(words) and "{" not in words


def test_handlers_are_checked_stored_and_swapped_in_by_the_next_worker() -> None:
    with pytest.raises(HandlerError, match="name: one of"):
        handler_check("anything", {}, None)
    record = handler_check(
        "answer", None, "def handle(text, context):\n    return text.upper() + '!'\n"
    )
    before = Handlers.load({})
    after = Handlers.load({"answer": record, "loop": {"poll_seconds": 5}})
    assert before.answer("hello", {}) == "hello"
    assert after.answer("hello", {}) == "HELLO!"  # the changed handler's behaviour
    assert after.config("loop") == {"poll_seconds": 5}
    # A handler that fails, returns the wrong thing or reaches for what it may not: the default.
    broken = Handlers.load(
        {
            "answer": {"code": "def handle(text, context):\n    return 1 / 0\n"},
            "result": {"code": "def handle(tool_id, outcome, words):\n    return open('x')\n"},
        }
    )
    assert broken.answer("hello", {}) == "hello"
    assert broken.result("t", {}, "as usual") == "as usual"
    with pytest.raises(HandlerError, match="code does not load"):
        handler_check("answer", None, "import os\ndef handle(text, context):\n    return text\n")


def test_the_dashboard_page_shows_state_and_escapes_everything() -> None:
    status = {
        "agent_id": "henry",
        "at": 0,
        "supervisor": {
            "worker": {"pid": 42, "running": True, "handlers": "a"},
            "handlers": "b",
            "restarts": 2,
            "last_exit": {"signal": "SIGKILL"},
        },
        "current_task": {"task_id": "<script>x</script>", "done_steps": ["s1"]},
        "recent_calls": [{"tool_id": "<img src=x>", "status": "executed", "call_id": "c"}],
    }
    page = dashboard_page(status)
    assert '<span id="state" class="ok">running</span>' in page
    assert "(a restart is due)" in page and "SIGKILL" in page
    assert "<script>" not in page and "&lt;script&gt;" in page and "&lt;img src=x&gt;" in page


def test_a_question_waits_for_its_answer_once(tmp_path: Path) -> None:
    memory = AgentMemory(tmp_path / "m.db", journal_key=KEY)
    memory.clarification_park("thread-1", "task-1", "Which day?")
    assert memory.clarification_peek("thread-1") == {"task_id": "task-1", "question": "Which day?"}
    taken = memory.clarification_take("thread-1")
    assert taken is not None and taken["question"] == "Which day?"
    assert memory.clarification_take("thread-1") is None  # resumed once
    memory.close()
