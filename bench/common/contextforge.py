"""ContextForge and the upstreams for ``bench/mcp_load.py``: ContextForge 1.1.0 in a venv of its own
(Python 3.12, never the project's environment), the upstream MCP servers it and our gateway forward
to, and the processes' lifetimes."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
CF_VENV = ROOT / "var" / "bench" / "contextforge-venv"
CF_PACKAGES = ["mcp-contextforge-gateway==1.1.0", "mcp-server-time==2026.10.19"]
CF_PYTHON = "/root/.pyenv/versions/3.12.1/bin/python"
WORK = ROOT / "var" / "bench" / "contextforge"


def _free_port() -> int:
    from rabs.stack.devstack import free_port

    return free_port()


def _python312() -> str:
    """A Python 3.12 that runs (pyenv's ``python3.12`` shim is on PATH but fails unless 3.12 is
    selected, so the interpreters themselves come first)."""
    pyenv = sorted(Path.home().glob(".pyenv/versions/3.12.*/bin/python"), reverse=True)
    for candidate in filter(None, [CF_PYTHON, *map(str, pyenv), shutil.which("python3.12")]):
        if subprocess.run([candidate, "--version"], capture_output=True).returncode == 0:
            return candidate
    raise SystemExit("ContextForge needs Python 3.12: none found")


def ensure_contextforge() -> Path:
    python = CF_VENV / "bin" / "python"
    if not python.exists():
        base = _python312()
        print(f"installing {', '.join(CF_PACKAGES)} into {CF_VENV} (benchmark only)")
        subprocess.run([base, "-m", "venv", str(CF_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *CF_PACKAGES], check=True)
    return python


@contextmanager
def _process(args: list[str], log: Path, env: dict[str, str] | None = None) -> Iterator[None]:
    with open(log, "wb") as out:
        process = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=WORK, start_new_session=True
        )
    try:
        yield
    finally:
        os.killpg(process.pid, 15)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)


TS_SDK = ROOT / "var" / "clients" / "ts"


@contextmanager
def upstream(python: Path, name: str, kind: str) -> Iterator[str]:
    """The upstream: ``node``, ``bench/upstream_time.mjs`` (the official TypeScript SDK's server,
    Streamable HTTP at ``/mcp``); ``time``, ``mcp-server-time`` over stdio, exposed at ``/mcp`` by
    ContextForge's bridge."""
    from bench.common.stack import wait_for_answer  # bench/ is not on the path at import

    port = _free_port()
    if kind == "node":
        if not (TS_SDK / "node_modules" / ".installed").exists():
            raise SystemExit("the node upstream needs the TypeScript SDK: make clients")
        script = TS_SDK / "upstream_time.mjs"  # beside node_modules: ES modules look there
        shutil.copyfile(ROOT / "bench" / "upstream_time.mjs", script)
        with _process(
            ["node", str(script), str(port)], WORK / f"upstream-{name}.log", {**os.environ}
        ):
            url = f"http://127.0.0.1:{port}/mcp"
            wait_for_answer(f"http://127.0.0.1:{port}/health", timeout=60)
            yield url
        return
    command = f"{python} -m mcp_server_time"
    args = [str(python), "-m", "mcpgateway.translate", "--stdio", command,
            "--expose-streamable-http", "--port", str(port)]  # fmt: skip
    env = {**os.environ, **_cf_env()}
    with _process(args, WORK / f"upstream-{name}.log", env):
        url = f"http://127.0.0.1:{port}/mcp"
        wait_for_answer(url, timeout=60)
        yield url


def _secrets(python: Path) -> None:
    """Fresh secrets for this run (ContextForge refuses to start on its placeholders)."""
    WORK.mkdir(parents=True, exist_ok=True)
    secrets = subprocess.run(
        [str(python), "-m", "mcpgateway.scripts.init_secrets", "--stdout"],
        capture_output=True, text=True, check=True, cwd=WORK,
    ).stdout  # fmt: skip
    (WORK / "secrets.env").write_text(secrets)


def _cf_env() -> dict[str, str]:
    secrets = {}
    env_file = WORK / "secrets.env"
    for line in env_file.read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            secrets[key.strip()] = value.strip()
    return {
        **secrets,
        "DATABASE_URL": f"sqlite:///{WORK / 'cf.db'}",
        "MCPGATEWAY_UI_ENABLED": "false",
        "MCPGATEWAY_ADMIN_API_ENABLED": "true",
        "SSRF_ALLOW_LOCALHOST": "true",
        "RATE_LIMITING_ENABLED": "false",
        "USE_STATEFUL_SESSIONS": "true",
        "PLATFORM_ADMIN_EMAIL": "admin@example.com",
        "LOG_LEVEL": "ERROR",
    }


@contextmanager
def contextforge(python: Path, upstream_url: str) -> Iterator[tuple[str, str, str]]:
    """ContextForge forwarding to ``upstream_url``: (its MCP URL, a JWT, the tool's name)."""
    from bench.common.stack import wait_for_answer  # bench/ is not on the path at import

    for stale in WORK.glob("cf.db*"):
        stale.unlink()
    env = {**os.environ, **_cf_env()}
    port = _free_port()
    with _process(
        [str(CF_VENV / "bin" / "mcpgateway"), "--host", "127.0.0.1", "--port", str(port)],
        WORK / "contextforge.log",
        env,
    ):
        base = f"http://127.0.0.1:{port}"
        wait_for_answer(f"{base}/health")
        # ``--secret=…`` in one word: a secret may begin with "-" (one in 64 runs failed so).
        jwt = subprocess.run(
            [str(python), "-m", "mcpgateway.utils.create_jwt_token", "-u", "admin@example.com",
             "--admin", "-e", "240", f"--secret={env['JWT_SECRET_KEY']}"],
            capture_output=True, text=True, check=True, env=env, cwd=WORK,
        ).stdout.strip().splitlines()[-1]  # fmt: skip
        headers = {"Authorization": f"Bearer {jwt}"}
        gateway = httpx.post(
            f"{base}/gateways",
            json={"name": "time", "url": upstream_url, "transport": "STREAMABLEHTTP"},
            headers=headers,
            timeout=60,
        )
        gateway.raise_for_status()
        tools = httpx.get(f"{base}/tools", headers=headers, timeout=30).json()
        tools = tools if isinstance(tools, list) else tools.get("items", [])
        tool = next(t for t in tools if t["name"].endswith("get-current-time"))
        server = httpx.post(
            f"{base}/servers",
            json={"server": {"name": "bench", "associated_tools": [tool["id"]]}},
            headers=headers,
            timeout=30,
        )
        server.raise_for_status()
        yield f"{base}/servers/{server.json()['id']}/mcp", jwt, tool["name"]


@contextmanager
def contextforge_and_upstreams(python: Path, kind: str) -> Iterator[tuple[str, str, str, str, str]]:
    """ContextForge (URL, JWT, tool) and three copies of the upstream: ours, ContextForge's, and
    one measured alone (a bridge that has spoken the newer protocol refuses the older one)."""
    _secrets(python)  # ContextForge's bridge refuses to start without them too
    with (
        upstream(python, "ours", kind) as ours,
        upstream(python, "contextforge", kind) as theirs,
        upstream(python, "alone", kind) as alone,
        contextforge(python, theirs) as (url, jwt, tool),
    ):
        yield url, jwt, tool, ours, alone
