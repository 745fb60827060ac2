"""The hot path of a forward: one ``tools/call`` to an upstream over Streamable HTTP, sent from the
thread deciding the call, without the SDK's client.

Through the SDK, a forward crossed to the upstreams' event loop thread and back and went through
its transport's memory streams, tasks and an async HTTP client: about a quarter of a web
process's busy time in a forwarded call, more than the decision's own work. Here the worker
thread posts the JSON-RPC message itself on a kept-alive connection (``http.client``) and reads
the answer, JSON or an event stream, as the specification describes it
(``mcp_types`` validates the result as the SDK does).

The session is this path's own (an ``initialize`` handshake at a version both sides speak,
``Mcp-Session-Id`` kept); the SDK's connection stays for listings and change notices. A session
the upstream no longer knows (404) is opened again and the call sent once more: the upstream
refused it, so it did not run. Nothing else is ever sent twice: a connection that fails after a
call was written is the call's failure (it may have run), not a retry. An upstream whose
handshake speaks no version known here, or that asks the client something in the middle of a
call, is left to the SDK's client (``upstream_client``).
"""

from __future__ import annotations

import http.client
import itertools
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

log = logging.getLogger(__name__)

IDLE_SECONDS = 2.0  # a kept-alive connection idle longer is closed, never reused: servers
# commonly close theirs after 5 s, and a call written into a closing connection may be lost.
MAX_ANSWER_BYTES = 16 * 1024 * 1024  # an upstream's answer larger than this fails the call


class Unavailable(Exception):
    """The upstream could not be reached, answered HTTP that is not MCP, or dropped the call."""


class Timeout(Exception):
    pass


class NotLean(Exception):
    """This upstream is for the SDK's client (nothing was sent for the call)."""


