"""Script tools run in the OS sandbox: real escape attempts by a script tool Henry calls through
the broker, each refused or killed and recorded as the call's outcome; one legitimate script that
works; and a missing sandbox refusing every script (fail closed)."""

from __future__ import annotations

import os
import socket
import subprocess
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command

from brainframe.models import Deliverable, ToolCall
from broker.handlers import sandbox
from tests import factories as f
from tests.signing import SignedClient

CALLS = "/api/v1/tool-calls/"


@pytest.fixture
def tools_dir(settings: Any, tmp_path: Path) -> Path:
    settings.RABS_SCRIPT_ROOT = tmp_path
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    jobs.chmod(0o755)  # the sandbox's user reads the tool's directory, nothing else of the host
    return jobs


def _call(
    henry: SignedClient,
    tools_dir: Path,
    source: str,
    *,
    arguments: dict[str, Any] | None = None,
    **config: Any,
) -> dict[str, Any]:
    """Register ``source`` as a script tool, call it as Henry through the broker's API."""
    name = f"attempt_{uuid.uuid4().hex[:8]}"
    (tools_dir / f"{name}.py").write_text(textwrap.dedent(source))
    (tools_dir / f"{name}.py").chmod(0o644)
    f.ToolFactory(
        tool_id=f"test.script.{name}",
        agent_access=["henry"],
        handler_type="script",
        handler_config={"argv": ["python", f"{name}.py"], "cwd": "jobs", **config},
        input_schema={"type": "object"},
        output_schema={},
    )
    response = henry.post(
        CALLS,
        {"tool_id": f"test.script.{name}", "arguments": arguments or {}, "reason": "attempt"},
    )
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    call = ToolCall.objects.get(pk=body["call_id"])
    assert (call.outcome, call.error) == (body["outcome"], body.get("error", "")), "not recorded"
    return body


def _refused(body: dict[str, Any], *expected: str) -> None:
    assert body["outcome"] == "failed", f"the attempt succeeded: {body.get('result')}"
    assert any(word in body["error"] for word in expected), body["error"]


@pytest.mark.parametrize(
    "path",
    [
        "/etc/shadow",
        str(Path(settings.BASE_DIR) / ".env"),
        str(Path(settings.BASE_DIR) / "manage.py"),
        str(Path(settings.BASE_DIR) / "var"),
        str(Path(settings.MEDIA_ROOT)),
        os.path.expanduser("~"),
    ],
)
def test_reads_outside_the_sandbox_find_nothing(
    henry: SignedClient, tools_dir: Path, path: str
) -> None:
    body = _call(
        henry,
        tools_dir,
        f"""
        import os, json
        path = {path!r}
        data = os.listdir(path) if os.path.isdir(path) else open(path).read()
        if not data and os.path.isdir(path):
            raise FileNotFoundError("empty directory: " + path)
        print(json.dumps({{"read": str(data)[:200]}}))
        """,
    )
    _refused(body, "FileNotFoundError", "PermissionError")


def test_the_embedded_database_and_redis_are_out_of_reach(
    henry: SignedClient, tools_dir: Path
) -> None:
    """Their unix sockets are not in the sandbox; TCP to the host's loopback (where the broker,
    PostgreSQL and Redis of this machine listen) and to an outside address goes nowhere."""
    sockets = [
        str(Path(settings.DATABASES["default"]["HOST"]) / ".s.PGSQL.5432"),
        settings.REDIS.cache.removeprefix("unix://"),
    ]
    for target in sockets:
        body = _call(
            henry,
            tools_dir,
            f"""
            import socket
            s = socket.socket(socket.AF_UNIX)
            s.connect({target!r})
            print('{{"connected": true}}')
            """,
        )
        _refused(body, "FileNotFoundError", "ConnectionRefusedError")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        for host, port_ in (("127.0.0.1", port), ("127.0.0.1", 5432), ("1.1.1.1", 443)):
            body = _call(
                henry,
                tools_dir,
                f"""
                import socket
                socket.create_connection(({host!r}, {port_}), timeout=3)
                print('{{"connected": true}}')
                """,
            )
            _refused(body, "ConnectionRefusedError", "Network is unreachable", "PermissionError")
    finally:
        listener.close()


