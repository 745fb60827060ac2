"""Sequence rules (docs/access.md): V-Pol conditions over the chain's and the agent's earlier
calls, and what-if replay of a draft over recorded calls (the real pipeline, dry-run)."""

from __future__ import annotations

import gc
import json
import weakref
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client

from brainframe.models import (
    AclPolicy,
    Agent,
    ApprovalRequest,
    ChannelAdapter,
    EventLogEntry,
    ToolCall,
    Turn,
    ValidationPolicy,
)
from brainframe.safety.policy.conditions import vpol_rules_errors
from brainframe.services.ledger.channels import token_hash
from broker.pipeline.context import CallRequest
from broker.pipeline.stages import decide
from broker.services.calls import prepare
from broker.services.replay import policy_replay
from tests import factories as f
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db

RULES = [
    {
        "id": "external-after-health",
        "when": {"all": [
            {"field": "tool.external_channel", "op": "eq", "value": True},
            {"history": {"scope": "session", "data_class": "clinical"}},
        ]},
        "action": "review",
        "reason": "an external message in a chain that read a health record",
    },
    {
        "id": "mass-delete",
        "when": {"all": [
            {"field": "tool.tool_id", "op": "matches", "value": "\\.delete$"},
            {"history": {"scope": "agent", "tool": "*.delete", "within_minutes": 10,
                         "at_least": 20}},
        ]},
        "action": "deny",
        "reason": "more than 20 deletes in 10 minutes",
    },
    {
        "id": "payment-after-bank-change",
        "when": {"all": [
            {"field": "tool.tool_id", "op": "eq", "value": "seq.payment.make"},
            {"history": {"scope": "session", "tool": "seq.bank_details.update"}},
        ]},
        "action": "senior_review",
        "reason": "a payment after a bank-detail change in the same chain",
    },
]  # fmt: skip

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}, "amount": {"type": "number"}}}


@pytest.fixture
def sequence_tools(seeded: None) -> None:
    for tool_id, extra in (
        ("seq.health.read", {"data_class": "clinical"}),
        ("seq.sms.send", {"external_channel": True}),
        ("seq.record.delete", {}),
        ("seq.bank_details.update", {}),
        ("seq.payment.make", {}),
    ):
        f.ToolFactory(
            tool_id=tool_id, agent_access=["henry", "reggie"], input_schema=SCHEMA, **extra
        )
    f.ValidationPolicyFactory(
        name="sequences", rules=RULES, tool_patterns=["seq.*"], enforcement_mode="intercept"
    )


def _call(agent: SignedClient, tool_id: str, **more: Any) -> dict[str, Any]:
    arguments = more.pop("arguments", {"q": "x"})
    response = agent.post(
        "/api/v1/tool-calls/",
        {"tool_id": tool_id, "arguments": arguments, "reason": "sequence test", **more},
    )
    assert response.status_code in (200, 202, 403), response.content
    return dict(response.json())


def _chain(agent: SignedClient, tool_id: str, ref: str, **more: Any) -> dict[str, Any]:
    """A call that starts a new chain (an origin of its own)."""
    origin = {"origin_type": "email", "source_ref": ref}
    return _call(agent, tool_id, origin=origin, **more)


@pytest.mark.django_db(transaction=True)
def test_the_three_sequence_rules(
    sequence_tools: None, henry: SignedClient, reggie: SignedClient
) -> None:
    # An external message after a health record was read in the same chain: review.
    read = _chain(henry, "seq.health.read", "mail-1")
    assert read["status"] == "executed", read
    after = _call(henry, "seq.sms.send", o_tag=read["o_tag"])
    assert after["status"] == "pending_approval"
    assert "health record" in ToolCall.objects.get(pk=after["call_id"]).decision_detail
    # Starting a new origin does not escape it: the session (this agent's recent calls in any
    # chain) read a health record too.
    assert _chain(henry, "seq.sms.send", "mail-2")["status"] == "pending_approval"
    # The same message by an agent whose session read nothing clinical runs.
    assert _chain(reggie, "seq.sms.send", "mail-2")["status"] == "executed"

    # Twenty deletes by one agent in ten minutes run; the twenty-first is refused.
    for n in range(20):
        assert _chain(henry, "seq.record.delete", f"del-{n}")["status"] == "executed"
    refused = _chain(henry, "seq.record.delete", "del-21")
    assert refused["status"] == "denied" and refused["code"] == "policy:sequences"
    assert "more than 20 deletes" in refused["detail"]

    # A payment after a bank-detail change in the same chain: senior reviewers only.
    change = _chain(henry, "seq.bank_details.update", "mail-3")
    payment = _call(henry, "seq.payment.make", o_tag=change["o_tag"])
    assert payment["status"] == "pending_approval"
    approval = ApprovalRequest.objects.get(pk=payment["approval_id"])
    assert approval.reviewer_group == ApprovalRequest.ReviewerGroup.SENIOR
    fresh = _chain(henry, "seq.payment.make", "mail-4")  # a new origin: the session saw it
    assert fresh["status"] == "pending_approval"
    assert _chain(reggie, "seq.payment.make", "mail-4")["status"] == "executed"


