"""Every admin page renders; the tools registry refuses bad schemas and keeps history."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import admin
from django.db.models import Model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from brainframe.models import (
    Agent,
    ApprovalRequest,
    ContextBucketDefinition,
    HookCursor,
    HookMessage,
    MonitoringLevelChange,
    Tool,
    ValidationPolicy,
)
from brainframe.services.eventlog.sinks import sink_set
from brainframe.services.hooks.lifecycle import hook_propose
from brainframe.services.memory.discovery import discovery_sync
from brainframe.services.work.tasks import task_announce
from tests import factories as f
from tests.admin_forms import page_form as _page_form
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db


@pytest.fixture
def populated(seeded: None) -> None:
    """Demo data plus one row in each table the seed leaves empty."""
    agent = Agent.objects.get(agent_id="henry")
    tool = Tool.objects.get(tool_id="roster.shift.create")
    call = f.ToolCallFactory(agent=agent, tool=tool)
    approval = f.ApprovalRequestFactory(agent=agent, tool=tool, tool_call=call, r_tag=call.r_tag)
    from brainframe.models import NotificationDelivery

    NotificationDelivery.objects.create(
        approval=approval, event="created", channel="webhook", recipient="https://hooks.test/"
    )
    from brainframe.models import CapabilityGrant, MCPUpstream, UpstreamToolChange
    from brainframe.services.access.credentials import agent_token_issue

    agent_token_issue(agent=agent, label="desktop client")
    upstream = MCPUpstream.objects.create(
        name="time", transport="stdio", command=["python", "-m", "mcp_server_time"]
    )
    UpstreamToolChange.objects.create(
        upstream=upstream, tool=tool, fields=["description"], before={}, after={}
    )
    CapabilityGrant.objects.create(agent=agent, kind="tool", tool_ids=[tool.tool_id])
    MonitoringLevelChange.objects.create(
        tool=tool, from_level=0, to_level=1, rule="graduation", reason="30 days at 0.72"
    )
    from datetime import date

    from brainframe.models import AlignmentSnapshot

    AlignmentSnapshot.objects.create(tool=tool, date=date(2026, 3, 1), score=0.91, level=1)
    from brainframe.models import DecayRun

    DecayRun.objects.create(night=date(2026, 3, 2), rows_updated=6)
    sink_set(name="siem", url="https://siem.test/in", secret="sixteen-chars-or-more")
    from brainframe.models import EventLogEntry, WebhookDelivery
    from brainframe.services.eventlog.webhooks import webhook_subscribe

    subscription, _ = webhook_subscribe(
        agent=Agent.objects.get(agent_id="reggie-voice"), url="https://hooks.test/rabs"
    )
    task_announce(f.AgentTaskFactory(agent=agent))
    WebhookDelivery.objects.create(
        subscription=subscription,
        event=EventLogEntry.objects.order_by("-id").first(),
        next_attempt_at=timezone.now(),
    )
    hook = hook_propose(
        agent=agent,
        definition={
            "name": "henry hook",
            "kind": "scheduled",
            "schedule": "0 7 * * 1-5",
            "effects": [{"type": "message", "text": "roster"}],
        },
        proposed_by="agent:henry",
    )
    HookMessage.objects.create(agent=agent, hook=hook, text="roster", event_ref="timer:x")
    HookCursor.objects.create(cursor={"henry": 1})
    task_announce(f.AgentTaskFactory(agent=agent, title="kanban card"))  # a Kanban view row
    from brainframe.events import AgentStatusChanged, PlanSaved, emit

    emit(PlanSaved(agent_id="henry", plan_id="p-1", goal="a plan", steps=({"id": "s1"},)))
    emit(AgentStatusChanged(agent_id="henry", status="active", previous="idle"))
    discovery_sync()
    from brainframe.models import AgentCredential, Deliverable, ReasonEdge

    ReasonEdge.objects.create(
        reason=call.r_tag, entity_type="roster.shift", entity_id="SH-1", relationship="created"
    )
    AgentCredential.objects.create(agent=agent, secret_encrypted="x", fingerprint="abc")
    from brainframe.services.llm.usage import usage_record

    usage_record(agent=agent, mode="normal", model="gpt-4o-mini", prompt_tokens=900)
    from brainframe.models import (
        AgentSupervisor,
        LLMBudget,
        LLMKey,
        LLMRequest,
        LLMTeam,
        LLMUpstream,
        SupervisorCommand,
    )

    LLMTeam.objects.create(name="ops").agents.add(agent)
    from brainframe.models import LLMCacheEntry

    LLMCacheEntry.objects.create(
        agent=agent, model="m", prompt_sha256="0" * 64, params_sha256="1" * 64, response={}
    )

    LLMUpstream.objects.create(name="local", base_url="http://127.0.0.1:9/v1", served_models=["m"])
    LLMBudget.objects.create(agent=agent, aliases={"actuator": "m"})
    LLMKey.objects.create(agent=agent, prefix="rabs-llm-abc", key_sha256="0" * 64)
    LLMRequest.objects.create(agent=agent, endpoint="chat/completions", model="m", status=200)
    # Conversations: a person, a channel, a message in the events ledger and its turn, a second
    # message waiting (follow-up), a timer tick, a delegation, a learning card.
    from brainframe.models import (
        ChannelAdapter,
        ChannelIdentity,
        Delegation,
        LearningCard,
        Person,
        Thread,
    )
    from brainframe.services.ledger.channels import token_hash
    from brainframe.services.ledger.conversations import message_receive
    from brainframe.services.ledger.ledgers import timer_tick

    linh = Person.objects.create(name="Linh henry", relationship="family")
    ChannelIdentity.objects.create(person=linh, channel="sms", address="+61412345678")
    adapter = ChannelAdapter.objects.create(
        name="sms", channel="sms", agent=agent, token_hash=token_hash("t" * 20)
    )
    message_receive(adapter, {"message_id": "m1", "from": "0412345678", "body": "hello"})
    message_receive(adapter, {"message_id": "m2", "from": "0412345678", "body": "again"})
    # What was sent back on it, and a Matrix room a bot is in (docs/channels.md).
    from brainframe.models import MatrixRoom, OutboundMessage

    OutboundMessage.objects.create(
        call=call, kind="reply", agent=agent, adapter=adapter, channel="sms",
        address="+61412345678", body="hello henry",
    )  # fmt: skip
    MatrixRoom.objects.create(room_id="!henry:rabs.local", agent=agent, adapter=adapter)
    timer_tick()
    Delegation.objects.create(
        manager=Agent.objects.get(agent_id="reggie"),
        worker=agent,
        call=call,
        task=f.AgentTaskFactory(agent=agent, title="delegated"),
        thread=Thread.objects.create(agent=agent, title="delegated"),
        depth=1,
        instructions="check the bus",
    )
    LearningCard.objects.create(
        agent=agent, tool_id=tool.tool_id, lesson="use the bus", due_at="2030-01-01T00:00:00Z"
    )
    from brainframe.models import RuleProposal

    RuleProposal.objects.create(
        tool_id=tool.tool_id, argument="vendor", value="ACME", action="review", count=5,
        rule={"id": "proposed-vendor-acme", "action": "review",
              "when": {"field": "arguments.vendor", "op": "eq", "value": "ACME"}},
    )  # fmt: skip

    AgentSupervisor.objects.create(
        agent=agent, control_url="http://127.0.0.1:8765", token_encrypted="x"
    )
    SupervisorCommand.objects.create(
        agent=agent, action="restart", reason="stuck", ok=False, answer={"code": "x"}
    )
    from django.contrib.auth import get_user_model

    from brainframe.models import CouncilMember, ReviewerPreference, StandingApproval
    from brainframe.services.council.votes import proposal_open, proposal_vote

    staff = get_user_model().objects.create_user("councillor", is_staff=True)
    CouncilMember.objects.create(user=staff)
    get_user_model().objects.create_user("second", is_staff=True)
    proposal = proposal_open(
        kind="seat", target="second", change={}, title="Seat second", by=staff, hours=1
    )
    proposal_vote(proposal_id=proposal.pk, member=staff, choice="yes", comment="welcome")
    ReviewerPreference.objects.create(user=staff, digest="hourly")
    StandingApproval.objects.create(
        agent=agent,
        tool=tool,
        pattern={"date": {"any": True}},
        from_approval=approval,
        granted_by=staff,
        until="2030-01-01T00:00:00Z",
    )
    Deliverable.objects.create(
        agent=agent,
        file="outbox/henry/x.pdf",
        filename="x.pdf",
        content_type="application/pdf",
        size_bytes=10,
        sha256="0" * 64,
    )
    from brainframe.models import AuditCheckpoint

    AuditCheckpoint.objects.create(
        seq=1,
        at="2026-03-02T00:00:00Z",
        key_id="0" * 16,
        reason="beat",
        body='{"heads": {"audit:henry": {"count": 1, "hash": "0", "seq": 1}}, "seq": 1}',
        signature="x",
    )


def _registered() -> list[type[Model]]:
    return [model for model in admin.site._registry if model._meta.app_label == "brainframe"]


def _url(model: type[Model], view: str, *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def test_every_brainframe_table_has_an_admin() -> None:
    from django.apps import apps

    missing = {
        model.__name__
        for model in apps.get_app_config("brainframe").get_models()
        if model not in admin.site._registry and not model.__name__.startswith("Historical")
    }
    assert missing == set()


@pytest.mark.parametrize("model", _registered(), ids=lambda m: m.__name__)
def test_list_search_and_detail_pages_render(
    admin_client: Client, populated: None, model: type[Model]
) -> None:
    changelist = admin_client.get(_url(model, "changelist"))
    assert changelist.status_code == 200
    assert admin_client.get(_url(model, "changelist"), {"q": "henry"}).status_code == 200

    obj = model._default_manager.first()
    assert obj is not None, f"no {model.__name__} row to open"
    detail = admin_client.get(_url(model, "change", obj.pk))
    assert detail.status_code == 200

    model_admin = admin.site._registry[model]
    request = changelist.wsgi_request
    add = admin_client.get(_url(model, "add"))
    assert add.status_code == (200 if model_admin.has_add_permission(request) else 403)


@pytest.mark.parametrize("model", [Tool, ValidationPolicy], ids=lambda m: m.__name__)
def test_history_pages_render(admin_client: Client, seeded: None, model: type[Model]) -> None:
    obj = model._default_manager.first()
    assert admin_client.get(_url(model, "history", obj.pk)).status_code == 200


def test_policy_rules_are_validated_and_changes_bump_the_version(
    admin_client: Client, seeded: None
) -> None:
    policy = ValidationPolicy.objects.get(name="finance_limits")
    url = _url(ValidationPolicy, "change", policy.pk)
    form = {
        "name": policy.name,
        "description": policy.description,
        "context_bucket": policy.context_bucket,
        "tool_patterns": ",".join(policy.tool_patterns),
        "enforcement_mode": policy.enforcement_mode,
        "priority": policy.priority,
        "active": "on",
        "rules": '[{"id": "x", "when": {"field": "arguments.amount", "op": "bigger"},'
        ' "action": "deny"}]',
    }
    response = admin_client.post(url, form)
    assert response.status_code == 200
    assert "is not valid under any of the given schemas" in response.content.decode()
    policy.refresh_from_db()
    assert policy.version == 1

    form["rules"] = (
        '[{"id": "over-5k", "when": {"field": "arguments.amount", "op": "gt", "value": 5000},'
        ' "action": "deny", "reason": "too much"}]'
    )
    assert admin_client.post(url, form).status_code == 302
    policy.refresh_from_db()
    assert policy.version == 2
    assert policy.rules[0]["id"] == "over-5k"
    assert policy.history.count() == 2

    # Save pressed again on the unchanged page, or only the description edited: same version
    # (a new one would leave every approval pending under it undecidable).
    assert admin_client.post(url, form).status_code == 302
    assert admin_client.post(url, {**form, "description": "Reworded."}).status_code == 302
    policy.refresh_from_db()
    assert policy.version == 2 and policy.description == "Reworded."


def test_audit_tables_are_read_only_in_the_admin(admin_client: Client, populated: None) -> None:
    from brainframe.models import OriginRegistry, ReasonLog, ToolCall

    for model in (ToolCall, ReasonLog, OriginRegistry):
        obj = model._default_manager.first()
        page = admin_client.get(_url(model, "change", obj.pk)).content.decode()
        assert 'name="_save"' not in page
        assert admin_client.get(_url(model, "add")).status_code == 403
        assert admin_client.get(_url(model, "delete", obj.pk)).status_code == 403


def test_bucket_definitions_are_fixed(admin_client: Client, seeded: None) -> None:
    assert ContextBucketDefinition.objects.count() == 20
    assert admin_client.get(_url(ContextBucketDefinition, "add")).status_code == 403
    approval = ApprovalRequest.objects.first()
    assert approval is None  # the seed creates no approvals; the broker does


def test_origin_chain_view_shows_every_decision(admin_client: Client, populated: None) -> None:
    from brainframe.models import ReasonLog, ToolCall

    call = ToolCall.objects.first()
    knock_on = f.ReasonLogFactory(
        agent=call.agent,
        o_tag=call.o_tag,
        parent=call.r_tag,
        chain_id=call.r_tag.chain_id,
        thought="knock-on: notify staff",
    )
    url = reverse("admin:brainframe_originregistry_chain", args=[call.o_tag_id])
    page = admin_client.get(url).content.decode()
    assert call.r_tag.thought in page and knock_on.thought in page
    assert page.index(call.r_tag.thought) < page.index(knock_on.thought)
    assert "↳" in page and call.requested_tool_id in page
    detail = admin_client.get(_url(ToolCall, "change", call.pk)).content.decode()
    assert url in detail
    assert ReasonLog.objects.filter(o_tag=call.o_tag).count() == 2


def test_llm_usage_shows_cost_and_totals(admin_client: Client, seeded: None) -> None:
    from brainframe.services.llm.usage import usage_record

    reggie = Agent.objects.get(agent_id="reggie")
    usage_record(agent=reggie, mode="normal", model="gpt-4o-mini", prompt_tokens=1_000_000)
    usage_record(agent=reggie, mode="super", model="gpt-4o", completion_tokens=100_000)
    usage_record(agent=reggie, mode="super", model="unpriced-model", prompt_tokens=5)
    page = admin_client.get("/admin/brainframe/llmusage/").content.decode()
    assert "0.1500" in page and "1.0000" in page and "no price" in page
    assert "3 queries, USD 1.1500" in page
    normal_only = admin_client.get("/admin/brainframe/llmusage/", {"mode__exact": "normal"})
    assert "1 query, USD 0.1500" in normal_only.content.decode()


@pytest.mark.parametrize("model", [Tool, Agent])
def test_a_staff_level_change_needs_a_reason_and_is_recorded(
    admin_client: Client, seeded: None, model: type[Tool] | type[Agent]
) -> None:
    # A new one starts at its level: no reason is asked for.
    assert "level_change_reason" not in admin_client.get(_url(model, "add")).content.decode()
    subject = model.objects.get(pk="roster.shift.read" if model is Tool else "henry")
    url = _url(model, "change", subject.pk)
    shown = _page_form(admin_client.get(url).content.decode())
    assert shown["monitoring_level"] == "0" and "level_change_reason" in shown

    refused = admin_client.post(url, {**shown, "monitoring_level": "2"})
    assert refused.status_code == 200
    assert "Say why the monitoring level changes." in refused.content.decode()
    subject.refresh_from_db()
    assert subject.monitoring_level == 0 and not MonitoringLevelChange.objects.exists()

    reason = "Two weeks of clean reads on the pilot; the team lead signed off."
    saved = admin_client.post(
        url, {**shown, "monitoring_level": "2", "level_change_reason": reason}
    )
    assert saved.status_code == 302
    subject.refresh_from_db()
    change = MonitoringLevelChange.objects.get()
    assert subject.monitoring_level == 2
    assert (change.from_level, change.to_level, change.rule) == (0, 2, "manual")
    assert change.reason == reason and change.changed_by.username == "admin"
    assert getattr(change, "tool_id" if model is Tool else "agent_id") == subject.pk
    # Other edits need no reason and record no level change.
    again = _page_form(admin_client.get(url).content.decode())
    assert (
        admin_client.post(
            url, {**again, "name" if model is Agent else "description": "Renamed"}
        ).status_code
        == 302
    )
    assert MonitoringLevelChange.objects.count() == 1


def test_a_tool_is_not_set_above_its_ceiling_by_hand(admin_client: Client, seeded: None) -> None:
    tool = Tool.objects.filter(risk_level="critical").first()
    assert tool is not None and tool.monitoring_ceiling == 2
    url = _url(Tool, "change", tool.pk)
    shown = _page_form(admin_client.get(url).content.decode())
    refused = admin_client.post(
        url, {**shown, "monitoring_level": "3", "level_change_reason": "trusted now"}
    )
    assert refused.status_code == 200
    assert "Above this tool&#x27;s ceiling (2): raise it first." in refused.content.decode()
    tool.refresh_from_db()
    assert tool.monitoring_level == 0 and not MonitoringLevelChange.objects.exists()

    # Lowering the ceiling past where the tool is says what to do instead.
    Tool.objects.filter(pk=tool.pk).update(monitoring_level=2)
    shown = _page_form(admin_client.get(url).content.decode())
    refused = admin_client.post(url, {**shown, "monitoring_ceiling": "1"})
    assert "The tool is at level 2: lower its level too" in refused.content.decode()
    tool.refresh_from_db()
    assert tool.monitoring_ceiling == 2
    lowered = {**shown, "monitoring_ceiling": "1", "monitoring_level": "1"}
    assert (
        admin_client.post(url, {**lowered, "level_change_reason": "scope cut"}).status_code == 302
    )
    tool.refresh_from_db()
    assert (tool.monitoring_level, tool.monitoring_ceiling) == (1, 1)


def test_pausing_an_agent_stops_its_requests_and_resuming_lets_it_work(
    henry: SignedClient, seeded: None
) -> None:
    staff = Client()
    staff.force_login(f.UserFactory(username="boss", is_staff=True, is_superuser=True))
    changelist = _url(Agent, "changelist")
    assert henry.get("/api/v1/tools/").status_code == 200

    paused = staff.post(changelist, {"action": "pause_agents", "_selected_action": ["henry"]})
    assert paused.status_code == 302
    assert Agent.objects.get(pk="henry").status == "paused"
    refused = henry.get("/api/v1/tools/")
    assert refused.status_code == 401 and refused.json()["code"] == "auth_agent_paused"

    staff.post(changelist, {"action": "resume_agents", "_selected_action": ["henry"]})
    assert Agent.objects.get(pk="henry").status == "idle"
    assert henry.get("/api/v1/tools/").status_code == 200
