"""What people read says what it means: no specification references anywhere in the board, the
admin or the API's reference, demo data included; styled pages for an unknown address and a
server error, with the navigation to go on from."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.test import Client, RequestFactory
from django.urls import NoReverseMatch, reverse
from django.views.defaults import server_error

from brainframe.models import AclPolicy, Tool
from tests import factories as f

pytestmark = pytest.mark.django_db

#: "seed 004", "seeds 003", "§13": how the specification is cited in code, never to people.
SPEC_REFERENCE = re.compile(r"\bseeds? 0\d\d\b|§", re.IGNORECASE)


@pytest.fixture
def staff(seeded: None) -> Client:
    client = Client()
    client.force_login(f.UserFactory(username="sam", is_staff=True, is_superuser=True))
    return client


def _admin_pages() -> list[str]:
    pages = [reverse("admin:index")]
    for model in admin.site._registry:
        meta = model._meta
        for view in ("changelist", "add"):
            try:
                pages.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_{view}"))
            except NoReverseMatch:
                continue
    restart = reverse("admin:brainframe_tool_change", args=["agent.restart_self"])
    pages += [restart, reverse("admin:brainframe_tool_change", args=["agents.delegate"])]
    return pages + [
        reverse("admin:brainframe_aclpolicy_change", args=[pk])
        for pk in AclPolicy.objects.values_list("pk", flat=True)
    ]


def test_no_page_people_read_cites_the_specification(staff: Client) -> None:
    board = [
        "/board/?agent=henry",
        "/board/approvals/",
        "/board/council/",
        "/board/conversations/",
        "/board/events/",
        "/board/shadow/",
        "/board/proposals/",
        "/board/hooks/",
        "/board/service-levels/",
        "/api/schema/",
    ]
    found = {}
    for path in board + _admin_pages():
        answer = staff.get(path)
        assert answer.status_code in (200, 403), (path, answer.status_code)
        hits = SPEC_REFERENCE.findall(answer.content.decode())
        if hits:
            found[path] = hits[:3]
    assert found == {}
    for tool in Tool.objects.all():  # every tool staff read about, and its reviewer summary
        assert not SPEC_REFERENCE.search(tool.description + tool.reviewer_summary), tool.pk
        assert tool.reviewer_summary, f"{tool.pk} has no reviewer summary in the demo data"


def test_an_unknown_address_has_the_board_s_look_and_a_way_on(staff: Client) -> None:
    missing = staff.get("/board/no-such-page/")
    assert missing.status_code == 404
    page = missing.content.decode()
    assert "Nothing here" in page and "/board/no-such-page/" in page
    assert "dashboard/board.css" in page and 'aria-label="Main"' in page
    assert 'href="/board/approvals/"' in page and "Sign out" in page
    anonymous = Client().get("/no-such-page/")
    assert anonymous.status_code == 404 and "Sign in" in anonymous.content.decode()
    api = Client().get("/api/v1/no-such-endpoint/")
    assert api.status_code == 404 and api.json()["code"] == "not_found"  # the API stays JSON


def test_a_server_error_has_the_board_s_look_and_a_way_on() -> None:
    answer = server_error(RequestFactory().get("/board/"))
    page = answer.content.decode()
    assert answer.status_code == 500 and "Something went wrong on our side" in page
    assert "dashboard/board.css" in page and 'href="/board/approvals/"' in page
