"""Handlers run with timeouts; failures are outcomes. External peers are real local servers."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from broker.handlers import run_handler
from broker.handlers.function import functions_register
from tests import factories as f

RECEIVED: list[dict[str, Any]] = []


class _Peer(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        RECEIVED.append(
            {"path": self.path, "body": body, "call_id": self.headers["X-RABS-Call-Id"]}
        )
        if self.path == "/slow":
            time.sleep(2)
        status = 500 if self.path == "/broken" else 200
        payload = json.dumps({"accepted": True, "echo": body}).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except BrokenPipeError:
            pass  # the broker stopped waiting (the timeout test)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def peer() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Peer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    RECEIVED.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _api_tool(url: str, timeout: float = 5) -> Any:
    return f.ToolFactory.build(
        handler_type="api",
        output_schema={},
        handler_config={"url": url, "method": "POST", "timeout_s": timeout},
    )


def test_api_handler_posts_arguments_and_returns_json(peer: str) -> None:
    call_id = uuid.uuid4()
    result = run_handler(
        tool=_api_tool(f"{peer}/send"), arguments={"to": ["a@b.c"]}, call_id=call_id
    )
    assert result.outcome == "succeeded"
    assert result.output == {"accepted": True, "echo": {"to": ["a@b.c"]}}
    assert [{"path": "/send", "body": {"to": ["a@b.c"]}, "call_id": str(call_id)}] == RECEIVED


def test_api_handler_failures_are_outcomes(peer: str) -> None:
    broken = run_handler(tool=_api_tool(f"{peer}/broken"), arguments={}, call_id=uuid.uuid4())
    assert broken.outcome == "failed" and "HTTP 500" in broken.error
    slow = run_handler(
        tool=_api_tool(f"{peer}/slow", timeout=0.3), arguments={}, call_id=uuid.uuid4()
    )
    assert slow.outcome == "timed_out"
    down = run_handler(tool=_api_tool("http://127.0.0.1:9/x"), arguments={}, call_id=uuid.uuid4())
    assert down.outcome == "failed"


def _sleepy(args: dict[str, Any], *, call_id: Any) -> dict[str, Any]:
    time.sleep(args["seconds"])
    return {}


functions_register({"tests.sleepy": _sleepy})


def test_function_handler_timeout() -> None:
    tool = f.ToolFactory.build(
        handler_config={"callable": "tests.sleepy", "timeout_s": 0.2}, output_schema={}
    )
    result = run_handler(tool=tool, arguments={"seconds": 1}, call_id=uuid.uuid4())
    assert result.outcome == "timed_out" and result.duration_ms < 900


@pytest.fixture
def script_root(settings: Any, tmp_path: Path) -> Path:
    settings.RABS_SCRIPT_ROOT = tmp_path
    (tmp_path / "jobs").mkdir(mode=0o755)
    (tmp_path / "jobs" / "echo.py").write_text(
        "import json, os, sys\n"
        "args = json.load(sys.stdin)\n"
        "print(json.dumps({'args': args, 'cwd': os.getcwd(), 'env': sorted(os.environ)}))\n"
    )
    (tmp_path / "jobs" / "hang.py").write_text("import time\ntime.sleep(5)\n")
    return tmp_path


def _script_tool(argv: list[str], cwd: str = "jobs", timeout: float = 5) -> Any:
    return f.ToolFactory.build(
        handler_type="script",
        output_schema={},
        handler_config={"argv": argv, "cwd": cwd, "timeout_s": timeout},
    )


def test_script_handler_refuses_escape_and_times_out(script_root: Path) -> None:
    escape = run_handler(
        tool=_script_tool(["python", "echo.py"], cwd="../.."), arguments={}, call_id=uuid.uuid4()
    )
    assert escape.outcome == "failed" and "escapes the script root" in escape.error
    hang = run_handler(
        tool=_script_tool(["python", "hang.py"], timeout=0.5), arguments={}, call_id=uuid.uuid4()
    )
    assert hang.outcome == "timed_out"
    shell = run_handler(
        tool=_script_tool(["echo hi; rm -rf /"]), arguments={}, call_id=uuid.uuid4()
    )
    assert shell.outcome == "failed"  # no shell: the whole string is one (missing) program


@pytest.mark.django_db(transaction=True)
def test_sql_handler_binds_parameters_and_is_read_only() -> None:
    agent = f.AgentFactory(agent_id="sqlagent")
    f.ToolCallFactory(agent=agent, requested_tool_id="roster.shift.read")
    config = {
        "query": "SELECT requested_tool_id, count(*) AS calls FROM tool_calls "
        "WHERE agent_id = %(agent)s GROUP BY 1",
        "params": ["agent"],
    }
    tool = f.ToolFactory.build(handler_type="sql", handler_config=config, output_schema={})
    result = run_handler(tool=tool, arguments={"agent": "sqlagent"}, call_id=uuid.uuid4())
    assert result.outcome == "succeeded", result.error
    assert result.output["rows"] == [{"requested_tool_id": "roster.shift.read", "calls": 1}]
    injection = run_handler(tool=tool, arguments={"agent": "x' OR '1'='1"}, call_id=uuid.uuid4())
    assert injection.output["rows"] == []

    writer = f.ToolFactory.build(
        handler_type="sql",
        risk_level="read",
        output_schema={},
        handler_config={"query": "UPDATE agents SET name = 'pwned'", "params": []},
    )
    refused = run_handler(tool=writer, arguments={}, call_id=uuid.uuid4())
    assert refused.outcome == "failed" and "read-only" in refused.error
    slow = f.ToolFactory.build(
        handler_type="sql",
        output_schema={},
        handler_config={"query": "SELECT pg_sleep(3)", "params": [], "timeout_s": 0.3},
    )
    assert run_handler(tool=slow, arguments={}, call_id=uuid.uuid4()).outcome == "timed_out"
