"""Type 1 native helpers for the rest of the app: triage, classify, summarise.

Each helper is a tool call of a Type 1 agent (default ``triage``) through the same pipeline the
agents' HTTP calls take, in-process: validated, assessed, gated, PII-filtered on its way to the
model, hash-chained in the audit with its reason and origin. A helper returns the handler's
result or raises ``NativeUnavailable`` with why (denied, pending review, failed).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from brainframe.models import Agent

from .pipeline.context import CallRequest
from .services.calls import tool_call_submit

DEFAULT_AGENT = "triage"


class NativeUnavailable(Exception):
    def __init__(self, detail: str, answer: dict[str, Any]) -> None:
        super().__init__(detail)
        self.answer = answer


@dataclass(frozen=True)
class NativeResult:
    result: dict[str, Any]
    call_id: str
    r_tag: str | None
    o_tag: str | None


def native_call(
    tool_id: str,
    arguments: dict[str, Any],
    *,
    reason: str,
    agent_id: str = DEFAULT_AGENT,
    origin: dict[str, Any] | None = None,
) -> NativeResult:
    agent = Agent.objects.get(agent_id=agent_id, type=Agent.Type.NATIVE)
    request = CallRequest(
        tool_id=tool_id,
        arguments=arguments,
        reason=reason,
        origin=origin,
        request_hash=hashlib.sha256(
            json.dumps([tool_id, arguments], sort_keys=True, default=str).encode()
        ).hexdigest(),
    )
    body = tool_call_submit(agent=agent, request=request).body
    if body.get("status") != "executed" or body.get("outcome") != "succeeded":
        detail = body.get("error") or body.get("detail") or body.get("code") or body.get("status")
        raise NativeUnavailable(f"{tool_id}: {detail}", body)
    return NativeResult(
        result=dict(body.get("result") or {}),
        call_id=body["call_id"],
        r_tag=body.get("r_tag"),
        o_tag=body.get("o_tag"),
    )


def native_triage(
    text: str, *, channel: str = "email", origin: dict[str, Any] | None = None
) -> NativeResult:
    """Urgency, intent, a one-line summary and the likely buckets of an incoming message."""
    return native_call(
        "native.message.triage",
        {"text": text, "channel": channel},
        reason=f"triage an incoming {channel} message",
        origin=origin,
    )


def native_classify(text: str, labels: list[str]) -> NativeResult:
    return native_call(
        "native.text.classify",
        {"text": text, "labels": labels},
        reason=f"classify a text as one of {', '.join(labels)[:200]}",
    )


def native_summarise(text: str, *, max_words: int = 80) -> NativeResult:
    return native_call(
        "native.text.summarise",
        {"text": text, "max_words": max_words},
        reason="summarise a text for a coordinator",
    )