def test_a_decision_is_freed_as_soon_as_it_is_done(sequence_tools: None) -> None:
    """A decision's context holds its facts, and the facts count sequence rules through the
    context: no reference cycle, or every call would wait for the garbage collector to free it
    (a pause every few dozen decisions)."""
    agent = Agent.objects.get(agent_id="henry")
    request = CallRequest(tool_id="seq.payment.make", arguments={"q": "x"}, reason="test")
    gc.disable()
    try:
        ctx = prepare(agent=agent, request=request)
        assert str(decide(ctx).outcome) == "execute"  # the rule's count was read: nothing yet
        assert ctx.facts()["history"]({"scope": "agent", "tool": "seq.*"}) == 0
        gone = weakref.ref(ctx)
        del ctx
        assert gone() is None  # freed by reference counting alone
    finally:
        gc.enable()


def test_a_sequence_rule_with_a_mistake_is_refused() -> None:
    bad = [{"id": "x", "when": {"history": {"scope": "tenant"}}, "action": "deny"}]
    assert any("tenant" in problem for problem in vpol_rules_errors(bad))


# --- what-if replay ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_what_if_reports_exactly_the_calls_whose_decision_changes(
    sequence_tools: None, henry: SignedClient, tmp_path: Any
) -> None:
    for n in range(3):
        _chain(henry, "seq.payment.make", f"pay-{n}", arguments={"amount": 100 * (n + 1)})
    big = _chain(henry, "seq.payment.make", "pay-big", arguments={"amount": 5000})
    _chain(henry, "seq.health.read", "read-1")
    calls, approvals, events = (
        ToolCall.objects.count(),
        ApprovalRequest.objects.count(),
        EventLogEntry.objects.count(),
    )

    draft = {
        "rules": [
            {
                "id": "big-payments",
                "when": {"field": "arguments.amount", "op": "gt", "value": 1000},
                "action": "deny",
                "reason": "payments over 1000 need a person",
            },
            *RULES,
        ]
    }
    report = policy_replay(kind="vpol", target="sequences", draft=draft, days=30).as_dict()
    assert report["calls"] == calls
    assert report["transitions"] == {"execute → deny": 1}
    assert [c["call_id"] for c in report["affected"]] == [big["call_id"]]
    assert report["affected"][0]["link"] == f"/board/calls/{big['call_id']}/chain/"
    # A dry run: nothing written.
    assert (
        ToolCall.objects.count(),
        ApprovalRequest.objects.count(),
        EventLogEntry.objects.count(),
    ) == (calls, approvals, events)

    # The command prints the same, and caps can be tried too.
    (tmp_path / "draft.json").write_text(json.dumps(draft))
    out = StringIO()
    call_command(
        "policy_replay", "--kind", "vpol", "--id", "sequences",
        "--draft", str(tmp_path / "draft.json"), "--since", "30d", stdout=out,
    )  # fmt: skip
    assert "1 would be decided differently" in out.getvalue()
    assert "execute → deny" in out.getvalue() and big["call_id"] in out.getvalue()
    (tmp_path / "caps.json").write_text('{"authority": {"max_amount": 250}}')
    out = StringIO()
    call_command(
        "policy_replay", "--kind", "caps", "--id", "henry", "--draft",
        str(tmp_path / "caps.json"), "--json", stdout=out,
    )  # fmt: skip
    capped = json.loads(out.getvalue())
    assert capped["transitions"] == {"execute → pending_approval": 2}  # 300 and 5000
    with pytest.raises(CommandError, match="rules/0: 'when' is a required property"):
        (tmp_path / "bad.json").write_text('{"rules": [{"id": "x"}]}')
        call_command(
            "policy_replay", "--kind", "vpol", "--id", "sequences", "--draft",
            str(tmp_path / "bad.json"),
        )  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_what_if_of_an_acl_policy_over_a_family_members_chain(
    seeded: None, reggie: SignedClient, client: Client
) -> None:
    f.ToolFactory(tool_id="ndis.notes.read", agent_access=["reggie"])
    ChannelAdapter.objects.create(
        name="sms-in", channel="sms", agent=Agent.objects.get(pk="reggie"),
        token_hash=token_hash("sms-token-0123456789"),
    )  # fmt: skip
    body = client.post(
        "/api/v1/channels/sms-in/",
        json.dumps({"message_id": "m1", "from": "0400000102", "body": "How is Ruby?"}),
        content_type="application/json",
        HTTP_AUTHORIZATION="Bearer sms-token-0123456789",
    ).json()
    task = str(Turn.objects.get(pk=body["turn_id"]).task_id)
    notes = _call(reggie, "ndis.notes.read", task_id=task)
    assert notes["status"] == "executed", notes
    mine = _call(reggie, "ndis.notes.read")  # Reggie's own work: nobody's ACL
    assert mine["status"] == "executed"

    family = AclPolicy.objects.get(name="family-access")
    draft = family.document.replace('"*.notes.read",', "")
    report = policy_replay(kind="acl", target="family-access", draft=draft).as_dict()
    assert [c["call_id"] for c in report["affected"]] == [notes["call_id"]]
    assert report["affected"][0]["would"] == "deny (principal_not_allowed)"

    # The admin shows the same before the change is saved, and saves it only when asked.
    staff = Client()
    staff.force_login(get_user_model().objects.create_superuser("acl", "a@x.test", "pw"))
    url = f"/admin/brainframe/aclpolicy/{family.pk}/change/"
    form = staff.get(url).content.decode()
    assert 'name="_whatif"' in form
    shown = staff.post(url, {"document": draft, "active": "on", "_whatif": "1"})
    page = shown.content.decode()
    assert shown.status_code == 200 and f'data-call="{notes["call_id"]}"' in page
    assert f'data-call="{mine["call_id"]}"' not in page
    assert "execute → deny" in page and "principal_not_allowed" in page
    family.refresh_from_db()
    assert family.version == 1  # a dry run saves nothing
    broken = staff.post(url, {"document": "name: [", "active": "on", "_whatif": "1"})
    assert "data-whatif-error" in broken.content.decode()
    saved = staff.post(url, {"document": draft, "active": "on", "_save": "Save"})
    assert saved.status_code == 302
    family.refresh_from_db()
    assert family.version == 2


