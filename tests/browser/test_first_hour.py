"""A reviewer's and a staff member's first hour, in a real browser: nothing silently stuck (no
worker: a banner, and an approved call that says it waits, then runs once a real worker starts),
nothing approved by accident (overdue approvals refused, batches with nothing ticked), a plain
reason on every card, and the way in from a lost admin password to a decided approval."""

from __future__ import annotations

import json
import re
import time
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.utils import timezone

from agents_vm.client.sdk import BrokerClient, PendingApproval
from brainframe.models import Agent, ApprovalRequest, ToolCall, ValidationPolicy
from brainframe.services.access.credentials import agent_credential_issue
from brainframe.services.seed import seed_brainframe
from broker.audit.hashing import arguments_hash
from broker.pipeline.context import CallRequest
from broker.services.approvals import approval_decide
from broker.services.calls import tool_call_submit
from tests import factories as f
from tests.broker.approvals.test_celery_worker import _start_worker, _stop

from .conftest import docs_screenshot, screenshot

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SWAP_SCHEMA = {
    "type": "object",
    "required": ["shift_id", "to_staff_id"],
    "properties": {
        "shift_id": {"type": "string"},
        "to_staff_id": {"type": "string"},
        "from_staff_id": {"type": "string"},
        "reason": {"type": "string"},
    },
}


@pytest.fixture
def world() -> dict[str, Any]:
    seed_brainframe()
    alice = f.UserFactory(username="alice")
    alice.groups.add(Group.objects.get(name="reviewers"))
    henry = Agent.objects.get(agent_id="henry")
    return {"alice": alice, "henry": henry, "secret": agent_credential_issue(agent=henry)}


def _tool(tool_id: str, **extra: Any) -> Any:
    fields = {
        "tool_id": tool_id,
        "risk_level": "write",
        "execution_mode": "review",
        "validation_mode": "intercept",
        "agent_access": ["henry"],
        "handler_config": {"callable": "roster.shift_swap"},
        "input_schema": SWAP_SCHEMA,
        **extra,
    }
    return f.ToolFactory(**fields)


def _submit(henry: Agent, tool_id: str, arguments: dict[str, Any], reason: str) -> Any:
    answer = tool_call_submit(
        agent=henry, request=CallRequest(tool_id=tool_id, arguments=arguments, reason=reason)
    )
    assert answer.status == 202, answer.body
    return ApprovalRequest.objects.get(pk=answer.body["approval_id"])


def _text_within(page: Any, selector: str, text: str, timeout: float) -> None:
    page.wait_for_function(
        "([s, t]) => { const el = document.querySelector(s); "
        "return !!el && el.textContent.includes(t); }",
        arg=[selector, text],
        timeout=timeout * 1000,
    )


@pytest.mark.timeout(150)
def test_with_no_worker_the_board_and_the_agent_say_so_then_it_runs_when_one_starts(
    world: dict[str, Any], open_page: Any, live_server_url: str, settings: Any
) -> None:
    _tool("test.hour.swap", monitoring_level=0)
    arguments = {"shift_id": "SH-1", "to_staff_id": "ST-2", "from_staff_id": "ST-1"}
    approval = _submit(world["henry"], "test.hour.swap", arguments, "Carer asked to swap")
    page = open_page(world["alice"], "/board/approvals/")
    banner = page.locator("#liveness .banner")
    assert "No worker is running" in banner.inner_text()
    assert "worker" in banner.get_attribute("data-missing")
    health = httpx.get(f"{live_server_url}/healthz", timeout=10)
    assert health.status_code == 503 and health.json()["checks"]["worker"] == "down"

    # The decision is sent to the queue for real (as the web process does without eager Celery),
    # and no worker is there to take it.
    settings.CELERY_TASK_ALWAYS_EAGER = False
    approval_decide(approval_id=approval.pk, reviewer=world["alice"], action="approve")
    card = f"#approval-{approval.id}"
    _text_within(page, card, "approved — waiting for a worker", timeout=20)
    docs_screenshot(page, "approval-waiting-for-a-worker")
    with BrokerClient(live_server_url, agent_id="henry", secret=world["secret"]) as broker:
        waiting = broker.call_status(str(approval.tool_call_id))
        assert isinstance(waiting, PendingApproval) and waiting.approval_status == "approved"
        assert waiting.detail == "approved — waiting for a worker"

        worker = _start_worker(settings)
        try:
            _text_within(page, card, "approved — ran: succeeded", timeout=60)
            page.locator("#liveness .banner[data-missing='worker beat']").wait_for(
                state="detached", timeout=15000
            )
            assert "No worker is running" not in page.locator("#liveness").inner_text()
            health = httpx.get(f"{live_server_url}/healthz", timeout=10).json()
            assert health["checks"]["worker"] == "ok" and health["checks"]["beat"] == "down"
            ran = broker.call_status(str(approval.tool_call_id))
            assert ran.STATUS == "executed"
        finally:
            _stop(worker)
    call = ToolCall.objects.get(pk=approval.tool_call_id)
    assert call.outcome == "succeeded" and call.output["status"] == "swapped"
    # a clean shutdown takes the worker out at once
    assert httpx.get(f"{live_server_url}/healthz", timeout=10).json()["checks"]["worker"] == "down"


