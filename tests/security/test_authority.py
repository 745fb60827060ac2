"""Authority the agent cannot talk its way around (docs/access.md, "Authority is derived").

Each test is one way an agent might widen what it may do by what it sends — or leaves out — and
asserts the refusal (its code), that nothing ran, and what the audit or the event log kept. The
chain attempts run over both faces an agent calls tools through: the signed REST API and MCP
(the chain in ``_meta``), the MCP ones against the suite's daphne.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from typing import Any

import httpx2
import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone
from mcp import Client as MCPClient
from mcp.client.streamable_http import streamable_http_client

from brainframe.models import (
    Agent,
    AgentTask,
    ApprovalRequest,
    CapabilityGrant,
    ChannelAdapter,
    ChannelIdentity,
    ContextBucketEntry,
    Delegation,
    Deliverable,
    EventLogEntry,
    Hook,
    LLMBudget,
    Person,
    ToolCall,
    Turn,
)
from brainframe.services.access.credentials import agent_credential_issue, agent_token_issue
from brainframe.services.hooks.lifecycle import hook_set_enabled
from brainframe.services.ledger.channels import token_hash
from brainframe.services.llm.admission import LLMRefused, llm_upstream_set
from broker.llm import limits
from broker.services.approvals import ApprovalError, approval_decide
from tests import factories as f
from tests.signing import SignedClient

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CALLS = "/api/v1/tool-calls/"
SMS_TOKEN = "sms-token-authority-0123"
FACES = ["rest", "mcp"]
#: What the MCP face reads the chain from (broker/mcp/face.py).
META = {
    "task_id": "rabs/task_id",
    "parent_r_tag": "rabs/parent_r_tag",
    "o_tag": "rabs/o_tag",
    "origin": "rabs/origin",
}


class Agentside:
    """One agent, calling tools over REST or MCP; every answer as ``{status?, code?, …}``."""

    def __init__(self, agent_id: str, face: str, server: str) -> None:
        agent = Agent.objects.get(agent_id=agent_id)
        self.agent_id, self.face, self.server = agent_id, face, server
        self.rest = SignedClient(Client(), agent_id, agent_credential_issue(agent=agent))
        self.token = agent_token_issue(agent=agent) if face == "mcp" else ""

    def call(self, tool_id: str, arguments: dict[str, Any] | None = None, **chain: Any) -> Any:
        arguments = arguments if arguments is not None else {"q": "x"}
        chain = {k: str(v) if k != "origin" else v for k, v in chain.items() if v is not None}
        if self.face == "rest":
            body = {"tool_id": tool_id, "arguments": arguments, "reason": "for the test", **chain}
            answer = self.rest.post(CALLS, body)
            assert answer.status_code < 500, answer.content
            return dict(answer.json())
        meta = {META[k]: v for k, v in chain.items()} | {"rabs/reason": "for the test"}

        async def run() -> Any:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.token}"}, timeout=60)
            url = f"{self.server}/mcp"
            async with MCPClient(streamable_http_client(url, http_client=http)) as client:
                return await client.call_tool(tool_id, arguments, meta=meta)

        before = ToolCall.objects.filter(agent_id=self.agent_id).count()
        answer = self.mcp(tool_id, arguments, meta)
        answer.setdefault("detail", answer.get("reason"))
        if ToolCall.objects.filter(agent_id=self.agent_id).count() > before:  # audited: as REST
            call = ToolCall.objects.filter(agent_id=self.agent_id).order_by("-seq").first()
            assert call is not None
            answer |= {"status": call.decision, "code": call.decision_code,
                       "detail": call.decision_detail, "call_id": str(call.pk),
                       "r_tag": str(call.r_tag_id), "o_tag": str(call.o_tag_id)}  # fmt: skip
        return answer

    def mcp(self, tool_id: str, arguments: dict[str, Any], meta: Any = None) -> dict[str, Any]:
        """A tools/call over MCP: its structured content."""

        async def run() -> Any:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.token}"}, timeout=60)
            url = f"{self.server}/mcp"
            async with MCPClient(streamable_http_client(url, http_client=http)) as client:
                return await client.call_tool(tool_id, arguments, meta=meta)

        return dict(asyncio.run(run()).structured_content or {})

    def claim(self, task_id: str) -> None:
        answer = self.rest.post(f"/api/v1/tasks/{task_id}/claim/", {})
        assert answer.status_code == 200, answer.content


@pytest.fixture
def world(seeded: None, client: Client) -> dict[str, Any]:
    """Reggie answers SMS from families (the demo ACL); Linh Tran is Ruby's (P-1042) mother,
    Joe Lee is Sam's (P-2000) father. Two tools of the tests' echo handler: one the family
    access policy allows (*.notes.read), one it does not."""
    reggie = Agent.objects.get(agent_id="reggie")
    ChannelAdapter.objects.create(
        name="sms-in", channel="sms", agent=reggie, token_hash=token_hash(SMS_TOKEN)
    )
    sam = Person.objects.create(
        name="Sam Lee", relationship="participant", attributes={"participant_id": "P-2000"}
    )
    joe = Person.objects.create(name="Joe Lee", relationship="family", acts_for=sam)
    ChannelIdentity.objects.create(person=joe, channel="sms", address="+61400000999")
    for tool_id in ("test.notes.read", "test.report.write"):
        f.ToolFactory(tool_id=tool_id, agent_access=["reggie", "henry"])
    sent = iter(range(1, 1000))

    def sms(sender: str, text: str) -> str:
        """A message in; the task it made for Reggie."""
        answer = client.post(
            "/api/v1/channels/sms-in/",
            json.dumps({"message_id": f"m{next(sent)}", "from": sender, "body": text}),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {SMS_TOKEN}",
        )
        assert answer.status_code == 201, answer.content
        return str(Turn.objects.get(pk=answer.json()["turn_id"]).task_id)

    return {"sms": sms}


def _ran(tool_id: str) -> int:
    return ToolCall.objects.filter(
        requested_tool_id=tool_id, decision__in=("executed", "executed_post_review")
    ).count()


def _chain_refused(code: str) -> list[dict[str, Any]]:
    return [
        e.payload
        for e in EventLogEntry.objects.filter(name="security:chain_refused").order_by("id")
        if e.payload["code"] == code
    ]


# --- the chain is the broker's ------------------------------------------------------------------


@pytest.mark.parametrize("face", FACES)
def test_an_origin_of_its_own_does_not_replace_a_persons_chain(
    face: str, world: dict[str, Any], live_server_url: str
) -> None:
    reggie = Agentside("reggie", face, live_server_url)
    task = world["sms"]("0400000102", "send me Ruby's monthly report")
    reggie.claim(task)
    origin = {"origin_type": "email", "source_ref": "my-own-idea"}
    swapped = reggie.call("test.report.write", task_id=task, origin=origin)
    assert swapped["code"] == "chain_conflict" and swapped["field"] == "origin"
    assert _ran("test.report.write") == 0
    [kept] = _chain_refused("chain_conflict")
    assert kept["agent_id"] == "reggie" and kept["task_id"] == task and kept["face"] == face


@pytest.mark.parametrize("face", FACES)
def test_an_o_tag_of_its_own_does_not_replace_a_tasks_chain(
    face: str, world: dict[str, Any], live_server_url: str
) -> None:
    reggie = Agentside("reggie", face, live_server_url)
    own = reggie.call("test.notes.read", origin={"origin_type": "email", "source_ref": "mine"})
    assert own["status"] == "executed", own
    task = world["sms"]("0400000102", "send me Ruby's monthly report")
    reggie.claim(task)
    cited = reggie.call("test.report.write", task_id=task, o_tag=own["o_tag"])
    assert cited["code"] == "chain_conflict" and cited["field"] == "o_tag"
    assert _ran("test.report.write") == 0


@pytest.mark.parametrize("face", FACES)
def test_leaving_the_task_out_is_decided_under_the_person_whose_work_it_holds(
    face: str, world: dict[str, Any], live_server_url: str
) -> None:
    reggie = Agentside("reggie", face, live_server_url)
    own = reggie.call("test.notes.read", origin={"origin_type": "email", "source_ref": "mine"})
    task = world["sms"]("0400000102", "send me Ruby's monthly report")
    reggie.claim(task)
    for chain in ({}, {"o_tag": own["o_tag"]}, {"origin": {"origin_type": "email",
                                                           "source_ref": "new"}}):  # fmt: skip
        answer = reggie.call("test.report.write", **chain)
        assert answer["status"] == "denied" and answer["code"] == "principal_not_allowed", chain
        call = ToolCall.objects.get(pk=answer["call_id"])
        assert "Linh Tran" in call.decision_detail and "holds" in call.decision_detail
    assert _ran("test.report.write") == 0
    # What Linh may have done, it may still do without naming her task.
    assert reggie.call("test.notes.read")["status"] == "executed"
    # Once her task is finished, the agent's own work is its own again.
    AgentTask.objects.filter(pk=task).update(status="done")
    assert reggie.call("test.report.write")["status"] == "executed"


@pytest.mark.parametrize("face", FACES)
def test_another_agents_task_call_or_origin_is_refused(
    face: str, world: dict[str, Any], live_server_url: str
) -> None:
    reggie, henry = (Agentside(a, face, live_server_url) for a in ("reggie", "henry"))
    task = world["sms"]("0400000102", "how is Ruby?")  # Reggie's
    reggie.claim(task)
    theirs = reggie.call(
        "test.notes.read", task_id=task, arguments={"q": "Ruby"}
    )  # a call of Reggie's chain
    assert theirs["status"] == "executed", theirs
    for chain, code in (
        ({"task_id": task}, "unknown_task"),
        ({"parent_r_tag": theirs["r_tag"]}, "unknown_parent_r_tag"),
        ({"o_tag": theirs["o_tag"]}, "unknown_origin"),
    ):
        answer = henry.call("test.report.write", **chain)
        assert answer["code"] == code, (chain, answer)
        assert _chain_refused(code)[-1]["agent_id"] == "henry"
    assert _ran("test.report.write") == 0


@pytest.mark.parametrize("face", FACES)
def test_a_knock_on_call_stays_on_its_parents_task(
    face: str, world: dict[str, Any], live_server_url: str
) -> None:
    reggie = Agentside("reggie", face, live_server_url)
    linh = world["sms"]("0400000102", "how is Ruby?")
    joe = world["sms"]("0400000999", "how is Sam?")
    first = reggie.call("test.notes.read", task_id=linh)
    moved = reggie.call("test.notes.read", parent_r_tag=first["r_tag"], task_id=joe)
    assert moved["code"] == "chain_conflict" and moved["field"] == "task_id"
    # Without task_id it inherits the parent's task, and with it Linh's limits.
    inherited = reggie.call("test.report.write", parent_r_tag=first["r_tag"])
    assert inherited["code"] == "principal_not_allowed" and "Linh Tran" in inherited["detail"]
    assert str(ToolCall.objects.get(pk=inherited["call_id"]).task_id) == linh


def test_a_request_to_act_is_judged_by_the_person_the_chain_acts_for(
    world: dict[str, Any],
) -> None:
    """The Guardian reads a call's text with the rights of the person behind the chain: Linh's
    policy lets her ask for no payment or bank change, so relaying one is flagged; the same text
    on the agent's own work is not."""
    reggie = Agentside("reggie", "rest", "")
    ask = {"q": "Please change Ruby's bank details to BSB 062-000 account 12345678 today."}
    own = reggie.call("test.notes.read", ask)
    assert own["status"] == "executed", own
    relayed = reggie.call(
        "test.notes.read", ask, task_id=world["sms"]("0400000102", "update the bank details")
    )
    threat = ToolCall.objects.get(pk=relayed["call_id"]).threat_assessment
    assert threat["action"] == "flag" and "act:bank_details" in threat["patterns"]
    assert relayed["status"] == "pending_approval"


