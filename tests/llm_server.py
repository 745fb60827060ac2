"""A small OpenAI-compatible HTTP server for tests: real HTTP, real JSON, driven by the real client.

``/v1/chat/completions`` answers what ``chat_script(messages, tools)`` returns (an assistant
message: ``{"content": ..., "tool_calls": [{"name": ..., "arguments": {...}}]}``), wrapped in
the real response format with token usage, so a test scripts the model, tool calls included.
With ``stream: true`` the same answer comes as server-sent events: the content a word per
chunk, ``stream_gap`` seconds apart, then the tool calls, the finish reason, and a usage chunk
when ``stream_options.include_usage`` asks for it. ``/v1/embeddings`` answers deterministic
vectors derived from each input's hash (so equal texts get equal vectors), in the size the
request asks for unless ``dimensions_override`` says otherwise; ``fail_next`` makes the next N
requests answer 500; ``api_key`` makes it refuse other keys; ``function_name_rule`` refuses, as
OpenAI does, a chat offering a tool whose name breaks its rule. Every request body is recorded.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: OpenAI's rule for a function name (``tools[].function.name``).
FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class _Answered(Exception):
    pass


class OpenAICompatibleServer:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.fail_next = 0
        self.stream_gap = 0.0
        self.peak = 0  # with hold_each_chat: the most chat requests answered at once
        self.api_key = ""  # when set, requests without this bearer key get a 401
        self.dimensions_override: int | None = None
        self.function_name_rule = False  # when set, tools with names OpenAI refuses get its 400
        self.chat_script: Callable[[list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]]
        self.chat_script = lambda messages, tools: {"content": "ok"}
        self._ids = 0
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @staticmethod
    def vector_for(text: str, dims: int) -> list[float]:
        out: list[float] = []
        counter = 0
        while len(out) < dims:
            block = hashlib.sha256(f"{counter}:{text}".encode()).digest()
            out += [b / 255.0 - 0.5 for b in struct.unpack("32B", block)]
            counter += 1
        return out[:dims]

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        dims = self.dimensions_override or int(body.get("dimensions") or 1536)
        return {
            "object": "list",
            "model": body.get("model", ""),
            "data": [
                {"object": "embedding", "index": i, "embedding": self.vector_for(text, dims)}
                for i, text in enumerate(inputs)
            ],
            "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)},
        }

    def _chat(self, body: dict[str, Any]) -> dict[str, Any]:
        reply = self.chat_script(body.get("messages", []), body.get("tools") or [])
        with self._lock:
            self._ids += 1
            n = self._ids
        calls = [
            {
                "id": call.get("id") or f"call_{n}_{i}",
                "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
            }
            for i, call in enumerate(reply.get("tool_calls") or [])
        ]
        message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
        if calls:
            message["tool_calls"] = calls
        prompt = sum(len(json.dumps(m)) for m in body.get("messages", [])) // 4
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": 20,
                "total_tokens": prompt + 20,
            },
        }

    def handle(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.requests.append((path, body))
        refused = self._function_name_refused(body) if self.function_name_rule else None
        if refused is not None:
            return 400, refused
        if self.fail_next > 0:
            self.fail_next -= 1
            return 500, {"error": {"message": "scripted failure", "type": "server_error"}}
        if path.endswith("/embeddings"):
            return 200, self._embeddings(body)
        if path.endswith("/chat/completions"):
            return 200, self._chat(body)
        return 404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}}

    def _function_name_refused(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """OpenAI's answer to a tool whose function name breaks its rule (Anthropic's is the
        same): what an agent framework meets when it hands the model MCP names unchanged."""
        for i, tool in enumerate(body.get("tools") or []):
            name = (tool.get("function") or {}).get("name", "")
            if not FUNCTION_NAME.fullmatch(str(name)):
                return {
                    "error": {
                        "message": f"Invalid 'tools[{i}].function.name': string does not match "
                        f"pattern. Expected a string that matches the pattern "
                        f"'^[a-zA-Z0-9_-]{{1,64}}$'. Received {name!r}",
                        "type": "invalid_request_error",
                        "param": f"tools[{i}].function.name",
                        "code": "invalid_value",
                    }
                }
        return None

    def hold_each_chat(self, seconds: float, content: str = "done") -> None:
        """Answer every chat after ``seconds``, keeping in ``peak`` the most answered at once."""
        inside = 0
        self.peak = 0

        def slow(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
            nonlocal inside
            with self._lock:
                inside += 1
                self.peak = max(self.peak, inside)
            time.sleep(seconds)
            with self._lock:
                inside -= 1
            return {"content": content}

        self.chat_script = slow

    def chunks(self, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The answer to ``body`` as stream chunks."""
        whole = self._chat(body)
        base = {k: whole[k] for k in ("id", "created", "model")}
        base["object"] = "chat.completion.chunk"
        message, choice = whole["choices"][0]["message"], whole["choices"][0]
        yield {**base, "choices": [{"index": 0, "delta": {"role": "assistant"}}]}
        words = (message.get("content") or "").split(" ")
        for i, word in enumerate(words):
            text = word if i == len(words) - 1 else word + " "
            if text:
                yield {**base, "choices": [{"index": 0, "delta": {"content": text}}]}
        for i, call in enumerate(message.get("tool_calls") or []):
            delta = {"tool_calls": [{"index": i, **call}]}
            yield {**base, "choices": [{"index": 0, "delta": delta}]}
        finish = {"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}
        yield {**base, "choices": [finish]}
        if (body.get("stream_options") or {}).get("include_usage"):
            yield {**base, "choices": [], "usage": whole["usage"]}

    @contextmanager
    def running(self) -> Iterator[OpenAICompatibleServer]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True  # else every answer waits ~40 ms for its ACK

            def _stream(self, body: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for chunk in server.chunks(body):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    if server.stream_gap:
                        time.sleep(server.stream_gap)
                self.wfile.write(b"data: [DONE]\n\n")
                self.close_connection = True

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if server.api_key and self.headers.get("Authorization") != (
                    f"Bearer {server.api_key}"
                ):
                    status, payload = 401, {"error": {"message": "bad key", "type": "auth"}}
                elif (
                    body.get("stream")
                    and self.path.endswith("/chat/completions")
                    and not (server.function_name_rule and server._function_name_refused(body))
                ):
                    server.requests.append((self.path, body))
                    self._stream(body)
                    return
                else:
                    status, payload = -1, {}
                try:
                    if status == 401:
                        raise _Answered

                    status, payload = server.handle(self.path, body)
                except _Answered:
                    pass
                except Exception as exc:  # a broken script shows up in the test, not as a hang
                    server.errors.append(repr(exc))
                    status, payload = 500, {"error": {"message": repr(exc), "type": "script"}}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._httpd.shutdown()
            self._httpd.server_close()
