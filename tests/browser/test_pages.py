"""Every board page readable on a phone (390 px, nothing pushed off the side) and the admin's
main lists on a laptop (1366 px, no column cut off); the screenshots in docs/board.md come from
here and tests/browser/test_first_hour.py (``conftest.docs_screenshot``)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from brainframe.models import Agent, ApprovalRequest, Hook, OriginRegistry, Thread
from brainframe.services.seed import seed_brainframe
from broker.pipeline.context import CallRequest
from broker.services.calls import tool_call_submit
from tests import factories as f

from .conftest import ARTIFACTS, docs_screenshot, screenshot

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world() -> dict[str, Any]:
    """The demo data, a reviewer who is also an administrator, and a few calls waiting."""
    seed_brainframe()
    sam = f.UserFactory(username="sam", is_staff=True, is_superuser=True)
    sam.groups.add(Group.objects.get(name="reviewers"))
    henry = Agent.objects.get(agent_id="henry")
    answers = [
        tool_call_submit(
            agent=henry,
            request=CallRequest(
                tool_id="comms.notification.push",
                arguments={"staff_ids": [f"ST-0{n}"], "message": "The bus is running late"},
                reason="tell the carers on today's outing",
            ),
        )
        for n in (14, 15)
    ]
    approval = ApprovalRequest.objects.get(pk=answers[0].body["approval_id"])
    return {"sam": sam, "henry": henry, "approval": approval}


def _pages(world: dict[str, Any]) -> dict[str, str]:
    approval = world["approval"]
    origin = OriginRegistry.objects.filter(reasons__id=approval.r_tag_id).first()
    pages = {
        "board": "/board/?agent=henry",
        "approvals": "/board/approvals/",
        "approval": f"/board/approvals/{approval.id}/",
        "chain": f"/board/chain/{origin.pk}/",
        "council": "/board/council/",
        "conversations": "/board/conversations/",
        "events": "/board/events/",
        "shadow": "/board/shadow/",
        "proposals": "/board/proposals/",
        "hooks": "/board/hooks/",
        "service-levels": "/board/service-levels/",
    }
    thread = Thread.objects.first()
    if thread is not None:
        pages["conversation"] = f"/board/conversations/{thread.pk}/"
    assert Hook.objects.exists()  # the hooks page shows the demo's
    return pages


def _overflow(page: Any) -> int:
    """How many pixels the page is wider than its viewport (0: nothing off the side)."""
    return int(
        page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    )


def test_every_board_page_fits_a_phone_and_a_laptop(world: dict[str, Any], open_page: Any) -> None:
    """Each page at 390 px (a phone: nothing off the side, the navigation within the screen),
    then at a laptop's width, where its picture for the docs is taken."""
    page = open_page(world["sam"], "/board/", width=390, height=844)
    for name, path in _pages(world).items():
        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(f"{page.url.split('/board/')[0]}{path}")
        page.wait_for_selector("#live-state[data-ok='1']", timeout=10000)
        assert _overflow(page) == 0, f"{name} ({path}) is wider than the phone"
        nav = page.locator(".topbar nav").bounding_box()
        assert nav["x"] + nav["width"] <= 390, name
        if name == "approvals":
            screenshot(page, "approvals-390")
        page.set_viewport_size({"width": 1024, "height": 680})
        assert _overflow(page) == 0, name
        docs_screenshot(page, name)
    # The styled 404 (the test server runs in DEBUG, which shows Django's own page instead):
    # the page the app serves when DEBUG is off, as a browser shows it.
    client = Client()
    client.force_login(world["sam"])
    missing = client.get("/board/no-such-page/")
    assert missing.status_code == 404
    page.set_content(missing.content.decode())
    docs_screenshot(page, "not-found")
    assert page.locator(".topbar nav a").count() >= 9


ADMIN_LISTS = (
    "brainframe/tool",
    "brainframe/agent",
    "brainframe/approvalrequest",
    "brainframe/toolcall",
    "brainframe/validationpolicy",
    "brainframe/eventlogentry",
    "brainframe/hook",
    "brainframe/person",
    "brainframe/llmbudget",
    "brainframe/capabilitygrant",
    "auth/user",
)


def test_the_admin_index_by_concept_and_its_main_lists_at_1366(
    world: dict[str, Any], browser: Any, live_server_url: str
) -> None:
    client = Client()
    client.force_login(world["sam"])
    context = browser.new_context(viewport={"width": 1366, "height": 800})
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server_url}]
    )
    try:
        page = context.new_page()
        page.goto(f"{live_server_url}/admin/")
        captions = [c.strip() for c in page.locator("#content-main caption").all_text_contents()]
        assert captions[:3] == ["Registry", "Agents and keys", "Agents' work and memory"]
        assert "Model gateway" in captions and "Council" in captions
        assert "Other" not in captions  # every table belongs to a concept
        shown = page.locator("#content-main").inner_text()
        for wrong in ("entrys", "deliverys", "Llm "):
            assert wrong not in shown
        assert "Notification deliveries" in shown and "LLM budgets" in shown
        page.screenshot(path=str(ARTIFACTS / "admin-index.png"), full_page=True)
        cuts: dict[str, int] = {}
        for path in ADMIN_LISTS:
            page.goto(f"{live_server_url}/admin/{path}/")
            page.wait_for_selector("#changelist")
            page.screenshot(path=str(ARTIFACTS / f"admin-{path.replace('/', '-')}.png"))
            cut = page.evaluate(
                "(() => { const r = document.querySelector('#changelist .results');"
                " return r ? r.scrollWidth - r.clientWidth : 0; })()"
            )
            cuts[path] = cut
            assert _overflow(page) == 0, path
        assert {path: cut for path, cut in cuts.items() if cut > 0} == {}, "columns cut off"
        screenshot(page, "admin-list-1366")
    finally:
        context.close()
