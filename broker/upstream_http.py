"""The hot path of a forward: one ``tools/call`` to an upstream over Streamable HTTP, sent from the
thread deciding the call, without the SDK's client.

Through the SDK, a forward crossed to the upstreams' event loop thread and back and went through
its transport's memory streams, tasks and an async HTTP client: about a quarter of a web
process's busy time in a forwarded call, more than the decision's own work. Here the worker
thread posts the JSON-RPC message itself on a kept-alive connection (``http.client``) and reads
the answer, JSON or an event stream, as the specification describes it
(``mcp_types`` validates the result as the SDK does). A connection is kept for the next call
after a JSON answer, and after an event stream that ends within ``DRAIN_SECONDS`` of its answer
(the SDK servers' default answer; one still open then is closed).

The session is this path's own (an ``initialize`` handshake at a version both sides speak,
``Mcp-Session-Id`` kept); the SDK's connection stays for listings and change notices. A session
the upstream no longer knows (404) is opened again and the call sent once more: the upstream
refused it, so it did not run. Nothing else is ever sent twice: a connection that fails after a
call was written is the call's failure (it may have run), not a retry. An upstream whose
handshake speaks no version known here, or that asks the client something in the middle of a
call, is left to the SDK's client (``upstream_client``); so is one behind a configured proxy,
and one whose event stream closes before the answer (the SDK's client resumes such streams).

A call's time bounds it as a whole, not each read (``_Reaper`` shuts the socket at the deadline:
an upstream trickling its answer cannot hold a worker thread); an answer over 16 MB, an error
page (never read), or an answer that is not MCP fails the call.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import http.client
import itertools
import json
import logging
import select
import socket
import ssl
import threading
import time
import urllib.request
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
#: How long an event stream may take to end after its answer for its connection to be kept.
DRAIN_SECONDS = 0.05


class Unavailable(Exception):
    """The upstream could not be reached, answered HTTP that is not MCP, or dropped the call."""


class Timeout(Exception):
    pass


class NotLean(Exception):
    """This upstream is for the SDK's client (nothing was sent for the call)."""