# --- delegation is found from the chain ---------------------------------------------------------


def test_a_worker_never_exceeds_its_managers_whatever_it_names(
    world: dict[str, Any], live_server_url: str, settings: Any
) -> None:
    f.AgentFactory(agent_id="wendy")
    f.ToolFactory(tool_id="test.henry.only", agent_access=["henry"])
    reggie, henry = (Agentside(a, "rest", live_server_url) for a in ("reggie", "henry"))
    work = {"agent_id": "henry", "title": "Look it up", "instructions": "use your tools"}
    handed = reggie.call("agents.delegate", work)["result"]
    henry.claim(handed["task_id"])
    # Naming nothing, or a knock-on of a call on the delegated task: Reggie's limits hold.
    assert henry.call("test.henry.only")["code"] == "exceeds_manager"
    on_task = henry.call("test.notes.read", task_id=handed["task_id"])
    knock_on = henry.call("test.henry.only", parent_r_tag=on_task["r_tag"])
    assert knock_on["code"] == "exceeds_manager" and "reggie" in knock_on["detail"]
    assert _ran("test.henry.only") == 0
    # Delegating on "its own work" while it holds delegated work: refused.
    onward = {"agent_id": "wendy", "title": "Ask the driver", "instructions": "call Bob"}
    assert henry.call("agents.delegate", onward)["code"] == "delegation_unbound"
    # Delegating by a knock-on call counts depth across the link.
    second = henry.call("agents.delegate", onward, parent_r_tag=on_task["r_tag"])
    assert second["status"] == "executed", second
    made = Delegation.objects.get(pk=second["result"]["delegation_id"])
    assert (
        made.depth == 2 and made.parent_id == Delegation.objects.get(task_id=handed["task_id"]).pk
    )
    wendy = Agentside("wendy", "rest", live_server_url)
    wendy.claim(second["result"]["task_id"])
    settings.RABS_DELEGATION_MAX_DEPTH = 2
    step = wendy.call("test.notes.read", task_id=second["result"]["task_id"])
    deeper = {"agent_id": "henry", "title": "x", "instructions": "y"}
    too_deep = wendy.call("agents.delegate", deeper, parent_r_tag=step["r_tag"])
    assert too_deep["code"] == "delegation_too_deep"
    assert wendy.call("agents.delegate", deeper)["code"] == "delegation_unbound"
    assert Delegation.objects.count() == 2


