"""Type 1 native helpers: inline LLM calls governed and audited as tool calls of a Type 1 agent,
against a real local OpenAI-compatible server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from brainframe.choices import ContextBucket
from brainframe.models import LLMUsage, ModelPrice, ToolCall
from brainframe.services.seed import seed_brainframe
from broker.native import NativeUnavailable, native_classify, native_summarise, native_triage
from tests.llm_server import OpenAICompatibleServer

# The handlers run in the broker's worker threads, which must see the committed rows.
pytestmark = [pytest.mark.django_db(transaction=True)]

MESSAGE = (
    "Hi, this is Sam Carter (sam.carter@example.com). Can Lily's Tuesday art session move to "
    "Thursday? Thanks."
)


@pytest.fixture
def llm(settings: Any) -> Iterator[OpenAICompatibleServer]:
    seed_brainframe()
    server = OpenAICompatibleServer()
    with server.running():
        settings.RABS_LLM_BASE_URL = server.base_url
        settings.RABS_NATIVE_MODEL = "gpt-4o-mini"
        yield server


def _user_text(server: OpenAICompatibleServer) -> str:
    (_, body), *_ = [r for r in server.requests if r[0].endswith("/chat/completions")]
    return str(body["messages"][-1]["content"])


def test_triage_is_a_governed_audited_tool_call(llm: OpenAICompatibleServer) -> None:
    llm.chat_script = lambda messages, tools: {
        "content": json.dumps(
            {"urgency": "normal", "intent": "reschedule session", "summary": "Move art to Thu."}
        )
    }
    triaged = native_triage(MESSAGE)
    assert triaged.result["urgency"] == "normal"
    assert triaged.result["intent"] == "reschedule session"
    first = triaged.result["buckets"][0]  # the bucket checker's answer, kept in the audit
    assert first["bucket"] in ContextBucket.values and 0 < first["confidence"] <= 1
    call = ToolCall.objects.select_related("r_tag").get(pk=triaged.call_id)
    assert call.agent_id == "triage" and call.requested_tool_id == "native.message.triage"
    assert call.decision == "executed" and call.outcome == "succeeded"
    assert call.r_tag.thought == "triage an incoming email message"
    assert call.o_tag_id is not None and call.row_hash
    # The model is outside: personal details were filtered out before the text left.
    sent = _user_text(llm)
    assert "sam.carter@example.com" not in sent and "Sam Carter" not in sent
    assert "Tuesday art session" in sent
    assert {f["type"] for f in call.outbound_findings} >= {"EMAIL_ADDRESS", "PERSON"}
    # Its cost, from the token usage and the price table.
    usage = LLMUsage.objects.get(query_ref=triaged.call_id)
    assert usage.agent_id == "triage" and usage.mode == "native"
    price = ModelPrice.objects.get(pk="gpt-4o-mini")
    assert usage.cost_usd == price.cost(usage.prompt_tokens, usage.completion_tokens, 0) > 0


def test_a_model_answer_that_is_not_what_was_asked_fails_the_call(
    llm: OpenAICompatibleServer,
) -> None:
    llm.chat_script = lambda messages, tools: {"content": "Sure! It's probably fine."}
    with pytest.raises(NativeUnavailable, match="did not answer JSON"):
        native_triage("Is the Tuesday group still on?")
    call = ToolCall.objects.get(requested_tool_id="native.message.triage")
    assert call.outcome == "failed" and "did not answer JSON" in call.error
    llm.chat_script = lambda messages, tools: {"content": "purple"}
    with pytest.raises(NativeUnavailable, match="not one of the labels"):
        native_classify("Invoice 22 is overdue", ["billing", "rostering"])


def test_no_endpoint_fails_closed(llm: OpenAICompatibleServer, settings: Any) -> None:
    settings.RABS_LLM_BASE_URL = ""
    with pytest.raises(NativeUnavailable, match="no LLM endpoint configured"):
        native_summarise("A long text about the week.")
    assert not [r for r in llm.requests if r[0].endswith("/chat/completions")]
    assert ToolCall.objects.get(requested_tool_id="native.text.summarise").outcome == "failed"


def test_classify_and_summarise(llm: OpenAICompatibleServer) -> None:
    llm.chat_script = lambda messages, tools: {"content": "Billing."}
    assert native_classify("Invoice 22 is overdue", ["billing", "rostering"]).result == {
        "label": "billing"
    }
    llm.chat_script = lambda messages, tools: {
        "content": "Two shifts unfilled on Saturday; casuals contacted; decision due Friday."
    }
    summary = native_summarise("(a long roster report)", max_words=10).result
    assert summary["words"] == 10 and summary["summary"].startswith("Two shifts unfilled")