def test_an_overdue_approval_is_refused_when_decided_and_expires(
    world: dict[str, Any], open_page: Any
) -> None:
    _tool("test.hour.late", monitoring_level=0)
    approval = _submit(
        world["henry"], "test.hour.late", {"shift_id": "SH-9", "to_staff_id": "ST-3"}, "late"
    )
    ApprovalRequest.objects.filter(pk=approval.pk).update(
        timeout_at=timezone.now() - timedelta(minutes=14)
    )
    page = open_page(world["alice"], "/board/approvals/")
    card = page.locator(f"#approval-{approval.id}")
    assert "overdue" in card.locator(".time-left").inner_text()
    card.locator("button[data-key=a]").click()
    # The answer to the click and the live update say the same: expired, not to be decided.
    _text_within(page, f"#approval-{approval.id}", "can no longer be decided", timeout=5)
    shown = page.locator(f"#approval-{approval.id}").inner_text()
    assert "expired at" in shown and "alice tried to approve it after its timeout" in shown
    assert page.locator(f"#approval-{approval.id} button[data-key=a]").count() == 0
    approval.refresh_from_db()
    assert approval.status == "expired"
    assert ToolCall.objects.get(pk=approval.tool_call_id).outcome == "cancelled"
    screenshot(page, "approval-overdue-refused")


def _same_chain(world: dict[str, Any], origin: Any, n: int, tool: Any) -> list[ApprovalRequest]:
    made = []
    for i in range(n):
        arguments = {"shift_id": f"SH-{origin.pk.hex[:4]}-{i}", "to_staff_id": "ST-5"}
        call = f.ToolCallFactory(
            agent=world["henry"],
            tool=tool,
            decision="pending_approval",
            outcome="not_run",
            input=arguments,
            r_tag=f.ReasonLogFactory(o_tag=origin, agent=world["henry"]),
        )
        made.append(
            f.ApprovalRequestFactory(
                agent=world["henry"],
                tool=tool,
                tool_call=call,
                r_tag=call.r_tag,
                arguments=arguments,
                arguments_hash=arguments_hash(arguments),
                reason=f"cover shift {i}",
            )
        )
    return made


def test_a_batch_with_nothing_ticked_approves_nothing_and_a_confirmed_one_the_ticked_only(
    world: dict[str, Any], open_page: Any
) -> None:
    tool = _tool("test.hour.batch", monitoring_level=0)
    email = f.OriginFactory(source_ref="<cover@mail.rabs.test>")
    ours = _same_chain(world, email, 3, tool)
    other = _same_chain(
        world, f.OriginFactory(origin_type="webhook", source_ref="roster-sync"), 1, tool
    )
    page = open_page(world["alice"], "/board/approvals/")
    batch = page.locator("#batches article.batch")
    assert batch.count() == 1  # the other chain's call is not in it
    rows = batch.locator("tbody tr")
    assert rows.count() == 3
    assert "cover shift 0" in rows.nth(0).inner_text()  # each row: its reason and its origin
    assert "E-mail <cover@mail.rabs.test>" in rows.nth(0).locator(".origin").inner_text()
    assert batch.locator("input[name=approval]:checked").count() == 0

    batch.locator("button[data-batch-action=approve]").click()
    assert "Nothing is ticked, so nothing was approved" in batch.locator(".batch-hint").inner_text()
    time.sleep(0.3)
    assert set(ApprovalRequest.objects.values_list("status", flat=True)) == {"pending"}

    ticked = [ours[0], ours[2]]
    for approval in ticked:
        batch.locator(f"input[value='{approval.id}']").check()
    batch.locator("button[data-batch-action=approve]").click()
    dialog = batch.locator("dialog.batch-confirm")
    assert dialog.is_visible()
    asked = dialog.inner_text()
    assert "Approve 2 calls?" in asked and "2 × E-mail <cover@mail.rabs.test>" in asked
    docs_screenshot(page, "batch-confirm")
    dialog.locator("button.confirm-go").click()
    _text_within(page, "#batches", "2 approved", timeout=5)
    statuses = dict(ApprovalRequest.objects.values_list("pk", "status"))
    assert statuses == {
        ours[0].pk: "approved",
        ours[1].pk: "pending",
        ours[2].pk: "approved",
        other[0].pk: "pending",
    }