class _Reaper:
    """One thread that shuts a connection's socket when its call's deadline passes. A socket
    timeout bounds each read, not the call: an upstream trickling a byte at a time, or a stream
    of keep-alive comments, would hold the worker thread far past the call's time."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, http.client.HTTPConnection]] = []
        self._cancelled: set[int] = set()
        self._fired: set[int] = set()
        self._seq = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def watch(self, deadline: float, connection: http.client.HTTPConnection) -> int:
        with self._wake:
            token = next(self._seq)
            while self._heap and self._heap[0][1] in self._cancelled:  # finished calls
                self._cancelled.discard(heapq.heappop(self._heap)[1])
            heapq.heappush(self._heap, (deadline, token, connection))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="mcp-reaper", daemon=True)
                self._thread.start()
            if self._heap[0][1] == token:
                self._wake.notify()  # the new first deadline; a later one waits its turn
        return token

    def cancel(self, token: int) -> bool:
        """Stop watching; True if the deadline came first (the socket was shut)."""
        with self._wake:
            if token in self._fired:
                self._fired.discard(token)
                return True
            self._cancelled.add(token)
            return False

    def _run(self) -> None:
        with self._wake:
            while True:
                if not self._heap:
                    self._wake.wait()
                    continue
                deadline, token, connection = self._heap[0]
                if token in self._cancelled:
                    heapq.heappop(self._heap)
                    self._cancelled.discard(token)
                    continue
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._wake.wait(wait)
                    continue
                heapq.heappop(self._heap)
                self._fired.add(token)
                sock = connection.sock
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)


_reaper = _Reaper()


@functools.cache
def _tls() -> ssl.SSLContext:
    """The certificates the SDK's client (httpx) trusts: certifi's, when it is installed (read
    once per process, not per connection)."""
    try:
        import certifi  # optional here: httpx's dependency, not ours; absent, the system's

        return ssl.create_default_context(cafile=certifi.where())
    except ImportError:
        return ssl.create_default_context()


def _proxied(scheme: str, host: str) -> bool:
    """A proxy is configured for this upstream (the SDK's client honours it; this path does not
    speak to proxies, so the upstream is the SDK's)."""
    proxies = urllib.request.getproxies()
    return bool(proxies.get(scheme) or proxies.get("all")) and not urllib.request.proxy_bypass(host)


_State = tuple[str | None, str]  # (Mcp-Session-Id, protocol version) of an open session


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
        self.state: _State | None = None
        self.lean = not _proxied(parts.scheme, self.host)
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
                sock = connection.sock
                # Idle too long, or readable while idle (closed by the server, or bytes it
                # should not have sent): never reused.
                if now - since < IDLE_SECONDS and sock is not None and not _readable(sock):
                    sock.settimeout(timeout)
                    return connection
                connection.close()
        if self.https:
            return http.client.HTTPSConnection(
                self.host, self.port, timeout=timeout, context=_tls()
            )
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def _release(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            self._idle.append((time.monotonic(), connection))

    def close(self) -> None:
        with self._lock:
            for _, connection in self._idle:
                connection.close()
            self._idle.clear()

    # --- one message ---------------------------------------------------------------------------

    def _headers(self, state: _State | None) -> dict[str, str]:
        headers = dict(self.headers)
        if state is not None:
            session_id, version = state
            if session_id:
                headers["Mcp-Session-Id"] = session_id
            headers["MCP-Protocol-Version"] = version
        return headers

    def _answer(
        self, request_id: int, message: dict[str, Any], state: _State | None, deadline: float
    ) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
        """(HTTP status, the JSON-RPC answer to ``request_id`` or None, the answer's headers).
        Bounded by ``deadline`` as a whole (``_Reaper``)."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise Timeout("no time left for the call")
        connection = self._connection(left)
        token = _reaper.watch(deadline, connection)
        keep = False
        heard: set[str] = set()
        try:
            body = json.dumps(message, separators=(",", ":")).encode()
            connection.request("POST", self.path, body, self._headers(state))
            response = connection.getresponse()
            headers = {k.lower(): v for k, v in response.getheaders()}
            kind = headers.get("content-type", "").split(";")[0].strip().lower()
            if response.status >= 300 or kind not in ("application/json", "text/event-stream"):
                # Not an MCP answer: nothing read (an error page may be endless); not reused.
                return response.status, None, headers
            if kind == "application/json":
                raw = response.read(MAX_ANSWER_BYTES + 1)
                if len(raw) > MAX_ANSWER_BYTES:
                    raise Unavailable(f"an answer larger than {MAX_ANSWER_BYTES} bytes")
                keep = not response.will_close
                answer = json.loads(raw) if raw else None
                return response.status, self._ours(answer, request_id, heard), headers
            found = None
            for event in _events(response):
                found = self._ours(event, request_id, heard)
                if found is not None:
                    break
            else:
                if "id" in message:
                    # The stream closed before the answer (a server that expects the client to
                    # resume it): the call may have run; the SDK's client resumes, so later
                    # calls go through it.
                    self.lean = False
            if found is not None:
                keep = self._drained(connection, response)
            return response.status, found, headers
        except (OSError, http.client.HTTPException, ValueError, RecursionError) as exc:
            keep = False
            if time.monotonic() >= deadline or isinstance(exc, TimeoutError):
                raise Timeout("no answer within the call's time") from None
            raise Unavailable(f"{type(exc).__name__}: {exc}") from exc
        finally:
            if _reaper.cancel(token):
                keep = False
            if keep:
                self._release(connection)
            else:
                connection.close()
            if heard:  # once per answer, however many notices it carried
                self.on_list_changed()

    def _drained(
        self, connection: http.client.HTTPConnection, response: http.client.HTTPResponse
    ) -> bool:
        """Whether an event stream that gave its answer ends within ``DRAIN_SECONDS`` (a server
        closes the stream after the answer, as the specification says it should), so that its
        connection can carry the next call. A stream still open then (keep-alive comments, later
        messages) is closed with its connection, as before the answer was found."""
        sock = connection.sock
        if sock is None:
            return False
        until = time.monotonic() + DRAIN_SECONDS  # the whole drain, not each read
        try:
            while (left := until - time.monotonic()) > 0:
                sock.settimeout(left)
                if not response.readline(MAX_ANSWER_BYTES):
                    return response.isclosed() and not response.will_close
        except (OSError, http.client.HTTPException, ValueError):
            pass
        return False

    def _ours(self, message: Any, request_id: int, heard: set[str]) -> dict[str, Any] | None:
        """``message`` if it answers ``request_id``; notices heard on the way are noted."""
        if not isinstance(message, dict):
            return None
        if message.get("id") == request_id and ("result" in message or "error" in message):
            return message
        method = message.get("method")
        if method == "notifications/tools/list_changed":
            heard.add(method)
        elif method is not None and "id" in message:
            # The upstream asks this client something mid-call (sampling, elicitation…): the
            # SDK's client would refuse it as not supported; this path cannot answer in the
            # stream, so the call fails rather than hang, and the upstream goes to the SDK.
            self.lean = False
            raise Unavailable(f"the upstream asked the client {method!r} during the call")
        return None

    # --- the session ---------------------------------------------------------------------------

    def open(self, stale: _State | None, deadline: float) -> _State:
        """The session to use: the one open now unless it is ``stale``, else a new ``initialize``
        handshake (one thread at a time; the others wait within their own time)."""
        if not self._opening.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise Timeout("no time left while another call opened the session")
        try:
            if self.state is not None and self.state != stale:
                return self.state
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
                None,
                deadline,
            )
            if answer is None:
                if 400 <= status < 500 and status not in (401, 403, 408, 429):
                    # The upstream refuses this handshake (a newer protocol): the SDK's.
                    self.lean = False
                    raise NotLean(f"initialize answered HTTP {status}")
                raise Unavailable(f"initialize answered HTTP {status}")
            result = answer.get("result")
            version = result.get("protocolVersion") if isinstance(result, dict) else None
            if version not in HANDSHAKE_PROTOCOL_VERSIONS:
                self.lean = False
                raise NotLean(f"initialize answered {str(answer)[:200]}")
            state: _State = (headers.get("mcp-session-id"), str(version))
            # Published only once the upstream was told the handshake is complete.
            self._answer(
                -1, {"jsonrpc": "2.0", "method": "notifications/initialized"}, state, deadline
            )
            self.state = state
            return state
        finally:
            self._opening.release()

    def call(
        self, tool: str, arguments: dict[str, Any], meta: dict[str, Any], timeout: float
    ) -> types.CallToolResult:
        deadline = time.monotonic() + timeout
        state = self.state
        for attempt in (1, 2):
            if state is None:
                state = self.open(None, deadline)
            request_id = next(self._ids)
            params: dict[str, Any] = {"name": tool, "arguments": arguments}
            if meta:
                params["_meta"] = meta
            status, answer, _ = self._answer(
                request_id,
                {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params},
                state,
                deadline,
            )
            if status == 404 and state[0] and attempt == 1:
                # The upstream forgot the session (it restarted): the call was refused, not run.
                state = self.open(state, deadline)
                continue
            return _result(status, answer)
        raise Unavailable("the upstream refused the session twice")


def _result(status: int, answer: dict[str, Any] | None) -> types.CallToolResult:
    """The call's result, or the upstream's JSON-RPC error as ``MCPError``; anything else is an
    upstream that did not answer as MCP says (Unavailable)."""
    if answer is None:
        raise Unavailable(f"HTTP {status} without an answer to the call")
    if "error" in answer:
        error = answer["error"]
        if not isinstance(error, dict):
            raise Unavailable(f"a malformed error: {str(error)[:200]}")
        code = error.get("code")
        raise MCPError(
            code if isinstance(code, int) and not isinstance(code, bool) else -32603,
            str(error.get("message", ""))[:2000],
            error.get("data"),
        )
    try:
        return types.CallToolResult.model_validate(answer["result"])
    except (ValueError, TypeError, RecursionError) as exc:
        raise Unavailable(f"a result that is not a tool result: {exc}") from None


def _readable(sock: socket.socket) -> bool:
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)


def _events(response: http.client.HTTPResponse) -> Iterator[Any]:
    """The JSON messages of a ``text/event-stream`` answer, as they arrive."""
    data: list[str] = []
    read = 0
    while True:
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
