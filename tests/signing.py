"""A test client that signs requests with RABS-HMAC exactly as an agent must."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from django.test import Client

from agents_vm.client.signing import sign


class SignedClient:
    def __init__(self, client: Client, agent_id: str, secret: str) -> None:
        self.client = client
        self.agent_id = agent_id
        self.secret = secret.encode()

    def headers(
        self,
        method: str,
        path: str,
        body: bytes,
        *,
        ts: int | None = None,
        nonce: str | None = None,
    ) -> dict[str, str]:
        ts_text = str(int(time.time()) if ts is None else ts)
        nonce = nonce or secrets.token_hex(16)
        sig = sign(self.secret, method, path, ts_text, nonce, body)
        return {
            "HTTP_AUTHORIZATION": f"RABS-HMAC agent={self.agent_id},ts={ts_text},"
            f"nonce={nonce},sig={sig}"
        }

    def get(self, path: str, **extra: Any) -> Any:
        return self.client.get(path, **self.headers("GET", path, b""), **extra)

    def post(
        self,
        path: str,
        data: Any = None,
        *,
        raw: bytes | None = None,
        content_type: str = "application/json",
        **extra: Any,
    ) -> Any:
        body = raw if raw is not None else json.dumps(data if data is not None else {}).encode()
        headers = {**self.headers("POST", path, body), **extra}
        return self.client.generic("POST", path, body, content_type=content_type, **headers)


def signed_request(
    base_url: str, agent_id: str, secret: str, method: str, path: str, payload: Any = None
) -> Any:
    """One signed request to a running server (httpx), as an agent's SDK would send it."""
    import httpx

    body = b"" if payload is None else json.dumps(payload).encode()
    headers = SignedClient(None, agent_id, secret).headers(method, path, body)  # type: ignore[arg-type]
    return httpx.request(
        method,
        f"{base_url}{path}",
        content=body or None,
        timeout=30,
        headers={
            "Authorization": headers["HTTP_AUTHORIZATION"],
            "Content-Type": "application/json",
        },
    )