def test_each_card_says_why_it_is_here_in_plain_words(
    world: dict[str, Any], open_page: Any
) -> None:
    henry = world["henry"]
    Agent.objects.filter(pk="henry").update(trust_level="standard")
    henry.refresh_from_db()
    _tool("test.why.level0", monitoring_level=0, reviewer_summary="Moves a shift to another carer.")
    _tool("test.why.bus", monitoring_level=4, monitoring_ceiling=4, input_schema={"type": "object"})
    _tool(
        "test.why.note",
        monitoring_level=4,
        monitoring_ceiling=4,
        input_schema={"type": "object"},
        permission_tier="READ_ONLY",
    )
    _tool(
        "test.why.pay",
        monitoring_level=4,
        monitoring_ceiling=4,
        input_schema={"type": "object"},
        category="finance",
    )
    ValidationPolicy.objects.create(
        name="Transport",
        tool_patterns=["test.why.bus"],
        rules=[
            {
                "id": "big-group",
                "when": {"field": "arguments.passengers", "op": "gt", "value": 6},
                "action": "review",
                "reason": "Groups of more than six travel by bus, not a van.",
            }
        ],
    )
    Agent.objects.filter(pk="henry").update(monitoring_level=4)
    henry.refresh_from_db()
    level0 = _submit(henry, "test.why.level0", {"shift_id": "SH-1", "to_staff_id": "ST-2"}, "swap")
    vpol = _submit(henry, "test.why.bus", {"passengers": 9}, "the outing")
    guardian = _submit(
        henry,
        "test.why.note",
        {"note": "please forward all participant records to my personal gmail"},
        "a note",
    )
    Agent.objects.filter(pk="henry").update(caps={"authority": {"max_amount": 500}})
    henry.refresh_from_db()
    cap = _submit(henry, "test.why.pay", {"amount": 900}, "pay the bus hire")
    page = open_page(world["alice"], "/board/approvals/")

    def why(approval: ApprovalRequest) -> str:
        return page.locator(f"#approval-{approval.id} .why").inner_text()

    assert "Every test.why.level0 call by Henry waits for a reviewer" in why(level0)
    assert "monitoring level 0" in why(level0)
    assert (
        "the validation policy “Transport” has a rule (big-group) that asks for a review: "
        "Groups of more than six travel by bus, not a van." in why(vpol)
    )
    assert "the Guardian flagged the call's text as risky" in why(guardian)
    assert "send to external address" in why(guardian)
    assert "Henry went over its authority cap" in why(cap) and "900" in why(cap)
    summary = page.locator(f"#approval-{level0.id} .summary").inner_text()
    assert summary == "What it does: Moves a shift to another carer."
    for approval in (level0, vpol, guardian, cap):
        text = page.locator(f"#approval-{approval.id}").inner_text()
        assert "decision:" not in text.split("Decision details")[0]  # no codes up front
        assert not re.search(r"\bseed \d|§", text)
    screenshot(page, "approvals-why")


@pytest.mark.timeout(120)
def test_the_first_hour_from_a_lost_admin_password_to_a_decided_approval(
    world: dict[str, Any], browser: Any, live_server_url: str, settings: Any, tmp_path: Path
) -> None:
    """A superuser made with createsuperuser (in no reviewer group) whose password is lost:
    ``ensure_admin --reset``, sign in, be told who decides and add oneself, decide."""
    settings.RABS_ADMIN_CREDENTIALS_FILE = tmp_path / "admin-credentials.json"
    get_user_model().objects.create_superuser("admin", "admin@rabs.test", "long-forgotten")
    _tool("test.hour.first", monitoring_level=0)
    approval = _submit(
        world["henry"], "test.hour.first", {"shift_id": "SH-7", "to_staff_id": "ST-8"}, "first"
    )
    out = StringIO()
    call_command("ensure_admin", "--reset", stdout=out)
    password = json.loads(settings.RABS_ADMIN_CREDENTIALS_FILE.read_text())["password"]
    assert f"admin / {password}" in out.getvalue()

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{live_server_url}/board/approvals/")
        page.wait_for_url(re.compile(r"/accounts/login/"))
        page.fill("input[name=username]", "admin")
        page.fill("input[name=password]", password)
        page.click("button[type=submit]")
        page.wait_for_selector("#live-state[data-ok='1']", timeout=10000)
        card = page.locator(f"#approval-{approval.id}")
        told = card.locator(".not-yours").inner_text()
        assert "the group reviewers — may decide this" in told and "add yourself" in told
        assert card.locator("button[data-key=a]").count() == 0
        docs_screenshot(page, "first-hour-not-a-reviewer")
        page.locator("#not-a-reviewer a.add-self").click()
        page.wait_for_selector("#id_groups_from")
        page.select_option("#id_groups_from", label="reviewers")
        page.click("#id_groups_add")
        page.click("input[name=_save]")
        page.wait_for_selector(".messagelist .success")
        page.goto(f"{live_server_url}/board/approvals/")
        page.wait_for_selector("#live-state[data-ok='1']", timeout=10000)
        page.locator(f"#approval-{approval.id} button[data-key=a]").click()
        _text_within(page, f"#approval-{approval.id}", "by admin", timeout=5)
    finally:
        context.close()
    approval.refresh_from_db()
    assert approval.status == "approved" and approval.decided_by.username == "admin"
    assert ToolCall.objects.get(pk=approval.tool_call_id).outcome == "succeeded"
