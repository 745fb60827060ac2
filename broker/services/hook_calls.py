"""A hook's ``invoke`` effect: a tool call submitted as the hook's agent, through the one
pipeline (every stage, the audit), with the hook's firing as its O-Tag origin."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from brainframe.models import Agent, ToolCall

from ..audit.hashing import canonical_json
from ..errors import BrokerRefusal
from ..pipeline.context import CallRequest
from .calls import tool_call_submit


def hook_invoke(
    *,
    agent: Agent,
    tool_id: str,
    arguments: dict[str, Any],
    reason: str,
    o_tag: uuid.UUID,
    idempotency_key: str,
) -> tuple[int, dict[str, Any]]:
    """Submit the call; a repeat with the same ``idempotency_key`` gets the first answer."""
    fingerprint = canonical_json([tool_id, arguments, reason], strict=False)
    request_hash = hashlib.sha256(fingerprint).hexdigest()
    try:
        answer = tool_call_submit(
            agent=agent,
            request=CallRequest(
                tool_id=tool_id,
                arguments=arguments,
                reason=reason,
                o_tag=o_tag,
                idempotency_key=idempotency_key[:200],
                request_hash=request_hash,
                face=ToolCall.Face.SYSTEM,
            ),
        )
    except BrokerRefusal as refusal:
        return refusal.status, {"status": "refused", "code": refusal.code}
    return answer.status, answer.body