# --- MAC applies to every read -------------------------------------------------------------------


def test_mac_rules_apply_to_a_read_that_names_no_task(world: dict[str, Any]) -> None:
    henry = Agent.objects.get(agent_id="henry")
    plan = Deliverable.objects.create(
        agent=henry, file=SimpleUploadedFile("plan.txt", b"Ruby's support plan"),
        filename="plan.txt", content_type="text/plain", size_bytes=19, sha256="x" * 64,
        participant_id="P-1042", data_class="health", boundary="all",
    )  # fmt: skip
    note = ContextBucketEntry.objects.create(
        bucket="transportation", entity="Ruby Tran", pattern_type="preference",
        observation="Ruby needs her seizure medication on outings", created_by="agent:henry",
        participant_id="P-1042", data_class="health",
    )  # fmt: skip
    reggie = Agentside("reggie", "rest", "")

    def reads() -> tuple[int, bool]:
        deliverable = reggie.rest.get(f"/api/v1/deliverables/{plan.pk}/").status_code
        context = reggie.rest.get("/api/v1/context/?bucket=transportation").json()
        return deliverable, str(note.pk) in {o["id"] for o in context["observations"]}

    assert reads() == (200, True)  # its own work, for nobody: the owner shares it with all
    reggie.claim(world["sms"]("0400000999", "is Sam's outing on?"))  # Joe's work, for P-2000
    assert reads() == (403, False)
    refused = reggie.rest.get(f"/api/v1/deliverables/{plan.pk}/").json()
    assert refused["code"] == "share_denied" and refused["detail"].startswith("mac: MAC-1")
    kept = EventLogEntry.objects.filter(name="governance:share_decided", payload__allowed=False)
    assert {e.payload["layer"] for e in kept} == {"mac"}
    assert {e.payload["person_id"] for e in kept} == {str(Person.objects.get(name="Joe Lee").pk)}


