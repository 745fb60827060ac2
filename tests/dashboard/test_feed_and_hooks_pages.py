"""The board's event log page (filters, live rows) and hooks page (staff decide)."""

from __future__ import annotations

import html
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from brainframe.events import TaskChanged, emit
from brainframe.models import Agent, EventLogEntry, Hook
from brainframe.services.hooks.lifecycle import hook_propose
from dashboard.live.render import render_feed_row
from tests import factories as f

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(seeded: None) -> Client:
    user = f.UserFactory(username="sam", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="change_hook"))
    client = Client()
    client.force_login(user)
    return client


def _feed(page: str) -> str:
    return page[page.index('id="event-feed"') :]


def test_the_event_log_page_filters_by_family_agent_type_and_time(staff: Client) -> None:
    emit(TaskChanged(agent_id="henry", task_id="t-henry", status="todo"))
    emit(TaskChanged(agent_id="reggie", task_id="t-reggie", status="todo"))
    page = _feed(staff.get("/board/events/").content.decode())
    assert "t-henry" in page and "t-reggie" in page and "governance:policy_changed" in page
    today = timezone.localtime().strftime("%d %b %Y")
    assert f">{today} " in page  # each row has its date, not only the time
    answer = staff.get("/board/events/", {"family": "task", "agent": "henry"}).content.decode()
    tasks = _feed(answer)
    assert "t-henry" in tasks and "t-reggie" not in tasks
    assert "governance:policy_changed" not in tasks
    assert 'ws-connect="/ws/board/?feed=task&amp;agent=henry"' in answer
    typed = _feed(staff.get("/board/events/", {"name": "task:changed"}).content.decode())
    assert "t-henry" in typed and "governance:policy_changed" not in typed
    later = (timezone.localtime() + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M")
    assert "t-henry" not in _feed(staff.get("/board/events/", {"since": later}).content.decode())
    past = staff.get("/board/events/", {"until": later}).content.decode()
    assert "t-henry" in _feed(past)
    bad = staff.get("/board/events/", {"family": "nonsense"})
    assert bad.status_code == 400 and b"unknown event family" in bad.content
    for field, value, code in (
        ("name", "no:such", "unknown_event"),
        ("since", "Monday", "invalid_time"),
    ):
        refused = staff.get("/board/events/", {field: value})
        assert refused.status_code == 400 and f'data-code="{code}"'.encode() in refused.content


def test_ids_in_the_feed_are_short_with_the_whole_id_to_hover_and_copy() -> None:
    call_id = "3f2a9c10-1b2c-4d5e-8f90-0123456789ab"
    row = render_feed_row(TaskChanged(agent_id="henry", task_id=call_id, status="done"))
    assert f'title="{call_id}" data-copy="{call_id}">3f2a9c10</code>' in row
    assert f">{call_id}<" not in row


def test_a_live_feed_row_is_rendered_from_the_event_alone() -> None:
    row = render_feed_row(TaskChanged(agent_id="henry", task_id="t-1", status="done"))
    assert row.startswith('<ol hx-swap-oob="afterbegin:#event-feed">')
    assert 'data-family="task"' in row and "task t-1 → done" in row


def _proposal(definition: dict[str, Any]) -> Hook:
    return hook_propose(
        agent=Agent.objects.get(agent_id="henry"), definition=definition, proposed_by="agent:henry"
    )


def test_staff_approve_reject_and_disable_hooks_on_the_board(staff: Client) -> None:
    asks = {
        "name": "complaints",
        "kind": "llm",
        "events": ["inbound:received"],
        "prompt": "Is it a complaint?",
        "effects": [{"type": "wake", "title": "complaint"}],
    }
    first, second = _proposal(asks), _proposal({**asks, "name": "second"})
    page = staff.get("/board/hooks/").content.decode()
    assert page.index("complaints") < page.index("Active")  # proposed come first
    # A condition reads as staff write it (the demo's): JSON in the condition language, not
    # Python's repr of a dict
    shown = html.unescape(page)
    assert '{"field": "origin.type", "op": "eq", "value": "email"}' in shown
    assert "{'field'" not in shown
    staff.post(f"/board/hooks/{first.pk}/approve/")
    first.refresh_from_db()
    assert first.status == "active" and first.reviewed_by.username == "sam"
    refused = staff.post(f"/board/hooks/{second.pk}/reject/", {"reason": ""})
    assert refused.status_code == 400 and b"say why" in refused.content
    staff.post(f"/board/hooks/{second.pk}/reject/", {"reason": "no model budget for this"})
    staff.post(f"/board/hooks/{first.pk}/disable/", {"reason": "noisy"})
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == ("disabled", "rejected")
    assert staff.post(f"/board/hooks/{second.pk}/enable/").status_code == 409
    names = set(EventLogEntry.objects.filter(family="hook").values_list("name", flat=True))
    assert {"hook:proposed", "hook:reviewed", "hook:disabled"} <= names


def test_reviewers_without_the_permission_only_read(seeded: None) -> None:
    hook = _proposal(
        {
            "name": "x",
            "kind": "llm",
            "events": ["inbound"],
            "prompt": "?",
            "effects": [{"type": "message", "text": "hi"}],
        }
    )
    reader = Client()
    reader.force_login(f.UserFactory(username="rita"))
    assert b"Approve" not in reader.get("/board/hooks/").content
    assert reader.post(f"/board/hooks/{hook.pk}/approve/").status_code == 403
