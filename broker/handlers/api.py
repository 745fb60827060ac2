"""``api`` handlers: an HTTP call to the configured URL with the arguments as JSON."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from brainframe.models import Tool

from .base import HandlerFailure, HandlerTimeout


def run(*, tool: Tool, arguments: dict[str, Any], call_id: uuid.UUID, timeout: float) -> Any:
    config = tool.handler_config
    method = config["method"]
    headers = {**config.get("headers", {}), "X-RABS-Call-Id": str(call_id)}
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False) as client:
            if method in ("GET", "DELETE"):
                response = client.request(method, config["url"], params=arguments, headers=headers)
            else:
                response = client.request(method, config["url"], json=arguments, headers=headers)
    except httpx.TimeoutException:
        raise HandlerTimeout(f"{config['url']} did not answer within {timeout:g}s") from None
    except httpx.HTTPError as exc:
        raise HandlerFailure(f"api: {type(exc).__name__}: {exc}") from None
    if response.status_code >= 400:
        raise HandlerFailure(f"api: HTTP {response.status_code}: {response.text[:300]}")
    if not response.content:
        return {"status": response.status_code}
    try:
        return response.json()
    except ValueError:
        return {"status": response.status_code, "text": response.text[:10000]}