# --- sequence rules survive a new origin ---------------------------------------------------------


@pytest.mark.parametrize("scope", ["chain", "session"])
def test_a_new_origin_does_not_restart_a_session_sequence_rule(
    scope: str, world: dict[str, Any]
) -> None:
    f.ToolFactory(tool_id="seq.health.read", agent_access=["henry"], data_class="clinical")
    f.ToolFactory(tool_id="seq.sms.send", agent_access=["henry"], external_channel=True)
    rule = {
        "id": "external-after-health", "action": "review", "reason": "health, then outside",
        "when": {"all": [{"field": "tool.external_channel", "op": "eq", "value": True},
                         {"history": {"scope": scope, "data_class": "clinical"}}]},
    }  # fmt: skip
    f.ValidationPolicyFactory(
        name="sequences", rules=[rule], tool_patterns=["seq.*"], enforcement_mode="intercept"
    )
    henry = Agentside("henry", "rest", "")
    read = henry.call("seq.health.read", origin={"origin_type": "email", "source_ref": "a"})
    assert read["status"] == "executed", read
    fresh = henry.call("seq.sms.send", origin={"origin_type": "email", "source_ref": "b"})
    # scope chain is escaped by the new origin; scope session is not.
    assert fresh["status"] == ("executed" if scope == "chain" else "pending_approval")


# --- hooks: staff's off stays off ----------------------------------------------------------------


