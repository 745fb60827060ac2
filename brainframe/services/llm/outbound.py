"""What leaves for an external model (directive layer 4) and what the record keeps of a body:
personal details replaced by their type unless the agent has consent."""

from __future__ import annotations

import json
from typing import Any

from brainframe.safety.pii.filter import pii_find, pii_redact

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


def _leaves(value: Any, path: tuple[Any, ...] = (), key: str = "") -> list[tuple[Any, ...]]:
    """(path, key, text) of every string in a JSON value, in order."""
    if isinstance(value, str):
        return [(path, key, value)]
    if isinstance(value, list):
        return [leaf for i, item in enumerate(value) for leaf in _leaves(item, (*path, i), key)]
    if isinstance(value, dict):
        return [leaf for k, item in value.items() for leaf in _leaves(item, (*path, k), str(k))]
    return []


def _redact_value(value: Any) -> tuple[Any, int]:
    """Every string in a JSON value redacted, read as one text of ``key: value`` lines (a name
    is found by its context, as in prose; one read of the model for the whole value)."""
    leaves = _leaves(value)
    lines, spans, at = [], [], 0
    for path, key, text in leaves:
        prefix = f"{key}: " if key else ""
        lines.append(prefix + text)
        spans.append((path, at + len(prefix), at + len(prefix) + len(text), text))
        at += len(prefix) + len(text) + 1
    findings = pii_find("\n".join(lines))
    if not findings:
        return value, 0
    out = json.loads(json.dumps(value))  # a copy to write into
    total = 0
    for path, start, end, text in spans:
        inside = [f for f in findings if f.start < end and f.end > start]
        for finding in sorted(inside, key=lambda f: f.start, reverse=True):
            a, b = max(finding.start, start) - start, min(finding.end, end) - start
            text = f"{text[:a]}<{finding.type}>{text[b:]}"
        if inside:
            total += len(inside)
            _put(out, path, text)
    return out, total


def _put(value: Any, path: tuple[Any, ...], text: str) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = text


def _redact_json_text(text: str) -> tuple[str, int]:
    """Text that may be JSON (a tool call's arguments, a tool's result): each string in it
    redacted, and JSON it stays; other text, as text."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return _redact_text(text)
    if not isinstance(parsed, dict | list):
        return _redact_text(text)
    value, count = _redact_value(parsed)
    return (json.dumps(value, ensure_ascii=False), count) if count else (text, 0)


def _redact_tool_result(content: Any) -> tuple[Any, int]:
    """A tool-result message's content (often JSON text): as ``_redact_content``, JSON-aware."""
    if isinstance(content, str):
        return _redact_json_text(content)
    if isinstance(content, list):
        total, parts = 0, []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                text, count = _redact_json_text(part["text"])
                part, total = {**part, "text": text}, total + count
            parts.append(part)
        return parts, total
    return content, 0


def _redact_calls(message: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The arguments of the tool calls an assistant message carries back to the model
    (``tool_calls[].function.arguments``, and the older ``function_call.arguments``)."""
    total = 0
    if isinstance(message.get("tool_calls"), list):
        calls = []
        for call in message["tool_calls"]:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                arguments, count = _redact_json_text(function["arguments"])
                call = {**call, "function": {**function, "arguments": arguments}}
                total += count
            calls.append(call)
        message = {**message, "tool_calls": calls}
    legacy = message.get("function_call")
    if isinstance(legacy, dict) and isinstance(legacy.get("arguments"), str):
        arguments, count = _redact_json_text(legacy["arguments"])
        message = {**message, "function_call": {**legacy, "arguments": arguments}}
        total += count
    return message, total


def _redact_message(message: dict[str, Any]) -> tuple[dict[str, Any], int]:
    total = 0
    if "content" in message:
        if message.get("role") in ("tool", "function"):
            content, total = _redact_tool_result(message["content"])
        else:
            content, total = _redact_content(message["content"])
        message = {**message, "content": content}
    message, count = _redact_calls(message)
    return message, total + count


def outbound(admitted: Admitted, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """What leaves for the upstream (directive layer 4): for an external upstream, unless the
    agent has consent_pii, every message's text (tool results included), the arguments of the
    tool calls the conversation carries, and every embedding input, with personal details
    replaced by their type (``<PERSON>``); the count of what was taken out."""
    upstream = admitted.upstream
    if upstream is None or not upstream.external or admitted.budget.consent_pii:
        return body, 0
    total = 0
    out = dict(body)
    if isinstance(body.get("messages"), list):
        messages = []
        for message in body["messages"]:
            if isinstance(message, dict):
                message, count = _redact_message(message)
                total += count
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
