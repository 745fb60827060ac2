"""Recording what LLM calls cost (Reggie's modes, native helpers)."""

from __future__ import annotations

from typing import Any

from brainframe.models import Agent, AgentTask, LLMUsage, ModelPrice


def usage_record(
    *,
    agent: Agent,
    mode: str,
    model: str,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    seconds: float = 0.0,
    model_calls: int = 1,
    task: AgentTask | None = None,
    query_ref: str = "",
) -> LLMUsage:
    """One row per query; its cost from the price table now (empty if the model has no price)."""
    price = ModelPrice.objects.filter(pk=model).first()
    return LLMUsage.objects.create(
        agent=agent,
        task=task,
        mode=mode,
        model=model,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        seconds=seconds,
        model_calls=model_calls,
        cost_usd=price.cost(prompt_tokens, completion_tokens, seconds) if price else None,
        query_ref=query_ref,
    )


def usage_dict(usage: LLMUsage) -> dict[str, Any]:
    return {
        "id": usage.pk,
        "mode": usage.mode,
        "model": usage.model,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cost_usd": None if usage.cost_usd is None else str(usage.cost_usd),
    }
