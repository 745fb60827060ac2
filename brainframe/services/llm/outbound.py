"""What leaves for an external model (directive layer 4) and what the record keeps of a body:
personal details replaced by their type unless the agent has consent."""

from __future__ import annotations

import json
from typing import Any

from brainframe.safety.pii import pii_redact

from .admission import Admitted


def _redact_text(text: str) -> tuple[str, int]:
    redacted, findings = pii_redact(text)
    return redacted, len(findings)


def _redact_content(content: Any) -> tuple[Any, int]:
    """A message's content: a string, or a list of parts whose text parts are redacted."""
    if isinstance(content, str):
        return _redact_text(content)
    if isinstance(content, list):
        total, parts = 0, []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                text, count = _redact_text(part["text"])
                part, total = {**part, "text": text}, total + count
            parts.append(part)
        return parts, total
    return content, 0


def outbound(admitted: Admitted, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """What leaves for the upstream (directive layer 4): for an external upstream, unless the
    agent has consent_pii, every message's text and every embedding input with personal
    details replaced by their type (``<PERSON>``); the count of what was taken out."""
    upstream = admitted.upstream
    if upstream is None or not upstream.external or admitted.budget.consent_pii:
        return body, 0
    total = 0
    out = dict(body)
    if isinstance(body.get("messages"), list):
        messages = []
        for message in body["messages"]:
            if isinstance(message, dict) and "content" in message:
                content, count = _redact_content(message["content"])
                message, total = {**message, "content": content}, total + count
            messages.append(message)
        out["messages"] = messages
    if isinstance(body.get("input"), str):
        out["input"], total = _redact_text(body["input"])
    elif isinstance(body.get("input"), list):
        inputs = []
        for item in body["input"]:
            if isinstance(item, str):
                item, count = _redact_text(item)
                total += count
            inputs.append(item)
        out["input"] = inputs
    return out, total


def kept_body(admitted: Admitted | None, body: Any) -> Any:
    """A body as the record keeps it: only when the agent's setting says so, PII-filtered."""
    if admitted is None or not admitted.budget.store_bodies or body is None:
        return None
    text, _ = _redact_text(json.dumps(body, default=str))
    try:
        return json.loads(text)
    except ValueError:  # a redaction broke the JSON's syntax: keep it as text
        return {"redacted": text}
