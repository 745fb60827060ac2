"""Reggie's agent service end to end: his modes (a small model for normal work, a large one in
Super mode) and what each costs; the messages he answers kept on the record, compacted."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from brainframe.models import Agent, AgentTask, LLMUsage, ModelPrice, Tool, ToolCall
from brainframe.services.access.credentials import agent_credential_issue
from brainframe.services.seed import seed_brainframe
from tests import factories as f
from tests.agents_vm.runtime_kit import wait_for as _wait
from tests.llm_server import OpenAICompatibleServer

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def reggie_script(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    last = messages[-1]
    if last["role"] == "tool":
        return {"content": "Tom's next shift is Monday 9 am to 3 pm."}
    if "next shift" in last["content"]:
        return {
            "tool_calls": [
                {
                    "name": "roster_shift_read",
                    "arguments": {
                        "date_from": "2026-03-02",
                        "date_to": "2026-03-08",
                        "reason": "the caller asked when Tom works next",
                    },
                }
            ]
        }
    return {"content": "I can book that once a coordinator confirms the passenger list."}


def test_reggie_modes_and_their_cost(
    live_server_url: str, start_service: Any, llm: OpenAICompatibleServer
) -> None:
    seed_brainframe()
    Tool.objects.filter(tool_id="roster.shift.read").update(execution_mode="auto")
    AgentTask.objects.filter(agent_id="reggie").delete()
    lookup = f.AgentTaskFactory(
        agent_id="reggie", title="Front desk", priority=90,
        payload={"query": "When is Tom's next shift?", "channel": "sms"},
    )  # fmt: skip
    write = f.AgentTaskFactory(
        agent_id="reggie", title="Front desk", priority=80,
        payload={"query": "Please book the van for Friday's outing", "channel": "text"},
    )  # fmt: skip
    voice = f.AgentTaskFactory(
        agent_id="reggie", title="Front desk", priority=70,
        payload={"query": "Hello?", "channel": "voice"},
    )  # fmt: skip
    llm.chat_script = reggie_script
    secret = agent_credential_issue(agent=Agent.objects.get(agent_id="reggie"))
    start_service("reggie", secret, '[modes]\nnormal = "gpt-4o-mini"\nsuper = "gpt-4o"\n')

    def finished() -> bool:
        statuses = set(AgentTask.objects.filter(agent_id="reggie").values_list("status", flat=True))
        return statuses <= {"done", "failed"}

    _wait(finished, 120, "Reggie's three queries")
    assert not llm.errors
    for task in (lookup, write, voice):
        task.refresh_from_db()
    # Normal: the cheap model, read-only tools only, one turn (a lookup, then the answer).
    assert lookup.status == "done" and lookup.result["mode"] == "normal"
    assert lookup.result["answer"].startswith("Tom's next shift")
    assert lookup.result["calls"] == [{"tool_id": "roster.shift.read", "status": "executed"}]
    mini = [body for path, body in llm.requests if body.get("model") == "gpt-4o-mini"]
    assert len(mini) == 2
    offered = {t["function"]["name"] for t in mini[0]["tools"]}
    assert "roster_shift_read" in offered and "transport_vehicle_book" not in offered
    # Super: the capable model with every tool and the plan tool.
    assert write.status == "done"
    big = [body for path, body in llm.requests if body.get("model") == "gpt-4o"]
    assert big and "save_plan" in {t["function"]["name"] for t in big[0]["tools"]}
    # Voice is External Reggie's, not this VM's.
    assert voice.status == "failed" and "External Reggie" in voice.failure_reason
    # Cost per query from the token usage and the price table, visible in the admin.
    usage = {u.task_id: u for u in LLMUsage.objects.filter(agent_id="reggie")}
    assert set(usage) == {lookup.task_id, write.task_id}
    normal = usage[lookup.task_id]
    assert (normal.mode, normal.model, normal.model_calls) == ("normal", "gpt-4o-mini", 2)
    price = ModelPrice.objects.get(pk="gpt-4o-mini")
    assert normal.cost_usd == price.cost(normal.prompt_tokens, normal.completion_tokens, 0)
    assert normal.cost_usd > 0
    assert usage[write.task_id].mode == "super" and usage[write.task_id].model == "gpt-4o"


QUESTION = "When is Tom's next shift?"


def ledger_script(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    if messages[-1]["content"].startswith("Summarise this conversation"):
        return {"content": "Linh asked twice when Tom works next: Monday 9 am to 3 pm."}
    return reggie_script(messages, tools)


def test_messages_answered_by_the_agent_service_are_on_the_record(
    live_server_url: str, start_service: Any, llm: OpenAICompatibleServer
) -> None:
    """An SMS from a family member reaches Reggie's VM as a turn; the VM answers it through the
    broker (its lookup call linked to the turn), and compacts the thread with its model."""
    from brainframe.models import ChannelAdapter, ChannelIdentity, Person, Turn
    from brainframe.services.ledger.channels import token_hash
    from brainframe.services.ledger.ledgers import ledgers_verify

    seed_brainframe()
    Tool.objects.filter(tool_id="roster.shift.read").update(execution_mode="auto")
    AgentTask.objects.filter(agent_id="reggie").delete()
    reggie = Agent.objects.get(agent_id="reggie")
    mum = Person.objects.create(name="Linh Tran", relationship="family")
    ChannelIdentity.objects.create(person=mum, channel="sms", address="+61412345678")
    ChannelAdapter.objects.create(
        name="sms", channel="sms", agent=reggie, token_hash=token_hash("sms-token-0123456789")
    )
    llm.chat_script = ledger_script
    secret = agent_credential_issue(agent=reggie)
    # A thread of more than one turn is compacted, keeping the last one whole.
    loop = "compact_after_turns = 1\ncompact_keep_turns = 1\n"
    start_service("reggie", secret, loop + '[modes]\nnormal = "gpt-4o-mini"\nsuper = "gpt-4o"\n')

    def sms(message_id: str) -> dict[str, Any]:
        response = httpx.post(
            f"{live_server_url}/api/v1/channels/sms/",
            json={"message_id": message_id, "from": "0412 345 678", "body": QUESTION},
            headers={"Authorization": "Bearer sms-token-0123456789"},
            timeout=20,
        )
        assert response.status_code == 201, response.text
        return dict(response.json())

    first = sms("SM-1")

    def answered(turn_id: str) -> Turn | None:
        return Turn.objects.filter(pk=turn_id, status="completed").first()

    turn = _wait(lambda: answered(first["turn_id"]), 120, "Reggie's answer")
    assert turn.answer.startswith("Tom's next shift")
    (call,) = ToolCall.objects.filter(pk__in=turn.tool_calls)
    assert call.requested_tool_id == "roster.shift.read"
    assert str(call.o_tag_id) == first["o_tag"] == str(turn.origin_id)
    assert [m.role for m in turn.messages.order_by("seq")] == ["user", "answer"]

    second = sms("SM-2")
    _wait(lambda: answered(second["turn_id"]), 120, "Reggie's second answer")
    compaction = _wait(
        lambda: Turn.objects.filter(thread_id=turn.thread_id, turn_type="compaction").first(),
        60,
        "the compaction",
    )
    assert compaction.summary.startswith("Linh asked twice")
    assert compaction.summarised_through_id == turn.pk
    assert ledgers_verify() == []
    assert not llm.errors