def test_writes_outside_the_workspace_are_refused(henry: SignedClient, tools_dir: Path) -> None:
    for target in ("/tool/planted.py", "/usr/planted", "/planted", "/proc/1/root/planted"):
        body = _call(henry, tools_dir, f"open({target!r}, 'w').write('x')\n")
        _refused(body, "Read-only file system", "PermissionError", "FileNotFoundError")
    assert not (tools_dir / "planted.py").exists()
    # /tmp inside is the call's own workspace: a file written there never reaches the host's /tmp.
    marker = f"rabs-escape-{uuid.uuid4().hex}"
    body = _call(henry, tools_dir, f"open('/tmp/{marker}', 'w').write('x')\nprint('{{}}')\n")
    assert body["outcome"] == "succeeded"
    assert not Path("/tmp", marker).exists()


def test_proc_1_root_does_not_lead_to_the_host(henry: SignedClient, tools_dir: Path) -> None:
    body = _call(
        henry,
        tools_dir,
        """
        import os, json
        print(json.dumps({"host": os.listdir("/proc/1/root/etc")}))
        """,
    )
    _refused(body, "PermissionError", "FileNotFoundError")


def test_a_fork_bomb_hits_the_process_limit(henry: SignedClient, tools_dir: Path) -> None:
    body = _call(
        henry,
        tools_dir,
        """
        import os, time
        while True:
            if os.fork() == 0:
                time.sleep(30)
                os._exit(0)
        """,
        limits={"nproc": 16},
    )
    _refused(body, "BlockingIOError", "Resource temporarily unavailable")
    call = ToolCall.objects.get(pk=body["call_id"])
    assert call.duration_ms is not None and call.duration_ms < 5000, "stopped by the timeout"


def test_memory_and_cpu_limits_kill(henry: SignedClient, tools_dir: Path) -> None:
    memory = _call(henry, tools_dir, "data = bytearray(2 * 1024 ** 3)\nprint('{}')\n")
    _refused(memory, "MemoryError")
    spin = _call(henry, tools_dir, "while True:\n    pass\n", limits={"cpu_s": 1}, timeout_s=20)
    _refused(spin, "CPU time limit")
    call = ToolCall.objects.get(pk=spin["call_id"])
    assert call.duration_ms is not None and call.duration_ms < 10_000, "not killed at 1 s of CPU"


