"""The model gateway's tests: a local OpenAI-compatible upstream, and the gateway in front of it
for henry (a budget, a key, the official ``openai`` client against the served stack)."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import openai
import pytest

from brainframe.models import Agent, LLMBudget
from brainframe.services.llm.admission import llm_key_issue, llm_upstream_set
from tests.llm_server import OpenAICompatibleServer

UPSTREAM_KEY = "upstream-secret-key"


@pytest.fixture
def upstream() -> Iterator[OpenAICompatibleServer]:
    server = OpenAICompatibleServer()
    server.api_key = UPSTREAM_KEY  # the gateway must send the upstream's key, never the agent's
    with server.running():
        yield server


@pytest.fixture
def gateway(upstream: OpenAICompatibleServer, seeded: None, live_server_url: str) -> dict[str, Any]:
    from django.core.cache import cache

    redis = cache.redis()  # type: ignore[attr-defined]
    stale = list(redis.scan_iter(match=cache.make_key("llm:*")))
    if stale:  # counters and running spend of an earlier test's agents (the database is new)
        redis.delete(*stale)
    llm_upstream_set(
        name="local",
        base_url=upstream.base_url,
        served_models=["small-model", "big-model"],
        api_key=UPSTREAM_KEY,
        price_in=Decimal("1000"),  # USD per 1M tokens: 0.001 per token, so costs show
        price_out=Decimal("2000"),
        external=False,  # inside the organisation: prompts leave as written (see the PII test)
    )
    henry = Agent.objects.get(agent_id="henry")
    LLMBudget.objects.create(
        agent=henry, allowed_models=["small-model"], aliases={"actuator": "small-model"}
    )
    key = llm_key_issue(agent=henry)
    client = openai.OpenAI(base_url=f"{live_server_url}/llm/v1", api_key=key, max_retries=0)
    return {"client": client, "key": key, "henry": henry, "url": live_server_url}
