"""Access control (docs/access.md): ACL policies over real inbound messages, the principal's
permissions intersected with the agent's in the broker, and the three-axis caps."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from brainframe.admin.agents import AgentAdminForm
from brainframe.models import (
    AclPolicy,
    Agent,
    ApprovalRequest,
    CapabilityGrant,
    OriginRegistry,
    ToolCall,
)
from brainframe.safety.policy.acl import AclDocumentError, acl_decide, acl_facts, acl_parse
from brainframe.services.access.grants import grants_expire
from brainframe.services.seed import DEMO_ACL
from broker.services.approvals import approval_decide
from tests import factories as f
from tests.brainframe.access.conftest import task_of
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db


def _acl_of(body: dict[str, Any]) -> dict[str, Any]:
    origin = OriginRegistry.objects.get(pk=body["o_tag"])
    return {"policy": origin.metadata["acl"]["policy"], "principal": origin.principal}


def _call(agent: SignedClient, tool_id: str, arguments: dict[str, Any], **more: Any) -> Any:
    response = agent.post(
        "/api/v1/tool-calls/",
        {"tool_id": tool_id, "arguments": arguments, "reason": "answer the sender", **more},
    )
    assert response.status_code in (200, 202, 403), response.content
    return response.json()


# --- the language -------------------------------------------------------------------------------


def test_a_policy_with_mistakes_is_refused_with_the_lines_at_fault() -> None:
    text = "name: night\npriority: 5\nwhen:\n  field: principal.shoe_size\n  op: gt\neffect: deny\n"
    with pytest.raises(AclDocumentError) as refused:
        acl_parse(text)
    assert any(line.startswith("line 4: when/field:") for line in refused.value.lines())

    with pytest.raises(AclDocumentError) as refused:
        acl_parse("name: x\npriority: 1\nwhen: {field: message.is_group, op: eq, value: true}\n"
                  "effect: deny\npermissions:\n  tools: ['*']\n")  # fmt: skip
    assert "a deny policy carries no permissions" in str(refused.value)
    with pytest.raises(AclDocumentError) as refused:
        acl_parse("name: x\npriority: [1\n")
    assert str(refused.value).startswith("line 3: not YAML") or "not YAML" in str(refused.value)


def test_time_of_day_decides_with_the_rest() -> None:
    after_hours = acl_parse(
        "name: after-hours\npriority: 60\nwhen:\n  any:\n    - {field: context.hour, op: lt, "
        "value: 7}\n    - {field: context.hour, op: gt, value: 21}\neffect: deny\n"
    )
    family = acl_parse(DEMO_ACL.read_text().split("---")[2])
    principal = {"known": True, "relationship": "family", "channel": "sms"}
    assert acl_decide([after_hours, family], acl_facts(principal, hour=23)).policy == "after-hours"
    decision = acl_decide([after_hours, family], acl_facts(principal, hour=10))
    assert decision.policy == "family-access" and decision.route_to == "reggie"
    assert acl_decide([after_hours], acl_facts(principal, hour=10)).effect == "deny"  # no match


def test_acl_load_is_all_or_none_and_acl_dump_reads_back(seeded: None, tmp_path: Any) -> None:
    before = {p.name: p.version for p in AclPolicy.objects.all()}
    assert set(before) == {"owner-full-access", "group-chat-restrictions", "family-access",
                           "block-unknown"}  # fmt: skip
    broken = tmp_path / "acl.yaml"
    broken.write_text(
        "name: suppliers\npriority: 40\nwhen: {field: principal.relationship, op: eq, value: "
        "supplier}\neffect: allow\npermissions: {tools: [comms.email.send]}\n---\n"
        "name: second\npriority: 3\nwhen: {field: principal.known, op: eq, value: true}\n"
        "effect: maybe\n"
    )
    with pytest.raises(CommandError) as refused:
        call_command("acl_load", str(broken))
    assert "line 10: effect" in str(refused.value)  # its line in the file
    assert not AclPolicy.objects.filter(name="suppliers").exists()  # nothing loaded

    dumped = StringIO()
    call_command("acl_dump", stdout=dumped)
    (tmp_path / "dump.yaml").write_text(dumped.getvalue())
    out = StringIO()
    call_command("acl_load", str(tmp_path / "dump.yaml"), stdout=out)
    assert out.getvalue().startswith("unchanged: owner-full-access")
    assert {p.name: p.version for p in AclPolicy.objects.all()} == before


def test_the_admin_checks_a_policy_and_keeps_its_history(seeded: None) -> None:
    staff = Client()
    staff.force_login(get_user_model().objects.create_superuser("acl", "a@x.test", "pw"))
    policy = AclPolicy.objects.get(name="block-unknown")
    url = f"/admin/brainframe/aclpolicy/{policy.pk}/change/"
    bad = staff.post(url, {"document": policy.document.replace("op: eq", "op: equals"),
                           "active": "on"})  # fmt: skip
    assert bad.status_code == 200 and "line 8: when/op: &#x27;equals&#x27; is not one of" in (
        bad.content.decode()
    )
    good = staff.post(url, {"document": policy.document.replace(", \"native.message.triage\"", ""),
                            "active": "on"})  # fmt: skip
    assert good.status_code == 302
    policy.refresh_from_db()
    assert policy.version == 2 and policy.history.count() == 2
    assert staff.get("/admin/brainframe/aclpolicy/").status_code == 200


# --- the demo policies over real inbound messages -----------------------------------------------


def test_each_demo_policy_over_real_inbound_messages(inbound: Any) -> None:
    owner = inbound("chat", "@Priya", "send me the week's roster")
    assert _acl_of(owner)["policy"] == "owner-full-access"
    assert owner["handled"] == "turn" and owner["session"].startswith("agent:henry:")

    family = inbound("sms", "0400 000 102", "Is Ruby's outing on?")  # Linh Tran
    seen = _acl_of(family)
    assert seen["policy"] == "family-access"
    assert seen["principal"]["name"] == "Linh Tran"
    assert seen["principal"]["participant_id"] == "P-1042"
    assert family["session"].startswith("agent:reggie:")  # routed by the policy

    participant = inbound("sms", "+61400000101", "what time is my shift?")  # Ruby herself
    assert _acl_of(participant)["policy"] == "family-access"

    stranger = inbound("sms", "+61499999999", "who is this?")
    assert _acl_of(stranger)["policy"] == "block-unknown"
    assert _acl_of(stranger)["principal"]["known"] is False
    assert stranger["session"].startswith("agent:reggie:")

    group = inbound("chat", "@linh", "hi all", chat_id="G-1", is_group=True)
    assert _acl_of(group)["policy"] == "group-chat-restrictions"

    # A supplier: no policy matches, so the message is kept and nobody acts on it.
    supplier = inbound("email", "bookings@hillsbus.example", "invoice attached")
    assert supplier["handled"] == "acl_denied" and supplier["turn_id"] is None
    assert _acl_of(supplier)["policy"] is None


# The handlers run in a worker thread, which sees committed rows only.
@pytest.mark.django_db(transaction=True)
def test_the_agent_and_the_person_must_both_allow_a_call(
    inbound: Any, reggie: SignedClient, henry: SignedClient
) -> None:
    family = inbound("sms", "0400000102", "How is Ruby?")
    task = task_of(family)
    own = _call(reggie, "ndis.notes.read", {"participant_id": "P-1042"}, task_id=task)
    assert own["status"] == "executed", own
    other = _call(reggie, "ndis.notes.read", {"participant_id": "P-2000"}, task_id=task)
    assert other["status"] == "denied" and other["code"] == "principal_scope"
    assert "P-2000" in other["detail"] and "only P-1042" in other["detail"]
    beyond = _call(reggie, "test.report.write", {"q": "x"}, task_id=task)
    assert beyond["status"] == "denied" and beyond["code"] == "principal_not_allowed"
    assert "Linh Tran" in beyond["detail"] and "family-access" in beyond["detail"]
    # A knock-on call of the chain carries the same principal.
    knock_on = _call(reggie, "test.report.write", {"q": "x"}, parent_r_tag=own["r_tag"])
    assert knock_on["code"] == "principal_not_allowed"
    # The same agent on its own work is not limited by anyone's ACL.
    assert _call(reggie, "test.report.write", {"q": "x"})["status"] == "executed"

    # A worker on the chain's behalf is held to the same person's permissions.
    handed = _call(
        reggie,
        "agents.delegate",
        {"agent_id": "henry", "title": "Look it up", "instructions": "read Ruby's notes"},
        task_id=task,
    )
    assert handed["status"] == "executed", handed
    worker = _call(henry, "test.report.write", {"q": "x"}, task_id=handed["result"]["task_id"])
    assert worker["code"] == "principal_not_allowed" and "Linh Tran" in worker["detail"]

    # An unknown sender: replies to the sender only.
    stranger = inbound("sms", "+61499999999", "call me back?")
    task = task_of(stranger)
    elsewhere = _call(reggie, "comms.sms.send", {"to": "+61400000101", "message": "hi"},
                      task_id=task)  # fmt: skip
    assert elsewhere["code"] == "principal_scope" and "not the sender" in elsewhere["detail"]
    back = _call(reggie, "comms.sms.send", {"to": "0499 999 999", "message": "We'll call."},
                 task_id=task)  # fmt: skip
    assert back["status"] != "denied", back

    # A policy change is in force from the next call (the registry's token).
    policy = AclPolicy.objects.get(name="family-access")
    policy.document = policy.document.replace('"*.notes.read",', "")
    policy.save()
    again = _call(reggie, "ndis.notes.read", {"participant_id": "P-1042"},
                  task_id=task_of(family))  # fmt: skip
    assert again["code"] == "principal_not_allowed" and "family-access v2" in again["detail"]


# --- three-axis caps ----------------------------------------------------------------------------


def _capped(caps: dict[str, Any]) -> None:
    Agent.objects.filter(agent_id="henry").update(caps=caps, monitoring_level=4)


@pytest.mark.django_db(transaction=True)
def test_each_cap_axis_refuses_or_sends_to_review_naming_it(
    seeded: None, henry: SignedClient
) -> None:
    f.ToolFactory(tool_id="test.cap.read", agent_access=["henry"])
    write = f.ToolFactory(
        tool_id="test.cap.write", agent_access=["henry"], category="finance",
        risk_level="write", permission_tier="WRITE_DESTRUCTIVE", execution_mode="review",
        input_schema={"type": "object", "properties": {
            "amount": {"type": "number"}, "to": {"type": "array"}}},
    )  # fmt: skip
    write.monitoring_level = write.monitoring_ceiling = 4
    write.save()
    Agent.objects.filter(agent_id="henry").update(trust_level="operator")

    # Capability: the tier, then the categories.
    _capped({"capability": {"max_tier": "WRITE_SAFE"}})
    refused = _call(henry, "test.cap.write", {"amount": 1})
    assert refused["code"] == "cap_capability" and "WRITE_SAFE" in refused["detail"]
    _capped({"capability": {"categories": ["operations"]}})
    assert _call(henry, "test.cap.write", {"amount": 1})["code"] == "cap_capability"
    assert _call(henry, "test.cap.read", {"q": "x"})["status"] == "executed"

    # Authority: per call, then per day; over means review unless the cap says deny.
    _capped({"authority": {"max_amount": 500, "max_recipients": 2}})
    big = _call(henry, "test.cap.write", {"amount": 900})
    assert big["status"] == "pending_approval", big
    call = _approval_reason(big)
    assert "cap:authority" in call and "900" in call
    assert _call(henry, "test.cap.write", {"amount": 100})["status"] == "executed"
    many = _call(henry, "test.cap.write", {"to": ["a@x.test", "b@x.test", "c@x.test"]})
    assert many["status"] == "pending_approval" and "3 recipients" in _approval_reason(many)
    _capped({"authority": {"max_amount_per_day": 300, "over": "deny"}})
    # Today so far: 100 executed + 900 waiting for approval.
    today = _call(henry, "test.cap.write", {"amount": 50})
    assert today["code"] == "cap_authority" and "1050" in today["detail"]

    # Autonomy: the level is capped (graduation never lifts past it)...
    _capped({"autonomy": {"max_level": 0}})
    assert _call(henry, "test.cap.write", {"amount": 1})["status"] == "pending_approval"
    # ...and so is how much runs in an hour with nobody looking.
    _capped({"autonomy": {"unreviewed_per_hour": 2}})  # two ran above
    held = _call(henry, "test.cap.read", {"q": "x"})
    assert held["status"] == "pending_approval" and "cap:autonomy" in _approval_reason(held)


def _approval_reason(answer: dict[str, Any]) -> str:
    from brainframe.models import ToolCall

    call = ToolCall.objects.get(pk=answer["call_id"])
    return f"{call.decision_code}: {call.decision_detail}"


def test_caps_are_checked_when_staff_save_them(seeded: None) -> None:
    henry = Agent.objects.get(agent_id="henry")
    data = {**AgentAdminForm(instance=henry).initial, "caps": '{"autonomy": {"max_level": 7}}'}
    form = AgentAdminForm(instance=henry, data=data)
    assert not form.is_valid()
    assert "autonomy/max_level: 7 is greater than the maximum of 4" in str(form.errors["caps"])
    data["caps"] = '{"autonomy": {"max_level": 2}}'
    assert "caps" not in AgentAdminForm(instance=henry, data=data).errors


# --- temporary grants ----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_persons_grant_from_request_to_revocation(
    inbound: Any, reggie: SignedClient, django_capture_on_commit_callbacks: Any
) -> None:
    reviewer = f.UserFactory(username="owner", email="owner@rabs.test")
    # A reviewer, and a coordinator: family-access names coordinators as its people's owners.
    reviewer.groups.add(Group.objects.get(name="reviewers"), Group.objects.get(name="coordinator"))
    family = inbound("sms", "0400000102", "Please send me Ruby's monthly report")
    task = task_of(family)
    refused = _call(reggie, "test.report.write", {"q": "x"}, task_id=task)
    assert refused["code"] == "principal_not_allowed"

    # Reggie asks, on Linh's behalf, for a day; the owner approves one hour.
    asked = _call(
        reggie,
        "rabs.capability.request",
        {"kind": "person", "tool_id": "test.report.write", "hours": 24},
        task_id=task,
    )
    assert asked["status"] == "pending_approval", asked
    approval = ApprovalRequest.objects.get(tool_call_id=asked["call_id"])
    with django_capture_on_commit_callbacks(execute=True):
        approval_decide(
            approval_id=approval.pk, reviewer=reviewer, action="modify",
            arguments={"kind": "person", "tool_id": "test.report.write", "hours": 1},
            reason="an hour is enough",
        )  # fmt: skip
    grant = CapabilityGrant.objects.get(kind="person")
    assert grant.person.name == "Linh Tran" and grant.tool_ids == ["test.report.write"]
    assert timedelta(minutes=59) < grant.until - timezone.now() <= timedelta(hours=1)

    # Used: the call runs, and its audit names the grant.
    used = _call(reggie, "test.report.write", {"q": "x"}, task_id=task)
    assert used["status"] == "executed", used
    assert f"under grant {grant.pk}" in ToolCall.objects.get(pk=used["call_id"]).decision_detail
    # Only for Linh: her daughter's own chain is not widened.
    ruby = inbound("sms", "+61400000101", "send my report")
    other = _call(reggie, "test.report.write", {"q": "x"}, task_id=task_of(ruby))
    assert other["code"] == "principal_not_allowed"

    # Expiry: refused from the moment it runs out, withdrawn by the minute job.
    CapabilityGrant.objects.filter(pk=grant.pk).update(until=timezone.now() - timedelta(seconds=1))
    late = _call(reggie, "test.report.write", {"q": "x"}, task_id=task)
    assert late["code"] == "principal_not_allowed"
    assert grants_expire() == [str(grant.pk)]

    # A wider scope, approved as asked, then revoked on the board at once.
    asked = _call(
        reggie, "rabs.capability.request", {"kind": "person", "scope": "participant:any"},
        task_id=task,
    )  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        approval_decide(
            approval_id=ApprovalRequest.objects.get(tool_call_id=asked["call_id"]).pk,
            reviewer=reviewer, action="approve", reason="ok",
        )  # fmt: skip
    wide = CapabilityGrant.objects.get(kind="person", withdrawn_at__isnull=True)
    assert wide.scopes == {"participant": "any"} and wide.approved_by == reviewer
    assert wide.until is not None  # every grant ends
    reach = _call(reggie, "ndis.notes.read", {"participant_id": "P-2000"}, task_id=task)
    assert reach["status"] == "executed", reach
    board = Client()
    board.force_login(reviewer)
    page = board.get("/board/approvals/").content.decode()
    assert f'id="grant-{wide.pk}"' in page and "Linh Tran (through reggie)" in page
    assert board.post(f"/board/grants/{wide.pk}/revoke/").status_code == 302
    again = _call(reggie, "ndis.notes.read", {"participant_id": "P-2000"}, task_id=task)
    assert again["code"] == "principal_scope"


@pytest.mark.django_db(transaction=True)
def test_a_person_grant_needs_a_person_behind_the_chain(
    seeded: None, reggie: SignedClient, django_capture_on_commit_callbacks: Any
) -> None:
    reviewer = f.UserFactory(username="rev", email="rev@rabs.test")
    reviewer.groups.add(Group.objects.get(name="reviewers"))
    asked = _call(reggie, "rabs.capability.request", {"kind": "person", "tool_id": "x.y"})
    with django_capture_on_commit_callbacks(execute=True):
        approval_decide(
            approval_id=ApprovalRequest.objects.get(tool_call_id=asked["call_id"]).pk,
            reviewer=reviewer, action="approve", reason="ok",
        )  # fmt: skip
    call = ToolCall.objects.get(pk=asked["call_id"])
    assert call.outcome == "failed" and "known person" in call.error
    assert not CapabilityGrant.objects.exists()


# --- sharing: DAC → MAC → ABAC -------------------------------------------------------------------
