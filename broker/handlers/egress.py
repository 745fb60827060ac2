"""Egress for sandboxed scripts whose tool names allowed hosts (``handler_config["egress"]``).

The sandbox has no network: its namespace holds only a loopback interface. When a tool allows
egress, the call gets a proxy of its own: this process listens on a unix socket that is the only
thing bound into the sandbox (``/run/rabs-egress/proxy.sock``), and a relay inside the sandbox
(``RELAY``, started before the script) turns ``127.0.0.1:3128`` there into that socket, with
``HTTP(S)_PROXY`` pointing at it. Each request — ``CONNECT host:port`` for HTTPS, or an absolute
``http://`` URL — is checked here: the host must match the allowlist (exact, or ``*.suffix``), the
port must be allowed (443 and 80 unless the tool says otherwise), and every address it resolves to
must be public (never loopback, link-local, multicast or unspecified: the control plane's own
services stay out of reach whatever a name resolves to). Refusals answer 403 with the reason and
are kept for the call's record.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import select
import socket
import socketserver
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Inside the sandbox: listen on the sandbox's loopback, relay each connection to the proxy's
#: unix socket, then run the command (argv) and exit with its status. Standard library only.
RELAY = """
import socket, subprocess, sys, threading
def pipe(a, b):
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
def serve(listener):
    while True:
        client, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX)
        upstream.connect("/run/rabs-egress/proxy.sock")
        threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
listener = socket.socket()
listener.bind(("127.0.0.1", 3128))
listener.listen(16)
threading.Thread(target=serve, args=(listener,), daemon=True).start()
sys.exit(subprocess.run(sys.argv[1:]).returncode)
"""
SOCKET_DIR = "/run/rabs-egress"
PROXY_URL = "http://127.0.0.1:3128"


class EgressRefused(Exception):
    pass


@dataclass
class Policy:
    hosts: list[str]
    ports: list[int]
    refused: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, config: dict[str, Any]) -> Policy:
        return cls(
            hosts=[h.lower().rstrip(".") for h in config.get("allow", [])],
            ports=[int(p) for p in config.get("ports", [443, 80])],
        )

    def check(self, host: str, port: int) -> list[tuple[Any, ...]]:
        """The addresses to connect to, or why not."""
        host = host.lower().rstrip(".")
        named = any(
            host == allowed or (allowed.startswith("*.") and host.endswith(allowed[1:]))
            for allowed in self.hosts
        )
        if not named:
            raise EgressRefused(f"egress to {host} is not allowed by this tool")
        if port not in self.ports:
            raise EgressRefused(f"egress to port {port} is not allowed by this tool")
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise EgressRefused(f"{host} does not resolve: {exc}") from None
        for *_, sockaddr in infos:
            address = ipaddress.ip_address(sockaddr[0])
            if (
                address.is_loopback
                or address.is_link_local
                or address.is_multicast
                or address.is_unspecified
            ):
                raise EgressRefused(f"{host} resolves to {address}, which is never reachable")
        return infos


def _read_head(conn: socket.socket) -> bytes:
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = conn.recv(4096)
        if not chunk:
            break
        head += chunk
        if len(head) > 65536:
            raise EgressRefused("request head too large")
    return head


def _relay(a: socket.socket, b: socket.socket) -> None:
    sockets = [a, b]
    while True:
        readable, _, _ = select.select(sockets, [], [], 300)
        if not readable:
            return
        for source in readable:
            data = source.recv(65536)
            if not data:
                return
            (b if source is a else a).sendall(data)


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        conn: socket.socket = self.request
        try:
            head = _read_head(conn)
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            method, target, _ = [*line.split(" ", 2), "", ""][:3]
            if method == "CONNECT":
                host, _, port_text = target.rpartition(":")
                port, rest = int(port_text or 443), b""
            else:
                if not target.startswith("http://"):
                    raise EgressRefused("only CONNECT and absolute http:// requests")
                authority = target[7:].split("/", 1)[0]
                host, _, port_text = authority.partition(":")
                port = int(port_text or 80)
                path = "/" + target[7:].split("/", 1)[1] if "/" in target[7:] else "/"
                rest = head.replace(target.encode(), path.encode(), 1)
            infos = self.server.policy.check(host.strip("[]"), port)
        except (EgressRefused, ValueError) as exc:
            self.server.policy.refused.append(str(exc))
            body = str(exc).encode()
            conn.sendall(
                b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
                + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            return
        family, kind, proto, _, sockaddr = infos[0]
        with socket.socket(family, kind, proto) as upstream:
            upstream.settimeout(30)
            try:
                upstream.connect(sockaddr)
            except OSError as exc:
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n")
                self.server.policy.refused.append(f"{host}:{port}: {exc}")
                return
            upstream.settimeout(None)
            if method == "CONNECT":
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                upstream.sendall(rest)
            _relay(conn, upstream)


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    policy: Policy


@contextlib.contextmanager
def egress_proxy(config: dict[str, Any], directory: Path) -> Iterator[Policy]:
    """A proxy for one call, listening on ``directory/proxy.sock`` while the call runs."""
    path = directory / "proxy.sock"
    server = _Server(str(path), _Handler)
    server.policy = Policy.of(config)
    # The sandbox's user connects: a socket needs write permission to connect to.
    os.chmod(path, 0o666)
    directory.chmod(0o755)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.policy
    finally:
        server.shutdown()
        server.server_close()
