"""Every board page and partial renders, decisions go through the services, errors show inline."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.utils import timezone

from brainframe.models import Agent, AgentNote, AgentTask, ApprovalRequest, Tool, ToolCall
from broker.audit.hashing import arguments_hash
from tests import factories as f

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def reviewer(seeded: None) -> Client:
    user = f.UserFactory(username="alice")
    user.groups.add(Group.objects.get(name="reviewers"))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def pending(seeded: None) -> ApprovalRequest:
    tool = f.ToolFactory(
        tool_id="test.board.write",
        risk_level="critical",
        execution_mode="review",
        agent_access=["henry"],
        handler_config={"callable": "tests.echo"},
        input_schema={"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}},
    )
    call = f.ToolCallFactory(
        agent_id="henry", tool=tool, decision="pending_approval", input={"q": "a"}
    )
    return f.ApprovalRequestFactory(
        agent_id="henry",
        tool=tool,
        tool_call=call,
        r_tag=call.r_tag,
        arguments={"q": "a"},
        arguments_hash=arguments_hash({"q": "a"}),
        risk_level="critical",
        tags=["rostering_scheduling"],
    )


def test_pages_need_a_login(client: Client) -> None:
    for url in ("/board/", "/board/approvals/"):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"] == f"/accounts/login/?next={url}"


def test_a_reviewer_who_is_not_staff_signs_in_to_the_board_and_out(
    client: Client, seeded: None
) -> None:
    user = f.UserFactory(username="rita", is_staff=False)
    user.groups.add(Group.objects.get(name="reviewers"))
    # The admin's login admits staff only: it cannot be the board's.
    refused = client.post("/admin/login/", {"username": "rita", "password": "pw-for-tests"})
    assert refused.status_code == 200 and "_auth_user_id" not in client.session

    form = client.get("/accounts/login/?next=/board/approvals/")
    assert form.status_code == 200
    assert 'name="next" value="/board/approvals/"' in form.content.decode()
    wrong = client.post("/accounts/login/", {"username": "rita", "password": "nope"})
    assert wrong.status_code == 200 and 'role="alert"' in wrong.content.decode()
    signed_in = client.post(
        "/accounts/login/",
        {"username": "rita", "password": "pw-for-tests", "next": "/board/approvals/"},
    )
    assert signed_in.status_code == 302 and signed_in["Location"] == "/board/approvals/"
    page = client.get("/board/approvals/").content.decode()
    assert "rita" in page and 'action="/accounts/logout/"' in page

    signed_out = client.post("/accounts/logout/")
    assert signed_out.status_code == 302 and signed_out["Location"] == "/accounts/login/"
    assert client.get("/board/").status_code == 302


def test_board_shows_status_kanban_notes_deliverables_and_log(reviewer: Client) -> None:
    f.ToolCallFactory(
        agent_id="henry", requested_tool_id="roster.shift.read", duration_ms=12, outcome="succeeded"
    )
    page = reviewer.get("/board/?agent=henry").content.decode()
    for text in (
        "Henry",
        "To Do",
        "In Progress",
        "Review",
        "Done",
        "Roster update for week 12",
        "Always CC manager on emails",
        "Deliverables",
        "roster.shift.read",
        "OK",
        "(12ms)",
        'ws-connect="/ws/board/"',
    ):
        assert text in page, text
    assert re.search(r'class="pill status-(idle|active)"', page)


def _uptime(page: str) -> str:
    found = re.search(r"<dt>Uptime</dt><dd>([^<]*)</dd>", page)
    assert found is not None
    return found.group(1)


def test_uptime_reads_as_time_and_is_blank_before_any_heartbeat(reviewer: Client) -> None:
    assert _uptime(reviewer.get("/board/?agent=henry").content.decode()) == "—"
    for seconds, shown in ((35, "35 s"), (7_500, "2 h 5 min"), (3 * 86_400 + 3_600, "3 d 1 h")):
        Agent.objects.filter(agent_id="henry").update(
            last_heartbeat_at=timezone.now(), uptime_seconds=seconds
        )
        assert _uptime(reviewer.get("/board/?agent=henry").content.decode()) == shown


def test_note_edit_in_place(reviewer: Client) -> None:
    note = AgentNote.objects.get(content="Always CC manager on emails")
    form = reviewer.get(f"/board/notes/{note.id}/edit/").content.decode()
    assert "<textarea" in form
    saved = reviewer.post(f"/board/notes/{note.id}/", {"content": "CC the team leader"})
    assert saved.status_code == 200 and "CC the team leader" in saved.content.decode()
    note.refresh_from_db()
    assert note.content == "CC the team leader"
    empty = reviewer.post(f"/board/notes/{note.id}/", {"content": "  "})
    assert empty.status_code == 422 and "cannot be empty" in empty.content.decode()


def test_approvals_page_lists_what_a_reviewer_needs(
    reviewer: Client, pending: ApprovalRequest
) -> None:
    page = reviewer.get("/board/approvals/").content.decode()
    for text in (
        "test.board.write",
        "Henry",
        "Critical risk",
        pending.reason,
        "Why it is here:",
        "It was held for a reviewer by the broker&#x27;s rules.",  # no decision recorded
        # what it does, in a reviewer's words: the tool has no reviewer summary (a neutral
        # sentence), and the agents' description is not shown
        "What it does:</strong> Operations tool: it makes a change that is hard to undo",
        "Came from",
        "&quot;q&quot;: &quot;a&quot;",
        "expires",
        "O-Tag",
        "R-Tag",
        "rostering_scheduling",
        "Approve",
        "Reject",
        "Modify",
        "Escalate",
    ):
        assert text in page, text


def test_approve_from_the_board_executes_once(
    reviewer: Client,
    pending: ApprovalRequest,
    executed: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    url = f"/board/approvals/{pending.id}/approve/"
    with django_capture_on_commit_callbacks(execute=True):
        response = reviewer.post(url, {"reason": ""}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert "already <strong>approved</strong> by alice" in response.content.decode()
    late = reviewer.post(url, {"reason": ""}, HTTP_HX_REQUEST="true")
    assert late.status_code == 409 and "already approved by alice" in late.content.decode()
    assert executed == [{"q": "a"}]


def test_modify_with_invalid_json_or_schema_shows_the_error_and_runs_nothing(
    reviewer: Client, pending: ApprovalRequest, executed: list[dict[str, Any]]
) -> None:
    url = f"/board/approvals/{pending.id}/modify/"
    bad_json = reviewer.post(url, {"arguments": '{"q": '})
    assert bad_json.status_code == 422 and "Not valid JSON" in bad_json.content.decode()
    bad_schema = reviewer.post(url, {"arguments": json.dumps({"q": 5})})
    assert bad_schema.status_code == 422
    assert "/q: 5 is not of type &#x27;string&#x27;" in bad_schema.content.decode()
    pending.refresh_from_db()
    assert pending.status == "pending" and executed == []


def test_reject_needs_a_reason(reviewer: Client, pending: ApprovalRequest) -> None:
    response = reviewer.post(f"/board/approvals/{pending.id}/reject/", {"reason": ""})
    assert response.status_code == 422 and "needs a reason" in response.content.decode()


def test_chain_pages_from_call_task_and_origin(reviewer: Client, pending: ApprovalRequest) -> None:
    call = ToolCall.objects.get(pk=pending.tool_call_id)
    page = reviewer.get(f"/board/calls/{call.id}/chain/").content.decode()
    assert call.r_tag.thought in page and "test.board.write" in page and "Approval" in page
    task = AgentTask.objects.filter(agent_id="henry").first()
    assert reviewer.get(f"/board/tasks/{task.task_id}/chain/").status_code == 200
    assert reviewer.get(f"/board/chain/{call.o_tag_id}/").status_code == 200


def test_no_external_urls_in_templates_or_static() -> None:
    offenders = []
    for folder in ("templates", "static/dashboard"):
        for path in (ROOT / folder).rglob("*"):
            if not path.is_file():
                continue
            # An XML namespace (an SVG's xmlns) names, it never loads.
            text = re.sub(r'xmlns(:\w+)?="[^"]*"', "", path.read_text(errors="ignore"))
            if re.search(r"https?://", text):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_deliverables_are_listed_and_downloadable(
    reviewer: Client, settings: Any, tmp_path: Path
) -> None:
    from django.core.files.base import ContentFile

    from brainframe.models import Deliverable

    settings.MEDIA_ROOT = tmp_path
    item = Deliverable(
        agent_id="henry",
        filename="roster_week12.csv",
        content_type="text/csv",
        size_bytes=8,
        sha256="0" * 64,
    )
    item.file.save("roster_week12.csv", ContentFile(b"a,b\n1,2\n"), save=True)
    page = reviewer.get("/board/?agent=henry").content.decode()
    assert "roster_week12.csv" in page and f"/board/deliverables/{item.id}/" in page
    response = reviewer.get(f"/board/deliverables/{item.id}/")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"a,b\n1,2\n"
    assert 'attachment; filename="roster_week12.csv"' in response["Content-Disposition"]


def test_the_action_log_shows_task_moves_and_level_changes(reviewer: Client) -> None:
    from brainframe.services.trust.alignment import monitoring_level_set
    from brainframe.services.work.tasks import task_claim

    henry = Agent.objects.get(agent_id="henry")
    task = AgentTask.objects.get(agent=henry, title="Roster update for week 12")
    task_claim(agent=henry, task_id=task.task_id)
    admin_user = f.UserFactory(username="lead")
    monitoring_level_set(henry, to_level=1, by=admin_user, reason="pilot went well")
    tool = Tool.objects.get(tool_id="roster.shift.read")
    monitoring_level_set(tool, to_level=2, by=admin_user, reason="clean reads")

    page = reviewer.get("/board/?agent=henry").content.decode()
    log = page[page.index('id="action-log"') :]
    rows = [re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", row))).strip()
            for row in re.findall(r"<li class=\"log-row.*?</li>", log, re.S)]  # fmt: skip
    assert any("[Henry] task: Roster update for week 12 — IN PROGRESS" in r for r in rows)
    assert any("[lead] level: Henry — L0 → L1 · Manual change by staff" in r for r in rows)
    assert any("[lead] level: roster.shift.read — L0 → L2" in r for r in rows)
    assert f'href="/board/tasks/{task.task_id}/chain/"' in log


def test_board_shows_the_last_checkpoints_age_and_upstream_tools_awaiting_staff(
    reviewer: Client, settings: Any, tmp_path: Path
) -> None:
    from brainframe.models import MCPUpstream, UpstreamToolChange
    from broker.audit.checkpoints import checkpoint_write

    settings.RABS_CHECKPOINT_KEY_FILE = tmp_path / "key.pem"
    page = reviewer.get("/board/?agent=henry").content.decode()
    assert re.search(r'id="checkpoint-age">none yet <span class="pill status-error">overdue', page)
    assert "none waiting" in page
    f.ToolCallFactory(agent_id="henry", requested_tool_id="roster.shift.read")
    checkpoint_write()
    upstream = MCPUpstream.objects.create(name="notes", transport="http", url="http://x.test/mcp")
    tool = f.ToolFactory(tool_id="notes.lookup", handler_type="mcp")
    UpstreamToolChange.objects.create(upstream=upstream, tool=tool, fields=["description"])
    page = reviewer.get("/board/?agent=henry").content.decode()
    assert re.search(
        r'id="checkpoint-age"><time datetime="[^"]+">0\xa0minutes ago</time></dd>', page
    )
    assert 'notes.lookup</a> <span class="muted">description changed upstream' in page