# --- shadow mode --------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_shadow_rule_records_what_it_would_decide_and_acts_on_nothing(
    sequence_tools: None, henry: SignedClient, admin_client: Client
) -> None:
    shadow = {
        "id": "no-big-payments",
        "mode": "shadow",
        "when": {"field": "arguments.amount", "op": "gt", "value": 1000},
        "action": "deny",
        "reason": "payments over 1000 need a person",
    }
    ValidationPolicy.objects.filter(name="sequences").update(rules=[shadow, *RULES])
    big = _chain(henry, "seq.payment.make", "pay-big", arguments={"amount": 5000})
    small = _chain(henry, "seq.payment.make", "pay-small", arguments={"amount": 50})
    assert big["status"] == small["status"] == "executed"  # acted on nothing

    kept = EventLogEntry.objects.filter(name="governance:shadow_decision")
    assert [e.payload["call_id"] for e in kept] == [big["call_id"]]
    payload = kept[0].payload
    assert (payload["would"], payload["decided"], payload["rule"]) == (
        "deny",
        "execute",
        "no-big-payments",
    )

    page = admin_client.get("/board/shadow/").content.decode()
    assert f'data-call="{big["call_id"]}" class="differs"' in page
    assert small["call_id"] not in page and 'data-rule="no-big-payments"' in page

    # What enforcing it would change, before anyone does.
    enforced = {**shadow, "mode": "enforce"}
    report = policy_replay(
        kind="vpol", target="sequences", draft={"rules": [enforced, *RULES]}
    ).as_dict()
    assert [c["call_id"] for c in report["affected"]] == [big["call_id"]]