@pytest.mark.parametrize("face", FACES)
def test_a_hook_staff_disabled_is_enabled_again_only_by_staff(
    face: str, world: dict[str, Any], live_server_url: str
) -> None:
    henry = Agentside("henry", face, live_server_url)
    proposed = henry.rest.post(
        "/api/v1/hooks/",
        {"name": "mornings", "kind": "scheduled", "schedule": "0 7 * * 1-5",
         "effects": [{"type": "message", "text": "roster"}]},
    ).json()  # fmt: skip
    hook = Hook.objects.get(pk=proposed["id"])
    assert hook.status == "active"

    def enable(on: bool) -> dict[str, Any]:
        if face == "rest":
            verb = "enable" if on else "disable"
            return dict(henry.rest.post(f"/api/v1/hooks/{hook.pk}/{verb}/", {}).json())
        return henry.mcp("loop.hook_state", {"hook_id": str(hook.pk), "enabled": on})

    assert enable(False)["status"] == "disabled"
    assert enable(True)["status"] == "active"  # its own off: its own to undo
    hook_set_enabled(hook=hook, enabled=False, by="alice", reason="too noisy")
    refused = enable(True)
    assert refused["code"] == "staff_only" and "alice" in json.dumps(refused)
    hook.refresh_from_db()
    assert hook.status == "disabled" and hook.disabled_by == "staff:alice"
    hook_set_enabled(hook=hook, enabled=True, by="alice")
    hook.refresh_from_db()
    assert hook.status == "active"


# --- grants end, and a person's grant is approved by their owners --------------------------------


def test_every_grant_ends_and_a_persons_grant_needs_an_owner_of_their_policy(
    world: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    reviewer = f.UserFactory(username="rev")
    reviewer.groups.add(Group.objects.get(name="reviewers"))
    coordinator = f.UserFactory(username="coord")
    coordinator.groups.add(
        Group.objects.get(name="reviewers"), Group.objects.get(name="coordinator")
    )
    reggie = Agentside("reggie", "rest", "")
    task = world["sms"]("0400000102", "send me Ruby's monthly report")
    asked = reggie.call(
        "rabs.capability.request", {"kind": "person", "tool_id": "test.report.write"}, task_id=task
    )
    approval = ApprovalRequest.objects.get(tool_call_id=asked["call_id"])

    def decide(user: Any) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            approval_decide(approval_id=approval.pk, reviewer=user, action="approve", reason="ok")

    with pytest.raises(ApprovalError) as refused:
        decide(reviewer)  # any reviewer: not for Linh
    assert refused.value.code == "not_grant_owner" and "coordinator" in refused.value.detail
    approval.refresh_from_db()
    assert approval.status == "pending" and not CapabilityGrant.objects.exists()
    decide(coordinator)
    grant = CapabilityGrant.objects.get()
    assert grant.approved_by == coordinator
    expected = timedelta(hours=settings.RABS_GRANT_DEFAULT_HOURS)  # asked without hours
    assert abs((grant.until - timezone.now()) - expected) < timedelta(minutes=2)

    # A tool grant asked for longer than the most a grant may last gets the most.
    f.ToolFactory(tool_id="test.henry.x")
    long = reggie.call("rabs.capability.request", {"kind": "tool", "tool_id": "test.henry.x",
                                                    "hours": 700})  # fmt: skip
    approval = ApprovalRequest.objects.get(tool_call_id=long["call_id"])
    decide(reviewer)
    longest = CapabilityGrant.objects.get(kind="tool")
    assert longest.until - timezone.now() <= timedelta(hours=settings.RABS_GRANT_MAX_HOURS)


# --- a budget counts what is in flight -----------------------------------------------------------


def test_a_model_budget_counts_requests_still_running(world: dict[str, Any]) -> None:
    upstream = llm_upstream_set(
        name="priced", base_url="http://127.0.0.1:9/v1", served_models=["m"], api_key=None,
        price_in=Decimal("1000"), price_out=Decimal("1000"), external=False,
    )  # fmt: skip
    reggie = Agent.objects.get(agent_id="reggie")
    budget = LLMBudget.objects.create(agent=reggie, max_budget=Decimal("0.05"))
    body = {"model": "m", "max_tokens": 60, "messages": [{"role": "user", "content": "hi"}]}
    admit: Callable[[], limits.Slot] = lambda: limits.admit(  # noqa: E731
        "reggie", budget, body, upstream=upstream
    )
    first = admit()  # reserves its worst case (~0.068 USD, over the budget): nothing spent yet
    with pytest.raises(LLMRefused) as refused:
        admit()
    assert refused.value.code == "budget_exceeded"
    first.settle(30, Decimal("0.03"))  # it cost less than its worst case
    admit().settle(0)  # room again
