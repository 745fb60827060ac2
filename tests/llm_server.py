"""A small OpenAI-compatible HTTP server for tests: real HTTP, real JSON, driven by the real client.

``/v1/embeddings`` answers deterministic vectors derived from each input's hash (so equal texts
get equal vectors), in the size the request asks for unless ``dimensions_override`` says
otherwise; ``fail_next`` makes the next N requests answer 500. Every request body is recorded.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class OpenAICompatibleServer:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.fail_next = 0
        self.dimensions_override: int | None = None
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

    def handle(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.requests.append((path, body))
        if self.fail_next > 0:
            self.fail_next -= 1
            return 500, {"error": {"message": "scripted failure", "type": "server_error"}}
        if path.endswith("/embeddings"):
            return 200, self._embeddings(body)
        return 404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}}

    @contextmanager
    def running(self) -> Iterator[OpenAICompatibleServer]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                status, payload = server.handle(self.path, body)
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
