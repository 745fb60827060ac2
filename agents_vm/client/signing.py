"""RABS-HMAC, shared by the agent SDK and the broker that verifies it (no dependencies)."""

from __future__ import annotations

import hashlib
import hmac


def string_to_sign(method: str, path_with_query: str, ts: str, nonce: str, body: bytes) -> bytes:
    digest = hashlib.sha256(body).hexdigest()
    return f"{method.upper()}\n{path_with_query}\n{ts}\n{nonce}\n{digest}".encode()


def sign(secret: bytes, method: str, path_with_query: str, ts: str, nonce: str, body: bytes) -> str:
    """Hex HMAC-SHA256 under the agent's secret of the request's canonical string."""
    return hmac.new(
        secret, string_to_sign(method, path_with_query, ts, nonce, body), hashlib.sha256
    ).hexdigest()
