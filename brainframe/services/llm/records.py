"""The model gateway's record: one row per answered request, with its cost and the Guardian's
reading of the tool calls the model proposed."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from brainframe.events import ModelToolCallFlagged, emit
from brainframe.models import Agent, LLMRequest, LLMUpstream
from brainframe.safety.guardian.core import argument_strings, assess

from .admission import Admitted
from .outbound import kept_body


def cost_of(upstream: LLMUpstream | None, prompt_tokens: int, completion_tokens: int) -> Decimal:
    if upstream is None:
        return Decimal(0)
    return (
        upstream.price_in * prompt_tokens / 1_000_000
        + upstream.price_out * completion_tokens / 1_000_000
    ).quantize(Decimal("0.000001"))


def llm_record(
    *,
    admitted: Admitted | None,
    agent_id: str | None,
    endpoint: str,
    status: int,
    stream: bool = False,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    latency_ms: int = 0,
    error_code: str = "",
    request_body: Any = None,
    response_body: Any = None,
    redactions: int = 0,
    tool_calls: list[dict[str, Any]] | None = None,
    cache_hit: bool = False,
) -> LLMRequest | None:
    """One row per request the gateway answered for a known agent (bodies only if the agent's
    setting says so). Refusals before the key was known are not recorded (no agent)."""
    agent_id = admitted.agent_id if admitted else agent_id
    if agent_id is None:
        return None
    threats = _assess_tool_calls(agent_id, tool_calls or [])
    row = LLMRequest.objects.create(
        agent_id=agent_id,
        endpoint=endpoint,
        role=admitted.role if admitted else "",
        model=admitted.model if admitted else "",
        upstream=admitted.upstream.name if admitted and admitted.upstream else "",
        stream=stream,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost_usd=cost_of(admitted.upstream if admitted else None, prompt_tokens, completion_tokens),
        latency_ms=latency_ms,
        status=status,
        error_code=error_code,
        redactions=redactions,
        cache_hit=cache_hit,
        request_body=kept_body(admitted, request_body),
        response_body=kept_body(admitted, response_body),
        threats=threats,
    )
    if threats:
        at = row.created_at.isoformat()
        emit(
            *(
                ModelToolCallFlagged(
                    agent_id=agent_id,
                    request_id=row.pk,
                    tool=str(threat["tool"]),
                    risk=float(threat["risk"]),
                    action=str(threat["action"]),
                    patterns=tuple(threat["patterns"]),
                    at=at,
                )
                for threat in threats
            )
        )
    return row


def _assess_tool_calls(agent_id: str, tool_calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Guardian on the arguments of each tool call the model proposed, at the agent's trust
    level: what it flagged or would block (the broker assesses them again if the agent calls)."""
    if not tool_calls:
        return []
    trust = Agent.objects.filter(pk=agent_id).values_list("trust_level", flat=True).first()
    found = []
    for call in tool_calls:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str) or not arguments:
            continue
        try:
            text = "\n".join(argument_strings(json.loads(arguments)))
        except ValueError:
            text = arguments  # not JSON (a model's mistake): read as it came
        # As the broker reads a call's arguments: every string in them, one per line.
        assessment = assess(text, trust=trust or "standard")
        if assessment.action != "allow":
            found.append(
                {
                    "tool": str(function.get("name") or "?"),
                    "risk": assessment.risk,
                    "action": assessment.action,
                    "patterns": assessment.patterns,
                    "categories": assessment.categories,
                }
            )
    return found
