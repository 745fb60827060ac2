"""End-to-end over HTTP with real signing: the agent API and the decision pipeline."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth.models import Group

from brainframe.models import AgentTask, ApprovalRequest, ReasonEdge, ReasonLog, Tool, ToolCall
from brainframe.selectors import origin_reasons
from tests import factories as f
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db
CALLS = "/api/v1/tool-calls/"


def _shift_args(**overrides: Any) -> dict[str, Any]:
    return {
        "participant_id": "P-1042",
        "staff_id": "ST-014",
        "start": "2026-03-02T09:00:00+10:00",
        "end": "2026-03-02T12:00:00+10:00",
        "service_type": "community_access",
        **overrides,
    }


@pytest.fixture
def rostering_task(seeded: None) -> AgentTask:
    """A task Henry runs for a rostering officer, so tools requiring that role are allowed."""
    officer = f.UserFactory(username="officer")
    officer.groups.add(Group.objects.get(name="rostering_officer"))
    return f.AgentTaskFactory(agent_id="henry", title="Roster week 12", on_behalf_of=officer)


def test_tools_lists_only_what_this_agent_may_call(henry: SignedClient) -> None:
    tools = henry.get("/api/v1/tools/").json()
    ids = {t["tool_id"] for t in tools}
    assert "roster.shift.create" in ids
    assert "system.config.update" not in ids  # disabled
    assert all("input_schema" in t and "risk_level" in t for t in tools)
    others = Tool.objects.filter(tool_id__in=ids).exclude(agent_access__contains=["henry"])
    # Only the broker's own tools, which every agent may call, are not named for Henry.
    assert dict(others.values_list("tool_id", "agent_access")) == {
        "rabs.capability.request": ["*"],
        "agent.restart_self": ["*"],
        "agent.update_handler": ["*"],
        "agents.delegate": ["*"],
        "channel.reply": ["*"],
        "chat.assistant.post": ["*"],
        "chat.room.read": ["*"],
    }


def test_auto_tool_executes(henry: SignedClient) -> None:
    response = henry.post(
        CALLS,
        {
            "tool_id": "roster.shift.read",
            "reason": "check coverage",
            "arguments": {"date_from": "2026-03-02", "date_to": "2026-03-02"},
        },
    )
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "executed" and body["outcome"] == "succeeded"
    assert len(body["result"]["shifts"]) == 3
    assert body["r_tag"] and body["o_tag"] and body["vpol"]
    call = ToolCall.objects.get(pk=body["call_id"])
    assert call.decision == "executed" and call.outcome == "succeeded"
    assert call.duration_ms is not None and call.outcome_hash


def test_review_tool_waits_for_approval(henry: SignedClient, rostering_task: AgentTask) -> None:
    response = henry.post(
        CALLS,
        {
            "tool_id": "roster.shift.create",
            "arguments": _shift_args(),
            "reason": "participant asked for Monday",
            "task_id": str(rostering_task.task_id),
            "confidence": 0.8,
        },
    )
    assert response.status_code == 202, response.json()
    body = response.json()
    assert body["status"] == "pending_approval"
    approval = ApprovalRequest.objects.get(pk=body["approval_id"])
    assert approval.arguments == _shift_args()
    assert approval.reason == "participant asked for Monday"
    assert "roster.shift.create" in approval.summary and approval.confidence == 0.8
    assert ToolCall.objects.get(pk=body["call_id"]).outcome == "not_run"


@pytest.mark.parametrize(
    ("setup", "payload", "code"),
    [
        ("disable", {"tool_id": "roster.shift.read"}, "tool_disabled"),
        (None, {"tool_id": "hr.kpi.update"}, "not_allowed"),  # Reggie-free, Henry-only? see below
        (None, {"tool_id": "finance.billing.adjust"}, "role_required"),
    ],
)
def test_denials_have_codes(
    reggie: SignedClient, setup: str | None, payload: dict[str, Any], code: str
) -> None:
    if setup == "disable":
        Tool.objects.filter(tool_id="roster.shift.read").update(execution_mode="disabled")
    if code == "role_required":
        Tool.objects.filter(tool_id="finance.billing.adjust").update(
            agent_access=["henry", "reggie"]
        )
    response = reggie.post(CALLS, {"arguments": {}, "reason": "try", **payload})
    assert response.status_code == 403
    body = response.json()
    assert body["status"] == "denied" and body["code"] == code
    assert ToolCall.objects.get(pk=body["call_id"]).decision == "denied"


def test_vpol_deny_and_review(henry: SignedClient, seeded: None) -> None:
    officer = f.UserFactory(username="finance")
    officer.groups.add(Group.objects.get(name="finance_officer"))
    task = f.AgentTaskFactory(agent_id="henry", on_behalf_of=officer)
    args = {"invoice_id": "INV-1", "line": 1, "amount": 20000, "reason": "duplicate billing"}
    response = henry.post(
        CALLS,
        {
            "tool_id": "finance.billing.adjust",
            "arguments": args,
            "reason": "fix invoice",
            "task_id": str(task.task_id),
        },
    )
    assert response.status_code == 403
    assert response.json()["code"] == "policy:finance_limits"
    assert "10,000" in response.json()["detail"]


def test_bad_arguments_return_paths(henry: SignedClient, rostering_task: AgentTask) -> None:
    args = _shift_args(service_type="karaoke", start="not a date")
    del args["staff_id"]
    response = henry.post(
        CALLS,
        {
            "tool_id": "roster.shift.create",
            "arguments": args,
            "reason": "x",
            "task_id": str(rostering_task.task_id),
        },
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_arguments"
    paths = {e["path"] for e in body["errors"]}
    assert paths == {"/staff_id", "/service_type", "/start"}
    assert ToolCall.objects.get(pk=body["call_id"]).decision == "invalid"


def test_unknown_tool_is_404_and_audited(henry: SignedClient) -> None:
    response = henry.post(CALLS, {"tool_id": "roster.nuke", "arguments": {}, "reason": "x"})
    assert response.status_code == 404
    assert response.json()["code"] == "unknown_tool"
    assert ToolCall.objects.filter(requested_tool_id="roster.nuke", tool=None).count() == 1


def test_knock_on_chain_shares_origin_and_policy(henry: SignedClient) -> None:
    Tool.objects.filter(
        tool_id__in=[
            "roster.shift.read",
            "transport.vehicle.availability",
            "comms.message.classify",
        ]
    ).update(execution_mode="auto")
    origin = {
        "origin_type": "email",
        "source_ref": "<msg-4821@carer.example>",
        "metadata": {"from": "carer@example.org"},
    }
    first = henry.post(
        CALLS,
        {
            "tool_id": "comms.message.classify",
            "reason": "participant email",
            "arguments": {"text": "Can Monday move to Tuesday?"},
            "origin": origin,
        },
    ).json()
    second = henry.post(
        CALLS,
        {
            "tool_id": "roster.shift.read",
            "reason": "knock-on: check roster",
            "arguments": {"date_from": "2026-03-03", "date_to": "2026-03-03"},
            "parent_r_tag": first["r_tag"],
        },
    ).json()
    third = henry.post(
        CALLS,
        {
            "tool_id": "transport.vehicle.availability",
            "reason": "knock-on: transport",
            "arguments": {"start": "2026-03-03T09:00:00+10:00", "end": "2026-03-03T12:00:00+10:00"},
            "parent_r_tag": second["r_tag"],
        },
    ).json()
    chain = [first, second, third]
    assert len({c["r_tag"] for c in chain}) == 3
    assert {c["o_tag"] for c in chain} == {first["o_tag"]}
    assert {c["vpol"] for c in chain} == {first["vpol"]}
    reasons = list(origin_reasons(o_tag=uuid.UUID(first["o_tag"])))
    assert [str(r.id) for r in reasons] == [c["r_tag"] for c in chain]
    assert ReasonLog.objects.get(pk=third["r_tag"]).parent_id == uuid.UUID(second["r_tag"])
    assert len({r.chain_id for r in reasons}) == 1

    # The agent cannot override the chain's origin on a knock-on.
    override = henry.post(
        CALLS,
        {
            "tool_id": "roster.shift.read",
            "reason": "x",
            "arguments": {"date_from": "2026-03-03", "date_to": "2026-03-03"},
            "parent_r_tag": first["r_tag"],
            "origin": origin,
        },
    )
    assert override.status_code == 400 and override.json()["code"] == "chain_is_inherited"


def test_reason_edges_link_entities(henry: SignedClient, rostering_task: AgentTask) -> None:
    body = henry.post(
        CALLS,
        {
            "tool_id": "roster.shift.create",
            "arguments": _shift_args(),
            "reason": "x",
            "task_id": str(rostering_task.task_id),
        },
    ).json()
    edges = set(
        ReasonEdge.objects.filter(reason_id=body["r_tag"]).values_list("entity_type", "entity_id")
    )
    assert {
        ("participant", "P-1042"),
        ("staff", "ST-014"),
        ("tool", "roster.shift.create"),
        ("agent_task", str(rostering_task.task_id)),
    } <= edges


def test_agents_cannot_read_each_others_calls_or_tasks(
    henry: SignedClient, reggie: SignedClient
) -> None:
    body = henry.post(
        CALLS,
        {
            "tool_id": "roster.shift.read",
            "reason": "x",
            "arguments": {"date_from": "2026-03-02", "date_to": "2026-03-02"},
        },
    ).json()
    assert henry.get(f"{CALLS}{body['call_id']}/").status_code == 200
    assert reggie.get(f"{CALLS}{body['call_id']}/").status_code == 404
    henry_task = AgentTask.objects.filter(agent_id="henry", status="todo").first()
    assert reggie.post(f"/api/v1/tasks/{henry_task.task_id}/claim/").status_code == 404
    assert {t["task_id"] for t in reggie.get("/api/v1/tasks/").json()}.isdisjoint(
        {
            str(t)
            for t in AgentTask.objects.filter(agent_id="henry").values_list("task_id", flat=True)
        }
    )
    henry_task.refresh_from_db()
    assert henry_task.status == "todo"


def test_idempotency_key(henry: SignedClient, executed: list[dict[str, Any]]) -> None:
    f.ToolFactory(
        tool_id="test.echo", agent_access=["henry"], handler_config={"callable": "tests.echo"}
    )
    payload = {"tool_id": "test.echo", "arguments": {"q": "once"}, "reason": "x"}
    first = henry.post(CALLS, payload, HTTP_IDEMPOTENCY_KEY="k-1")
    again = henry.post(CALLS, payload, HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == again.status_code == 200
    assert again.json()["call_id"] == first.json()["call_id"] and again.json()["replayed"]
    assert executed == [{"q": "once"}]
    other = henry.post(CALLS, {**payload, "arguments": {"q": "other"}}, HTTP_IDEMPOTENCY_KEY="k-1")
    assert other.status_code == 409 and other.json()["code"] == "idempotency_conflict"
    assert executed == [{"q": "once"}]


def test_handler_failure_is_an_outcome_not_a_500(henry: SignedClient) -> None:
    f.ToolFactory(
        tool_id="test.broken",
        agent_access=["henry"],
        handler_config={"callable": "no.such.function"},
    )
    response = henry.post(CALLS, {"tool_id": "test.broken", "arguments": {}, "reason": "x"})
    assert response.status_code == 200
    assert response.json()["outcome"] == "failed"
    assert "no function registered" in response.json()["error"]


def test_output_schema_violation_is_recorded(henry: SignedClient) -> None:
    f.ToolFactory(
        tool_id="test.echo2",
        agent_access=["henry"],
        handler_config={"callable": "tests.echo"},
        output_schema={"type": "object", "required": ["missing"]},
    )
    body = henry.post(
        CALLS, {"tool_id": "test.echo2", "arguments": {"q": "a"}, "reason": "x"}
    ).json()
    assert body["outcome"] == "failed" and body["error"].startswith("output_schema")


def _audit_down() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION audit_down() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'disk full'; END $$;"
            "CREATE TRIGGER audit_down BEFORE INSERT ON tool_calls "
            "FOR EACH ROW EXECUTE FUNCTION audit_down();"
        )


def test_audit_unavailable_refuses_and_executes_nothing(
    henry: SignedClient, executed: list[dict[str, Any]], django_db_blocker: Any
) -> None:
    """A call with side effects is audited first: no audit, nothing runs."""
    f.ToolFactory(
        tool_id="test.echo",
        risk_level="write",
        execution_mode="auto",
        agent_access=["henry"],
        handler_config={"callable": "tests.echo"},
    )
    _audit_down()
    response = henry.post(CALLS, {"tool_id": "test.echo", "arguments": {"q": "x"}, "reason": "x"})
    assert response.status_code == 503
    assert response.json()["code"] == "audit_unavailable"
    assert executed == []


def test_audit_unavailable_withholds_a_reads_result(
    henry: SignedClient, executed: list[dict[str, Any]]
) -> None:
    """A read without side effects runs before it is recorded (one write for all of it): when
    that write fails, the call is refused and its result never leaves."""
    f.ToolFactory(
        tool_id="test.lookup",
        risk_level="read",
        execution_mode="auto",
        agent_access=["henry"],
        handler_config={"callable": "tests.echo"},
    )
    _audit_down()
    response = henry.post(
        CALLS, {"tool_id": "test.lookup", "arguments": {"q": "secret"}, "reason": "x"}
    )
    assert response.status_code == 503 and response.json()["code"] == "audit_unavailable"
    assert "secret" not in response.content.decode()
    assert not ToolCall.objects.filter(requested_tool_id="test.lookup").exists()


def test_a_body_the_fast_path_does_not_take_is_answered_by_the_full_validation(
    henry: SignedClient,
) -> None:
    """The tool-call endpoint's fast path hands anything unusual to DRF, already authenticated:
    the answer names the field, and the request's nonce is not taken for a replay."""
    nul = henry.post(
        CALLS, {"tool_id": "roster.shift.read", "reason": "x", "arguments": {"a": "b\x00c"}}
    )
    assert nul.status_code == 400 and nul.json()["code"] == "invalid_request"
    assert nul.json()["field"] == "arguments"
    extra = henry.post(CALLS, {"tool_id": "roster.shift.read", "reason": "x", "colour": "red"})
    assert extra.status_code == 400 and extra.json()["field"] == "colour"
    number = henry.post(CALLS, {"tool_id": 7, "reason": "x"})
    assert number.status_code == 400 and number.json()["field"] == "tool_id"


def test_fast_and_full_paths_answer_alike(henry: SignedClient) -> None:
    """The same call through the fast path, and through DRF (a query string sends it there: it
    is refused, naming the parameter, as any unknown query parameter is)."""
    body = {
        "tool_id": "roster.shift.read",
        "reason": "x",
        "arguments": {"date_from": "2026-03-02", "date_to": "2026-03-02"},
    }
    fast = henry.post(CALLS, body)
    assert fast.status_code == 200 and fast["Content-Type"] == "application/json"
    assert set(fast.json()) == {
        "call_id", "r_tag", "o_tag", "vpol", "status", "result", "outcome", "duration_ms",
    }  # fmt: skip
    slow = henry.post(f"{CALLS}?colour=red", body)
    assert slow.status_code == 400 and slow.json() == {
        "code": "invalid_request",
        "detail": "unknown query parameter",
        "field": "colour",
    }
