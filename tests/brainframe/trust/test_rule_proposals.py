"""Proposed rules (seed 002's flywheel; docs/access.md): recurring rejections become a proposed
V-Pol rule; staff try it on recorded history, then accept or dismiss it on the board."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from brainframe.jobs import job_run
from brainframe.models import Agent, ApprovalRequest, RuleProposal, Tool, ValidationPolicy
from broker.services.approvals import approval_decide
from tests import factories as f
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db(transaction=True)


_orders = iter(range(10_000))


def _call(henry: SignedClient, vendor: str) -> dict[str, Any]:
    arguments = {"vendor": vendor, "q": f"order {next(_orders)}"}  # q differs every time
    response = henry.post(
        "/api/v1/tool-calls/",
        {"tool_id": "test.order.place", "arguments": arguments, "reason": "r"},
    )
    assert response.status_code in (200, 202, 403), response.content
    return dict(response.json())


def test_recurring_rejections_become_a_rule_tried_then_accepted(
    seeded: None, henry: SignedClient, admin_client: Client
) -> None:
    reviewer = f.UserFactory(username="rita", email="rita@rabs.test")
    reviewer.groups.add(Group.objects.get(name="reviewers"))
    f.ToolFactory(
        tool_id="test.order.place", agent_access=["henry"], execution_mode="review",
        input_schema={"type": "object", "properties": {"vendor": {"type": "string"},
                                                       "q": {"type": "string"}}},
    )  # fmt: skip
    Tool.objects.filter(pk="test.order.place").update(monitoring_level=0)
    asked = [_call(henry, "ACME") for _ in range(5)] + [_call(henry, "Other") for _ in range(2)]
    for answer in asked:
        assert answer["status"] == "pending_approval", answer
        approval_decide(
            approval_id=answer["approval_id"], reviewer=reviewer, action="reject",
            reason="we don't order from them",
        )  # fmt: skip

    made = job_run(name="propose_rules")
    assert [(p.tool_id, p.argument, p.value, p.action, p.count) for p in made] == [
        ("test.order.place", "vendor", "ACME", "review", 5)
    ]
    assert job_run(name="propose_rules") == []  # proposed once
    proposal = RuleProposal.objects.get()

    # The tool has since graduated: today those calls would run unreviewed.
    Tool.objects.filter(pk="test.order.place").update(monitoring_level=4, monitoring_ceiling=4)
    Agent.objects.filter(agent_id="henry").update(monitoring_level=4)
    listing = admin_client.get("/board/proposals/").content.decode()
    assert f'id="proposal-{proposal.pk}"' in listing and "vendor = ACME" in listing
    tried = admin_client.get(f"/board/proposals/{proposal.pk}/whatif/").content.decode()
    assert 'data-transition="execute → pending_approval"' in tried and "5 ×" in tried
    acme_ids = {a["call_id"] for a in asked[:5]}
    assert all(f'data-call="{i}"' in tried for i in acme_ids)
    assert all(f'data-call="{a["call_id"]}"' not in tried for a in asked[5:])

    assert admin_client.post(f"/board/proposals/{proposal.pk}/accept/").status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == "accepted" and proposal.decided_by is not None
    policy = ValidationPolicy.objects.get(name=proposal.vpol)
    assert policy.rules[0]["id"] == proposal.rule["id"]
    assert _call(henry, "ACME")["status"] == "pending_approval"
    assert _call(henry, "Other")["status"] == "executed"
    again = admin_client.post(f"/board/proposals/{proposal.pk}/dismiss/")
    assert again.status_code == 409 and again.json()["code"] == "already_decided"


def test_a_dismissed_proposal_is_not_proposed_again(seeded: None, admin_client: Client) -> None:
    proposal = RuleProposal.objects.create(
        tool_id="transport.vehicle.book", argument="vehicle_id", value="bus-9", action="deny",
        rule={"id": "x", "when": {"field": "tool.tool_id", "op": "eq", "value": "x"},
              "action": "deny"}, count=7,
    )  # fmt: skip
    assert admin_client.post(f"/board/proposals/{proposal.pk}/dismiss/").status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == "dismissed"
    assert ApprovalRequest.objects.count() == 0
    nobody = Client()
    nobody.force_login(f.UserFactory(username="viewer", email="v@rabs.test"))
    other = RuleProposal.objects.create(
        tool_id="transport.vehicle.book", argument="vehicle_id", value="bus-10", action="deny",
        rule=proposal.rule, count=5,
    )  # fmt: skip
    refused = nobody.post(f"/board/proposals/{other.pk}/accept/")
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