def _alive(marker: str) -> list[int]:
    """Processes with ``marker`` in their command line, after the kernel has had a moment to
    finish killing the call's PID namespace (its last processes go with bwrap's exit)."""
    deadline = time.monotonic() + 1.0
    while (found := _processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return found


def _processes(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_nothing_outlives_the_call(henry: SignedClient, tools_dir: Path) -> None:
    """A daemonised child (double fork, new session, stdio closed) dies with the call; so does
    everything of a script killed at its wall-clock timeout."""
    marker = f"rabs-left-behind-{uuid.uuid4().hex}"
    body = _call(
        henry,
        tools_dir,
        f"""
        import os, subprocess
        subprocess.Popen(
            ["python3", "-c", "import time; time.sleep(300)", {marker!r}],
            start_new_session=True, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        print('{{"started": true}}')
        """,
    )
    assert body["outcome"] == "succeeded", body
    assert _alive(marker) == []
    marker = f"rabs-timed-out-{uuid.uuid4().hex}"
    body = _call(
        henry,
        tools_dir,
        f"""
        import subprocess, time
        subprocess.Popen(["python3", "-c", "import time; time.sleep(300)", {marker!r}])
        time.sleep(300)
        """,
        timeout_s=1,
    )
    assert body["outcome"] == "timed_out"
    assert _alive(marker) == []


def test_a_legitimate_script_reads_its_input_writes_its_workspace_and_answers(
    henry: SignedClient, tools_dir: Path
) -> None:
    source = """
        import json, os, sys
        args = json.load(sys.stdin)
        path = os.path.join(os.environ["RABS_WORKSPACE"], "summary.csv")
        with open(path, "w") as out:
            out.write("name,total\\n" + "".join(f"{k},{v}\\n" for k, v in args["totals"].items()))
        print(json.dumps({"rows": len(args["totals"]), "size": os.path.getsize(path),
                          "cwd": os.getcwd(), "uid": os.getuid(), "env": sorted(os.environ)}))
        """
    body = _call(henry, tools_dir, source, arguments={"totals": {"ana": 3, "ben": 5}})
    assert body["outcome"] == "succeeded", body
    assert body["result"]["rows"] == 2 and body["result"]["size"] == 23
    assert body["result"]["cwd"] == "/tool" and body["result"]["uid"] == 65534
    minimal = {"PATH", "LANG", "HOME", "TMPDIR", "PWD", "RABS_WORKSPACE", "RABS_CALL_ID"}
    assert set(body["result"]["env"]) <= minimal | {"LD_LIBRARY_PATH"}
    assert not Deliverable.objects.exists(), "the workspace is dropped unless kept"
    kept = _call(
        henry, tools_dir, source, arguments={"totals": {"ana": 3, "ben": 5}}, keep_outputs=True
    )
    assert kept["outcome"] == "succeeded", kept
    (deliverable,) = Deliverable.objects.all()
    assert kept["result"]["deliverables"] == [
        {"id": str(deliverable.id), "filename": "summary.csv", "sha256": deliverable.sha256}
    ]
    assert deliverable.agent_id == "henry"
    assert deliverable.file.read() == b"name,total\nana,3\nben,5\n"


@pytest.fixture
def no_bwrap(settings: Any) -> Iterator[None]:
    settings.RABS_SANDBOX = {**settings.RABS_SANDBOX, "bwrap": "/nonexistent/bwrap"}
    sandbox.sandbox_status.cache_clear()
    yield
    sandbox.sandbox_status.cache_clear()


def test_without_bubblewrap_scripts_are_refused_and_check_warns(
    henry: SignedClient, tools_dir: Path, no_bwrap: None, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tools_dir / "ran"
    body = _call(henry, tools_dir, f"open({str(marker)!r}, 'w').write('x')\nprint('{{}}')\n")
    _refused(body, "sandbox unavailable, script refused: /nonexistent/bwrap not found")
    assert not marker.exists()
    call_command("check")
    printed = capsys.readouterr()
    assert "broker.W001" in printed.out + printed.err


def _public_address() -> str:
    """An address of this machine that is not loopback (the proxy refuses loopback)."""
    for address in subprocess.run(
        ["hostname", "-I"], capture_output=True, text=True
    ).stdout.split():
        if "." in address and not address.startswith("127."):
            return address
    pytest.skip("no non-loopback IPv4 address on this machine to serve an allowed host from")


def test_egress_only_to_the_hosts_the_tool_allows(henry: SignedClient, tools_dir: Path) -> None:
    """The tool's allowlist is the only way out, through the call's own proxy: an allowed host
    answers; a host not on the list, and a name that resolves to loopback (where the control
    plane's services listen), are refused and the refusal is in the call's record."""

    class Hello(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = f"hello from {self.path}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("0.0.0.0", 0), Hello)  # the test's own server, all interfaces
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address, port = _public_address(), server.server_address[1]
    fetch = """
        import json, sys, urllib.request
        url = json.load(sys.stdin)["url"]
        print(json.dumps({"body": urllib.request.urlopen(url, timeout=10).read().decode()}))
        """
    egress = {"allow": [address, "localhost"], "ports": [port]}
    try:
        allowed = _call(
            henry, tools_dir, fetch, arguments={"url": f"http://{address}:{port}/x"}, egress=egress
        )
        assert allowed["outcome"] == "succeeded", allowed
        assert allowed["result"] == {"body": "hello from /x"}
        for url, why in (
            (f"http://localhost:{port}/", "resolves to 127.0.0.1, which is never reachable"),
            (f"http://other.invalid:{port}/", "egress to other.invalid is not allowed"),
            (f"http://{address}:{port + 1}/", f"egress to port {port + 1} is not allowed"),
        ):
            refused = _call(henry, tools_dir, fetch, arguments={"url": url}, egress=egress)
            _refused(refused, why)
            assert "403" in refused["error"]
        # Without an allowlist there is no proxy at all: the same script finds no way out.
        alone = _call(henry, tools_dir, fetch, arguments={"url": f"http://{address}:{port}/"})
        _refused(alone, "Network is unreachable", "URLError")
    finally:
        server.shutdown()


def test_landlock_is_a_second_layer_where_the_kernel_has_it(
    henry: SignedClient, tools_dir: Path
) -> None:
    """With Landlock, even the sandbox's own tree outside the allowed paths is refused (its root
    directory, which the mount namespace alone lets a script list)."""
    why = sandbox.landlock_status()
    if why:
        pytest.skip(f"no Landlock layer here: {why}")
    body = _call(henry, tools_dir, "import os, json\nprint(json.dumps(os.listdir('/')))\n")
    _refused(body, "PermissionError: [Errno 13] Permission denied: '/'")
    plain = _call(
        henry, tools_dir, "import os, json\nprint(json.dumps({'tool': os.listdir('/tool')}))\n"
    )
    assert plain["outcome"] == "succeeded" and plain["result"]["tool"]
