"""Handlers of the Type 1 native helpers: inline LLM calls (triage, classification, summaries).

They run as the ``function`` handlers of ``native.*`` tools, so each one is a governed,
hash-chained tool call of a Type 1 agent: the pipeline validates the arguments, assesses the
text, applies V-Pols and the gate, and, the model being an external channel, passes the text
through the outbound PII filter before it leaves. The model is any OpenAI-compatible endpoint
(``RABS_LLM_BASE_URL``, ``RABS_LLM_API_KEY``, ``RABS_NATIVE_MODEL``). Token usage is recorded
(mode ``native``) and priced from the price table. No endpoint configured, an error from it, or
an answer that is not what was asked for: the call fails (``outcome=failed``), nothing is made up.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from django.conf import settings

from brainframe.models import Agent
from brainframe.services.llm.usage import usage_record
from brainframe.services.memory.bucket_checker import bucket_classify

from .base import HandlerFailure
from .function import ToolFunction

URGENCIES = ("low", "normal", "high", "urgent")


def _complete(system: str, user: str, *, call_id: uuid.UUID) -> str:
    """One chat completion; its tokens recorded against the calling agent."""
    from openai import OpenAI, OpenAIError  # loaded when a native tool first runs (slow import)

    if not settings.RABS_LLM_BASE_URL:
        raise HandlerFailure("no LLM endpoint configured (RABS_LLM_BASE_URL)")
    client = OpenAI(
        base_url=settings.RABS_LLM_BASE_URL,
        api_key=settings.RABS_LLM_API_KEY or "unused",
        timeout=settings.RABS_LLM_TIMEOUT_SECONDS,
        max_retries=1,
    )
    model = settings.RABS_NATIVE_MODEL
    try:
        response = client.chat.completions.create(
            model=model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        )
    except OpenAIError as exc:
        raise HandlerFailure(f"LLM endpoint failed: {exc}") from exc
    if response.usage is not None:
        agent = Agent.objects.filter(tool_calls__id=call_id).first()
        if agent is not None:
            usage_record(
                agent=agent,
                mode="native",
                model=model,
                prompt_tokens=response.usage.prompt_tokens,
                completion_tokens=response.usage.completion_tokens,
                query_ref=str(call_id),
            )
    return (response.choices[0].message.content or "").strip()


def _json_answer(text: str) -> dict[str, Any]:
    cleaned = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        value = json.loads(cleaned)
    except json.JSONDecodeError:
        raise HandlerFailure("the model did not answer JSON") from None
    if not isinstance(value, dict):
        raise HandlerFailure("the model did not answer a JSON object")
    return value


def triage(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    answer = _json_answer(
        _complete(
            "You triage messages arriving at a disability support provider. Answer with JSON "
            'only: {"urgency": "low|normal|high|urgent", "intent": "<a few words>", '
            '"summary": "<one sentence>"}. Urgent means someone may be at risk now.',
            f"Channel: {args.get('channel', 'email')}\n\n{args['text']}",
            call_id=call_id,
        )
    )
    urgency = str(answer.get("urgency", "")).lower()
    if urgency not in URGENCIES:
        raise HandlerFailure(f"the model answered urgency {urgency!r}, not one of {URGENCIES}")
    buckets = bucket_classify(args["text"])
    return {
        "urgency": urgency,
        "intent": str(answer.get("intent", ""))[:200],
        "summary": str(answer.get("summary", ""))[:1000],
        "buckets": [g.as_dict() for g in buckets.guesses],
    }


def classify(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    labels = [str(label) for label in args["labels"]]
    answer = _complete(
        "Classify the text into exactly one of these labels: "
        + ", ".join(labels)
        + ". Answer with the label only.",
        args["text"],
        call_id=call_id,
    )
    chosen = next((label for label in labels if label.lower() == answer.lower().strip(".")), None)
    if chosen is None:
        raise HandlerFailure(f"the model answered {answer[:80]!r}, not one of the labels")
    return {"label": chosen}


def summarise(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    limit = int(args.get("max_words", 80))
    summary = _complete(
        f"Summarise the text for a busy coordinator in at most {limit} words. "
        "Keep names, dates and actions; add nothing.",
        args["text"],
        call_id=call_id,
    )
    if not summary:
        raise HandlerFailure("the model answered nothing")
    words = summary.split()
    return {"summary": " ".join(words[:limit]), "words": min(len(words), limit)}


#: The callables by the name tools give in ``handler_config["callable"]``.
CALLABLES: dict[str, ToolFunction] = {
    "native.triage": triage,
    "native.classify": classify,
    "native.summarise": summarise,
}
