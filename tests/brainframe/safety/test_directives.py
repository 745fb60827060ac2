"""Prime directives at four layers, the constitution's ratchet, and permission tiers — each
through the broker end to end."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core import mail
from django.db import DatabaseError, transaction
from django.test import Client

from brainframe.models import (
    Agent,
    ConstitutionRule,
    MonitoringLevelChange,
    Tool,
    ToolCall,
)
from brainframe.services.trust.alignment import alignment_signal
from tests import factories as f
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db
CALLS = "/api/v1/tool-calls/"


@pytest.fixture
def sms(seeded: None) -> Tool:
    return f.ToolFactory(
        tool_id="test.sms.send",
        execution_mode="auto",
        validation_mode="monitor",
        external_channel=True,
        agent_access=["henry"],
        handler_config={"callable": "tests.echo"},
        input_schema={"type": "object"},
        permission_tier="WRITE_SAFE",
    )


def test_layer_1_directives_are_the_system_prompt_preamble(henry: SignedClient) -> None:
    preamble = henry.get("/api/v1/context/").json()["directives_preamble"]
    assert preamble.startswith("PRIME DIRECTIVES")
    for code in ("PRIVACY_NO_PII", "SAFETY_FIRST", "NDIS_COMPLIANCE"):
        assert code in preamble


def test_layer_2_decision_filter_denies_naming_the_directive(
    henry: SignedClient, sms: Tool, executed: list[dict[str, Any]]
) -> None:
    response = henry.post(
        CALLS,
        {
            "tool_id": "test.sms.send",
            "reason": "send details",
            "arguments": {"message": "Your TFN is 123 456 782"},
        },
    )
    assert response.status_code == 403
    assert response.json()["code"] == "directive:PRIVACY_NO_PII"
    assert executed == []
    consented = henry.post(
        CALLS,
        {
            "tool_id": "test.sms.send",
            "reason": "participant asked",
            "arguments": {"message": "Your TFN is 123 456 782", "consent_pii": True},
        },
    )
    assert consented.status_code == 200


def test_safety_first_escalates_and_drops_the_tool_to_level_0(
    henry: SignedClient, sms: Tool, executed: list[dict[str, Any]]
) -> None:
    senior = f.UserFactory(username="dana", email="dana@rabs.test")
    senior.groups.add(Group.objects.get(name="senior_reviewers"))
    Tool.objects.filter(pk=sms.pk).update(monitoring_level=3)
    mail.outbox.clear()
    response = henry.post(
        CALLS,
        {
            "tool_id": "test.sms.send",
            "reason": "carer says Jo has had a fall and is unconscious",
            "arguments": {"message": "On it"},
        },
    )
    assert response.status_code == 202
    body = response.json()
    assert body["approval_status"] == "escalated"
    assert Tool.objects.get(pk=sms.pk).monitoring_level == 0
    change = MonitoringLevelChange.objects.get(tool=sms)
    assert change.rule == "directive_safety"
    assert any("SAFETY_FIRST" in m.subject for m in mail.outbox)
    assert executed == []


def test_layer_3_a_directive_violation_is_a_critical_misalignment(
    henry: SignedClient, sms: Tool
) -> None:
    Tool.objects.filter(pk=sms.pk).update(monitoring_level=2)
    body = henry.post(
        CALLS,
        {
            "tool_id": "test.sms.send",
            "reason": "x",
            "arguments": {"message": "Medicare number 2123 45670 1"},
        },
    ).json()
    call = ToolCall.objects.get(pk=body["call_id"])
    assert call.alignment_rating == 0.0  # rated as the denial arrived
    assert call.alignment_reasons[0] == "critical:directive:PRIVACY_NO_PII"
    assert Tool.objects.get(pk=sms.pk).monitoring_level == 0
    assert alignment_signal(call_id=call.pk) is None  # already rated: nothing twice


def test_ndis_claim_limit(henry: SignedClient, seeded: None) -> None:
    officer = f.UserFactory(username="fin")
    officer.groups.add(Group.objects.get(name="finance_officer"))
    Agent.objects.filter(agent_id="henry").update(trust_level="operator")
    task = f.AgentTaskFactory(agent_id="henry", on_behalf_of=officer)
    Tool.objects.filter(pk="finance.ndis.claim.submit").update(agent_access=["henry"])
    response = henry.post(
        CALLS,
        {
            "tool_id": "finance.ndis.claim.submit",
            "reason": "monthly",
            "task_id": str(task.task_id),
            "arguments": {"claim_batch_id": "B-1", "amount": 25000},
        },
    )
    assert response.status_code == 403
    assert response.json()["code"] == "directive:NDIS_COMPLIANCE"


def test_constitution_refuses_removal_rewording_and_weakening(seeded: None) -> None:
    rule = ConstitutionRule.objects.get(code="CONTENT_NOT_COMMAND")
    for attempt in (
        lambda: ConstitutionRule.objects.filter(pk=rule.pk).delete(),
        lambda: ConstitutionRule.objects.filter(pk=rule.pk).update(text="anything goes"),
        lambda: ConstitutionRule.objects.filter(code="LOOPBACK_ONLY").update(enforcement="flag"),
    ):
        with pytest.raises(DatabaseError, match="constitution"), transaction.atomic():
            attempt()
    assert ConstitutionRule.objects.filter(code="LOOPBACK_ONLY", enforcement="block").exists()
    ConstitutionRule.objects.filter(pk=rule.pk).update(enforcement="flag")  # strengthening
    ConstitutionRule.objects.create(
        code="NEW_RULE", number=6, title="t", text="x", enforcement="record"
    )


def test_admin_offers_only_strengthening(admin_client: Client, seeded: None) -> None:
    url = "/admin/brainframe/constitutionrule/LOOPBACK_ONLY/change/"
    page = admin_client.get(url).content.decode()
    assert "deletelink" not in page
    weakened = admin_client.post(url, {"enforcement": "record"})
    assert weakened.status_code == 200 and "only be strengthened" in weakened.content.decode()
    assert (
        admin_client.get("/admin/brainframe/constitutionrule/LOOPBACK_ONLY/delete/").status_code
        == 403
    )


def test_constitution_blocks_a_remote_control_surface(henry: SignedClient, seeded: None) -> None:
    f.ToolFactory(
        tool_id="test.http.get",
        agent_access=["henry"],
        permission_tier="READ_ONLY",
        handler_config={"callable": "tests.echo"},
        input_schema={"type": "object"},
    )
    response = henry.post(
        CALLS,
        {
            "tool_id": "test.http.get",
            "reason": "restart it",
            "arguments": {"url": "http://10.0.0.8:18080/control/restart"},
        },
    )
    assert response.status_code == 403
    assert response.json()["code"] == "constitution:LOOPBACK_ONLY"


@pytest.mark.parametrize(
    ("trust", "tier", "status", "code"),
    [
        ("standard", "WRITE_SAFE", 200, None),
        ("untrusted", "READ_ONLY", 200, None),
        ("standard", "WRITE_DESTRUCTIVE", 202, None),  # one step short: senior confirms
        ("untrusted", "WRITE_DESTRUCTIVE", 403, "insufficient_trust"),
        ("operator", "ADMIN", 403, "tier_admin_only"),
        ("system", "ADMIN", 200, None),
    ],
)
def test_permission_tiers(
    henry: SignedClient, seeded: None, trust: str, tier: str, status: int, code: str | None
) -> None:
    Agent.objects.filter(agent_id="henry").update(trust_level=trust)
    f.ToolFactory(
        tool_id="test.tiered",
        execution_mode="auto",
        validation_mode="monitor",
        agent_access=["henry"],
        permission_tier=tier,
        handler_config={"callable": "tests.echo"},
        input_schema={"type": "object"},
    )
    response = henry.post(CALLS, {"tool_id": "test.tiered", "reason": "x", "arguments": {}})
    assert response.status_code == status, response.json()
    if code:
        assert response.json()["code"] == code
    if status == 202:
        assert response.json()["approval_status"] == "escalated"