class _Session:
    def __init__(self, url: str, headers: dict[str, str], on_list_changed: Callable[[], None]):
        parts = urlsplit(url)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if self.https else 80)
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.headers = {
            **headers,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        self.on_list_changed = on_list_changed
        self.session_id: str | None = None
        self.version: str | None = None
        self.lean = True
        self._ids = itertools.count(1)
        self._idle: list[tuple[float, http.client.HTTPConnection]] = []
        self._lock = threading.Lock()
        self._opening = threading.Lock()

    # --- connections ---------------------------------------------------------------------------

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        now = time.monotonic()
        with self._lock:
            while self._idle:
                since, connection = self._idle.pop()
                if now - since < IDLE_SECONDS and connection.sock is not None:
                    connection.sock.settimeout(timeout)
                    return connection
                connection.close()
        kind = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        return kind(self.host, self.port, timeout=timeout)

    def _release(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            self._idle.append((time.monotonic(), connection))

    def close(self) -> None:
        with self._lock:
            for _, connection in self._idle:
                connection.close()
            self._idle.clear()

    # --- one message ---------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.version:
            headers["MCP-Protocol-Version"] = self.version
        return headers

    def _post(
        self, message: dict[str, Any], timeout: float
    ) -> tuple[http.client.HTTPResponse, http.client.HTTPConnection]:
        connection = self._connection(timeout)
        body = json.dumps(message, separators=(",", ":")).encode()
        try:
            connection.request("POST", self.path, body, self._headers())
            return connection.getresponse(), connection
        except TimeoutError:
            connection.close()
            raise Timeout(f"no answer within {timeout:g}s") from None
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            raise Unavailable(f"{type(exc).__name__}: {exc}") from exc

    def _answer(
        self, request_id: int, message: dict[str, Any], deadline: float
    ) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
        """(HTTP status, the JSON-RPC answer to ``request_id`` or None, the answer's headers)."""
        response, connection = self._post(message, max(0.01, deadline - time.monotonic()))
        keep = False
        try:
            headers = {k.lower(): v for k, v in response.getheaders()}
            kind = headers.get("content-type", "").split(";")[0].strip().lower()
            if response.status >= 300 or kind not in ("application/json", "text/event-stream"):
                response.read()
                keep = not response.will_close
                return response.status, None, headers
            if kind == "application/json":
                body = response.read(MAX_ANSWER_BYTES + 1)
                if len(body) > MAX_ANSWER_BYTES:
                    raise Unavailable(f"an answer larger than {MAX_ANSWER_BYTES} bytes")
                keep = not response.will_close
                answer = json.loads(body) if body else None
                return response.status, self._ours(answer, request_id), headers
            found = None
            for event in _events(response, deadline):
                found = self._ours(event, request_id)
                if found is not None:
                    break
            return response.status, found, headers
        except TimeoutError:
            raise Timeout("no answer within the call's time") from None
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise Unavailable(f"{type(exc).__name__}: {exc}") from exc
        finally:
            if keep:
                self._release(connection)
            else:
                connection.close()

    def _ours(self, message: Any, request_id: int) -> dict[str, Any] | None:
        """``message`` if it answers ``request_id``; notices heard on the way are acted on."""
        if not isinstance(message, dict):
            return None
        if message.get("id") == request_id and ("result" in message or "error" in message):
            return message
        method = message.get("method")
        if method == "notifications/tools/list_changed":
            self.on_list_changed()
        elif method is not None and "id" in message:
            # The upstream asks this client something mid-call (sampling, elicitation…): the
            # SDK's client would refuse it as not supported; this path cannot answer in the
            # stream, so the call fails rather than hang, and the upstream goes to the SDK.
            self.lean = False
            raise Unavailable(f"the upstream asked the client {method!r} during the call")
        return None

    # --- the session ---------------------------------------------------------------------------

    def open(self, timeout: float) -> None:
        """The ``initialize`` handshake (once per session, one thread at a time)."""
        with self._opening:
            if self.version is not None:
                return
            self.session_id = None
            deadline = time.monotonic() + timeout
            status, answer, headers = self._answer(
                0,
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": LATEST_HANDSHAKE_VERSION,
                        "capabilities": {},
                        "clientInfo": {"name": "rabs-brainframe", "version": "1"},
                    },
                },
                deadline,
            )
            if answer is None or "result" not in answer:
                # Not a handshake this path speaks (a newer protocol, or an error): the SDK's.
                self.lean = False
                raise NotLean(f"initialize answered HTTP {status}: {answer}")
            version = (answer["result"] or {}).get("protocolVersion")
            if version not in HANDSHAKE_PROTOCOL_VERSIONS:
                self.lean = False
                raise NotLean(f"protocol version {version!r}")
            self.session_id = headers.get("mcp-session-id")
            self.version = version
            self._answer(-1, {"jsonrpc": "2.0", "method": "notifications/initialized"}, deadline)

    def call(
        self, tool: str, arguments: dict[str, Any], meta: dict[str, Any], timeout: float
    ) -> types.CallToolResult:
        deadline = time.monotonic() + timeout
        for attempt in (1, 2):
            if self.version is None:
                self.open(max(0.01, deadline - time.monotonic()))
            request_id = next(self._ids)
            params: dict[str, Any] = {"name": tool, "arguments": arguments}
            if meta:
                params["_meta"] = meta
            sent_with = self.session_id
            status, answer, _ = self._answer(
                request_id,
                {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params},
                deadline,
            )
            if status == 404 and sent_with and attempt == 1:
                # The upstream forgot the session (it restarted): the call was refused, not run.
                with self._opening:
                    if self.session_id == sent_with:
                        self.version = None
                continue
            if answer is None:
                raise Unavailable(f"HTTP {status} without an answer to the call")
            if "error" in answer:
                error = answer["error"] or {}
                raise MCPError(
                    int(error.get("code", -32603)), str(error.get("message", "")), error.get("data")
                )
            return types.CallToolResult.model_validate(answer["result"])
        raise Unavailable("the upstream refused the session twice")


def _events(response: http.client.HTTPResponse, deadline: float) -> Iterator[Any]:
    """The JSON messages of a ``text/event-stream`` answer, as they arrive."""
    data: list[str] = []
    read = 0
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError
        raw = response.readline(MAX_ANSWER_BYTES + 1)
        read += len(raw)
        if read > MAX_ANSWER_BYTES:
            raise Unavailable(f"an answer larger than {MAX_ANSWER_BYTES} bytes")
        if not raw:
            return
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:
            if data:
                text = "\n".join(data)
                data = []
                if text.strip():
                    yield json.loads(text)
            continue
        field, _, value = line.partition(":")
        if field == "data":
            data.append(value[1:] if value.startswith(" ") else value)


# --- sessions by upstream -------------------------------------------------------------------------

_sessions: dict[str, tuple[Any, _Session]] = {}
_sessions_lock = threading.Lock()


def lean_session(
    name: str, key: Any, url: str, headers: dict[str, str], on_list_changed: Callable[[], None]
) -> _Session | None:
    """This process's session with upstream ``name`` as ``key`` describes it (a changed key is a
    new session), or None once the upstream is known to be the SDK's."""
    with _sessions_lock:
        found = _sessions.get(name)
        if found is None or found[0] != key:
            if found is not None:
                found[1].close()
            found = _sessions[name] = (key, _Session(url, headers, on_list_changed))
    session = found[1]
    return session if session.lean else None


def lean_drop(name: str) -> None:
    with _sessions_lock:
        found = _sessions.pop(name, None)
    if found is not None:
        found[1].close()
