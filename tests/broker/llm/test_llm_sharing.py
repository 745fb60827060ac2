"""The model gateway shared and reused: a team's limits and budget over its agents, the native
helpers as an agent of their own, and the answer cache (exact and semantic)."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from brainframe.models import Agent, LLMBudget
from brainframe.services.llm.admission import llm_key_issue
from tests.broker.llm.recorded import records
from tests.llm_server import OpenAICompatibleServer

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_team_shares_its_limits_and_budget_among_its_agents(
    gateway: dict[str, Any], upstream: OpenAICompatibleServer
) -> None:
    from django.core.management import call_command

    reggie = Agent.objects.get(agent_id="reggie")
    LLMBudget.objects.create(agent=reggie, allowed_models=["small-model"])
    other = openai.OpenAI(
        base_url=gateway["client"].base_url, api_key=llm_key_issue(agent=reggie), max_retries=0
    )
    call_command("llm_team", "ops", "--agents", "henry,reggie", "--rpm", "3")
    hello = [{"role": "user", "content": "hi"}]
    gateway["client"].chat.completions.create(model="small-model", messages=hello)
    other.chat.completions.create(model="small-model", messages=hello)
    gateway["client"].chat.completions.create(model="small-model", messages=hello)
    with pytest.raises(openai.RateLimitError) as limited:  # each agent alone is under any limit
        other.chat.completions.create(model="small-model", messages=hello)
    assert "team ops: 3 requests per minute" in limited.value.message
    call_command(
        "llm_team", "ops", "--rpm", "1000", "--max-budget", "0.01", "--duration", "1d"
    )  # fmt: skip
    records(4)  # three answers at about 0.05 USD each (and the refusal): over 0.01 already
    with pytest.raises(openai.RateLimitError) as broke:
        other.chat.completions.create(model="small-model", messages=hello)
    assert broke.value.code == "budget_exceeded"
    assert "for team ops" in broke.value.message and "Max budget: 0.0100 per 1d" in (
        broke.value.message
    )
    call_command("llm_team", "ops", "--max-budget", "1000", "--models", "big-model")
    with pytest.raises(openai.NotFoundError):  # henry may use small-model, its team may not
        gateway["client"].chat.completions.create(model="small-model", messages=hello)
    assert [m.id for m in gateway["client"].models.list()] == []
    call_command("llm_team", "ops", "--models", "", "--suspend")
    with pytest.raises(openai.PermissionDeniedError):
        gateway["client"].chat.completions.create(model="small-model", messages=hello)


def test_the_native_helpers_go_through_the_gateway(
    gateway: dict[str, Any], upstream: OpenAICompatibleServer, settings: Any
) -> None:
    """Type 1 helpers pointed at the gateway with a key of their own agent: limited and
    recorded like any agent's model calls (docs/llm-gateway.md)."""
    from broker.native import native_summarise

    triage = Agent.objects.get(agent_id="triage")
    LLMBudget.objects.create(agent=triage, aliases={"native": "small-model"})
    settings.RABS_LLM_BASE_URL = f"{gateway['url']}/llm/v1"
    settings.RABS_LLM_API_KEY = llm_key_issue(agent=triage)
    settings.RABS_NATIVE_MODEL = "native"
    upstream.chat_script = lambda messages, tools: {"content": "Art moves to Thursday."}
    summary = native_summarise("Can Lily's Tuesday art session move to Thursday?")
    assert summary.result["summary"] == "Art moves to Thursday."
    (record,) = records(1)
    assert (record.agent_id, record.role, record.model) == ("triage", "native", "small-model")


def test_the_cache_answers_a_repeated_question_without_the_upstream(
    gateway: dict[str, Any], upstream: OpenAICompatibleServer
) -> None:
    """Exact: the same temperature-0 question to the same model is answered from the agent's
    cache, recorded as a hit at no cost; another temperature is not. Semantic: a question worded
    a little differently hits; a different one does not. Retargeting the role misses."""
    client: openai.OpenAI = gateway["client"]
    LLMBudget.objects.filter(agent_id="henry").update(cache="exact")
    answers = iter(f"answer {n}" for n in range(1, 20))
    upstream.chat_script = lambda messages, tools: {"content": next(answers)}
    ask = [{"role": "user", "content": "Which vehicles are free on Monday morning?"}]

    def said(
        messages: list[dict[str, str]], temperature: float = 0, model: str = "actuator"
    ) -> str:
        answer = client.chat.completions.create(
            model=model, messages=messages, temperature=temperature
        )
        return str(answer.choices[0].message.content)

    assert said(ask) == "answer 1"
    records(1)  # kept with the record, just after the answer went
    calls = len(upstream.requests)
    assert said(ask) == "answer 1" and len(upstream.requests) == calls, "asked the upstream"
    assert said(ask, temperature=0.7) == "answer 2"
    hit = [r for r in records(3) if r.cache_hit]
    assert len(hit) == 1 and hit[0].cost_usd == 0 and hit[0].upstream == "local"
    LLMBudget.objects.filter(agent_id="henry").update(cache="semantic", cache_threshold=0.9)
    reworded = [{"role": "user", "content": "Which vehicles are free on Monday morning, please?"}]
    assert said(reworded) == "answer 3", "the exact entry has no embedding: a miss first"
    records(4)
    again = [{"role": "user", "content": "Which vehicles are free on monday morning please"}]
    assert said(again) == "answer 3", "a near question missed the semantic cache"
    other = [{"role": "user", "content": "Draft an email to Sam about the art session."}]
    assert said(other) == "answer 4"
    from brainframe.models import LLMUpstream

    LLMUpstream.objects.filter(name="local").update(served_models=["small-model", "other-model"])
    LLMBudget.objects.filter(agent_id="henry").update(
        aliases={"actuator": "other-model"}, allowed_models=[]
    )
    assert said(again) == "answer 5", "an answer of the previous model was reused"
