"""A small OpenAI-compatible HTTP server for tests: real HTTP, real JSON, driven by the real client.

``/v1/chat/completions`` answers what ``chat_script(messages, tools)`` returns (an assistant
message: ``{"content": ..., "tool_calls": [{"name": ..., "arguments": {...}}]}``), wrapped in
the real response format with token usage, so a test scripts the model, tool calls included.
``/v1/embeddings`` answers deterministic vectors derived from each input's hash (so equal texts
get equal vectors), in the size the request asks for unless ``dimensions_override`` says
otherwise; ``fail_next`` makes the next N requests answer 500. Every request body is recorded.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class OpenAICompatibleServer:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.fail_next = 0
        self.dimensions_override: int | None = None
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
        if self.fail_next > 0:
            self.fail_next -= 1
            return 500, {"error": {"message": "scripted failure", "type": "server_error"}}
        if path.endswith("/embeddings"):
            return 200, self._embeddings(body)
        if path.endswith("/chat/completions"):
            return 200, self._chat(body)
        return 404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}}

    @contextmanager
    def running(self) -> Iterator[OpenAICompatibleServer]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                try:
                    status, payload = server.handle(self.path, body)
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
