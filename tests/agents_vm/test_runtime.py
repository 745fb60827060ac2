"""End to end, the agent runtime the seeds describe (docs/agents.md): Henry's agent service as a
real subprocess with the Dreamer → Actuator roles, two scripted model servers reached through
the control plane's model gateway by their aliases, the broker on daphne.

One service runs, in order: a direct answer; a three-step plan with per-step constraints; an
ambiguous SMS answered with a question whose answer resumes the plan (by persona); a message
smart-routed to another agent; a handler changed through the governed tool that takes effect
after an approved restart; then the agent's own dashboard, in a browser, from the board's link.
(Super Reggie's answer from the read replica: test_super_reggie.py.)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import Group
from django.test import Client

from agents_vm.model.roles import looks_like_json
from brainframe.models import (
    Agent,
    AgentTask,
    ApprovalRequest,
    ChannelAdapter,
    ChannelIdentity,
    EventLogEntry,
    Person,
    Tool,
    ToolCall,
    Turn,
    ValidationPolicy,
)
from brainframe.services.access.credentials import agent_credential_issue, secret_seal
from brainframe.services.ledger.channels import token_hash
from brainframe.services.seed import seed_brainframe
from brainframe.services.work.supervisors import supervisor_set
from broker.services.approvals import approval_decide
from tests import factories as f
from tests.agents_vm.runtime_kit import (
    KEPT_TOOLS,
    TOKEN,
    agent_service,
    gateway_for,
    role_servers,
    wait_for,
)
from tests.agents_vm.runtime_kit import task_ended as _ended
from tests.agents_vm.runtime_script import DAYS, actuator, dreamer
from tests.sms_server import SMSProvider

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
# Playwright's sync API runs an event loop in this thread; the ORM calls around it block.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

SMS_TOKEN = "sms-token-for-runtime-tests"
OWNER, OTHER_OWNER = "+61412345678", "+61499000111"
VPOL_TEXT = "Vehicle bookings: only accessible vehicles for participants who need one."


@pytest.fixture
def sms_provider() -> Iterator[str]:
    """Where comms.sms.send's api handler posts: answers as a provider would."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b'{"id": "SM-1", "status": "queued"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/api/sms"
    server.shutdown()
    server.server_close()


def _world(sms_url: str, phone: SMSProvider) -> dict[str, Any]:
    seed_brainframe()
    AgentTask.objects.all().delete()
    Tool.objects.exclude(tool_id__in=KEPT_TOOLS).delete()
    Tool.objects.filter(
        tool_id__in=[
            "transport.vehicle.availability",
            "transport.vehicle.book",
            "comms.sms.send",
        ]
    ).update(execution_mode="auto")
    sms = Tool.objects.get(tool_id="comms.sms.send")
    sms.handler_config = {**sms.handler_config, "url": sms_url}
    sms.save()
    ValidationPolicy.objects.create(
        name="vehicle_bookings",
        description=VPOL_TEXT,
        tool_patterns=["transport.vehicle.book"],
        enforcement_mode="monitor",
        priority=90,
    )
    descriptions = {
        "henry": "Operations: rosters and shifts, transport and vehicle bookings, billing and "
        "reports.",
        "reggie": "Front desk reception: takes messages from families and carers and answers "
        "their questions about appointments.",
    }
    for agent in Agent.objects.filter(agent_id__in=descriptions):
        agent.config = {**agent.config, "description": descriptions[agent.agent_id]}
        agent.save()
    henry = Agent.objects.get(agent_id="henry")
    for name, number in (("Olive Owner", OWNER), ("Sam Owner", OTHER_OWNER)):
        person = Person.objects.create(name=name, relationship="staff", groups=["owners"])
        ChannelIdentity.objects.create(person=person, channel="sms", address=number)
    # Answers go back by SMS through the local provider, as governed channel.reply calls.
    ChannelAdapter.objects.create(
        name="sms",
        channel="sms",
        agent=henry,
        token_hash=token_hash(SMS_TOKEN),
        send_via="twilio",
        send_url=phone.url,
        send_account=phone.account,
        send_from="+61755550100",
        send_secret_encrypted=secret_seal(phone.token),
    )
    henry.monitoring_level = 4  # trusted: its replies go at once
    henry.save()
    reviewer = f.UserFactory(username="rita")
    reviewer.is_staff = True
    reviewer.save()
    reviewer.groups.add(Group.objects.get(name="reviewers"))
    return {"henry": henry, "reviewer": reviewer, "secret": agent_credential_issue(agent=henry)}


PERSONAS = f"""
[personas.ops]
soul_file = "ops-SOUL.md"
identity_file = "ops-IDENTITY.md"
channels = ["sms"]
accounts = {{ sms = "+61 7 5555 0100" }}
[personas.owners]
soul_file = "owners-SOUL.md"
identity = "Henry, answering the business's owners."
accounts = {{ sms = "+61 7 5555 0199" }}
[routing]
default_persona = "ops"
[routing.sessions]
"agent:henry:sms:{OWNER}" = "owners"
"agent:henry:sms:{OTHER_OWNER}" = {{ smart = true }}
[dashboard]
host = "127.0.0.1"
port = 0
"""
FILES = {
    "ops-SOUL.md": "OPS-SOUL: calm, exact, brief.",
    "ops-IDENTITY.md": "Henry, the operations agent.",
    "owners-SOUL.md": "OWNERS-SOUL: plain numbers first, no small talk.",
}


def _sms(url: str, message_id: str, sender: str, body: str) -> dict[str, Any]:
    answer = httpx.post(
        f"{url}/api/v1/channels/sms/",
        json={"message_id": message_id, "from": sender, "body": body},
        headers={"Authorization": f"Bearer {SMS_TOKEN}"},
        timeout=20,
    )
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


def _task(**fields: Any) -> AgentTask:
    return f.AgentTaskFactory(agent_id="henry", **fields)


def _core(task_id: Any) -> list[tuple[str, dict[str, Any]]]:
    rows = EventLogEntry.objects.filter(family="core", subject=str(task_id)).order_by("seq")
    return [(row.name, row.payload) for row in rows]


def _dreams_for(requests: list[dict[str, Any]], marker: str) -> list[str]:
    return [r["messages"][0]["content"] for r in requests if marker in r["messages"][1]["content"]]


@pytest.fixture
def phone() -> Iterator[SMSProvider]:
    """The SMS provider people's phones are behind (Twilio's Messages API, locally)."""
    server = SMSProvider()
    yield server
    server.close()


@pytest.mark.timeout(240)
def test_the_runtime_end_to_end(
    live_server_url: str, sms_provider: str, phone: SMSProvider, tmp_path: Path
) -> None:
    world = _world(sms_provider, phone)
    world["phone"] = phone
    with role_servers(dreamer, actuator) as roles:
        key = gateway_for("henry", roles)
        with agent_service(
            agent_id="henry", secret=world["secret"], llm_key=key, broker_url=live_server_url,
            home=tmp_path / "henry", extra=PERSONAS, files=FILES,
        ) as service:  # fmt: skip
            _run_everything(live_server_url, world, roles, service)
        assert not roles.dreamer.errors and not roles.actuator.errors


def _run_everything(url: str, world: dict[str, Any], roles: Any, service: Any) -> None:
    # 1. A direct answer: the Dreamer answers at once; Core routes it "direct".
    hello = _ended(_task(title="Say hello", payload={}).task_id)
    assert hello.status == "done" and hello.result["summary"] == "Hello from Henry."
    assert [(n, p["target"]) for n, p in _core(hello.task_id)] == [
        ("core:route", "direct"),
        ("core:response", "direct"),
    ]
    assert _core(hello.task_id)[0][1]["persona"] == "ops"  # the agent's default persona

    # 2. A plan of three steps, each with only its own tools' constraints in front of the Dreamer.
    outing = _task(title="Arrange Monday's community outing for P-1042", payload={})
    outing = _ended(outing.task_id)
    assert outing.status == "done", outing.failure_reason
    assert outing.result["steps_done"] == ["s1", "s2", "s3"]
    calls = {c.requested_tool_id: c for c in ToolCall.objects.filter(task=outing)}
    assert set(calls) == {
        "transport.vehicle.availability",
        "transport.vehicle.book",
        "comms.sms.send",
    }
    assert all(c.outcome == "succeeded" for c in calls.values()), [
        (c.requested_tool_id, c.error) for c in calls.values()
    ]
    # The R-Tag's reason is the Dreamer's own words.
    assert "Book Hiace 2" in calls["transport.vehicle.book"].r_tag.thought
    planning = _dreams_for(roles.dreamer_requests(), "Arrange Monday's")
    by_step = {
        step: next(p for p in planning if f"Now: step {step}," in p) for step in ("s1", "s2", "s3")
    }
    first = planning[0]  # no plan yet: every rule of every tool
    for rule in ("vpol:vehicle_bookings", "vpol:external_comms", "directive:PRIVACY_NO_PII"):
        assert f"[{rule}]" in first
    assert "[directive:SAFETY_FIRST]" in by_step["s2"]  # a rule over every tool, every step
    # The step that writes (a booking): its V-Pol, not the external channel's rules.
    assert f"[vpol:vehicle_bookings] {VPOL_TEXT}" in by_step["s2"]
    for absent in ("vpol:external_comms", "directive:PRIVACY_NO_PII", "vpol:finance_limits",
                   "vpol:scheduling_write", "directive:NDIS_COMPLIANCE"):  # fmt: skip
        assert f"[{absent}]" not in by_step["s2"], absent
    # The step that texts: the external channel's rules, not the booking's.
    assert "[directive:PRIVACY_NO_PII]" in by_step["s3"]
    assert "[vpol:external_comms]" in by_step["s3"]
    assert "[vpol:vehicle_bookings]" not in by_step["s3"]
    # The reading step: neither.
    assert "[vpol:vehicle_bookings]" not in by_step["s1"]
    assert "[directive:PRIVACY_NO_PII]" not in by_step["s1"]
    assert [(n, p["target"]) for n, p in _core(outing.task_id)] == [
        ("core:route", "planner"),
        ("core:response", "planner"),
    ]

    # 3. An ambiguous SMS gets a question back; the answer resumes the plan (persona: owners).
    asked = _sms(url, "SM-1", "0412 345 678", "Could you book the van for the outing?")
    first_turn = wait_for(
        lambda: Turn.objects.filter(pk=asked["turn_id"], status="completed").first(),
        60,
        "the question",
    )
    question = "Which day is the outing, and how many people are going?"
    assert first_turn.answer == question
    # Back on the person's channel: a governed channel.reply, at the person's phone.
    reply = wait_for(
        lambda: ToolCall.objects.filter(
            requested_tool_id="channel.reply", input__turn_id=str(first_turn.pk)
        ).first(),
        30,
        "the question's channel.reply",
    )
    assert reply.input["text"] == question
    sent = wait_for(lambda: world["phone"].messages, 30, "the question at the phone")
    assert (sent[0].to, sent[0].body) == (OWNER, question)
    asking = AgentTask.objects.get(pk=first_turn.task_id)
    assert asking.status == "done" and asking.result["status"] == "asked"
    acted = ToolCall.objects.filter(task=asking).exclude(requested_tool_id="channel.reply")
    assert not acted.exists(), "it guessed instead of asking"
    replied = _sms(url, "SM-2", "0412 345 678", "Friday, 3 people")
    second_turn = wait_for(
        lambda: Turn.objects.filter(pk=replied["turn_id"], status="completed").first(),
        60,
        "the answer",
    )
    assert second_turn.thread_id == first_turn.thread_id
    assert second_turn.answer == "The van is booked for Friday for 3 people."
    (booking,) = ToolCall.objects.filter(
        task_id=second_turn.task_id, requested_tool_id="transport.vehicle.book"
    )
    assert booking.outcome == "succeeded"
    assert booking.input["start"].startswith(DAYS["Friday"])
    resumed = _dreams_for(roles.dreamer_requests(), "Could you book the van")
    assert all("OWNERS-SOUL" in p and "OPS-SOUL" not in p for p in resumed)
    assert all("On sms you speak as +61 7 5555 0199." in p for p in resumed)
    route = _core(second_turn.task_id)[0][1]
    assert route["target"] == "planner" and route["persona"] == "owners"
    assert "answered the question" in route["reason"]
    assert _core(asking.task_id)[-1][1]["status"] == "asked"

    # 4. Smart routing (the session's flag): the index picks Reggie for a front-desk message.
    handed = _sms(url, "SM-3", "0499 000 111", "Please take a message for the front desk: I "
                  "will call back after lunch about my son's appointment.")  # fmt: skip
    handed_turn = wait_for(
        lambda: Turn.objects.filter(pk=handed["turn_id"], status="completed").first(),
        60,
        "the hand-over",
    )
    handing = AgentTask.objects.get(pk=handed_turn.task_id)
    assert handing.result["status"] == "handed_over" and handing.result["routed_to"] == "reggie"
    (delegation,) = ToolCall.objects.filter(task=handing, requested_tool_id="agents.delegate")
    assert delegation.outcome == "succeeded"
    reggie_task = AgentTask.objects.get(agent_id="reggie")
    assert "front desk" in reggie_task.payload["description"]
    events = _core(handing.task_id)
    assert events[0][1]["target"] == "agent:reggie" and events[0][1]["persona"] == "ops"
    assert "smart routing (session)" in events[0][1]["reason"]
    assert events[-1][1]["status"] == "handed_over"

    # 5. A handler changed through the governed tool takes effect after an approved restart.
    supervisor_set(
        agent=world["henry"], control_url=f"http://127.0.0.1:{service.control_port}", token=TOKEN
    )
    signing = _task(title="Sign your answers", payload={})
    for tool_id in ("agent.update_handler", "agent.restart_self"):
        approval = wait_for(
            lambda tool_id=tool_id: ApprovalRequest.objects.filter(
                task=signing, tool_id=tool_id, status="pending"
            ).first(),
            60,
            f"the {tool_id} approval",
        )
        approval_decide(approval_id=approval.pk, reviewer=world["reviewer"], action="approve")
    signed = _ended(signing.task_id)
    assert signed.status == "done", signed.failure_reason
    # The answer passed through the new handler: the worker that finished it loaded it.
    assert signed.result["summary"] == "From now on my answers are signed. (Henry, operations)"
    change = ToolCall.objects.get(task=signing, requested_tool_id="agent.update_handler")
    assert change.outcome == "succeeded" and change.output["approved_by"] == "rita"
    health = httpx.get(
        f"http://127.0.0.1:{service.control_port}/healthz",
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=10,
    ).json()
    assert health["restarts"] == 1 and health["worker"]["handlers"] == health["handlers"]

    # The Dreamer never wrote or read JSON; the Actuator never saw the history.
    dreams = [json.dumps(r) for r in roles.dreamer_requests()]
    assert dreams and all("tools" not in r for r in roles.dreamer_requests())
    for request in roles.dreamer_requests():
        for message in request["messages"]:
            assert not looks_like_json(message["content"]), message["content"][:300]
    for request in roles.actuator_requests():
        assert len(request["messages"]) == 2
        seen = request["messages"][1]["content"]
        assert "was carried out" not in seen and "Task:" not in seen and "[vpol:" not in seen

    # 6. The agent's own dashboard, in a browser, from the board's link.
    _dashboard_in_the_browser(url, world, service)


def _dashboard_in_the_browser(url: str, world: dict[str, Any], service: Any) -> None:
    from django.conf import settings
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

    port = service.dashboard_port
    henry = world["henry"]
    henry.config = {**henry.config, "dashboard": f"127.0.0.1:{port}"}
    henry.save()
    staff = Client()
    staff.force_login(world["reviewer"])
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context()
            context.add_cookies(
                [
                    {
                        "name": settings.SESSION_COOKIE_NAME,
                        "value": staff.cookies[settings.SESSION_COOKIE_NAME].value,
                        "url": url,
                    }
                ]
            )
            board = context.new_page()
            board.goto(f"{url}/board/?agent=henry")
            link = board.locator("a.agent-dashboard")
            assert link.get_attribute("href") == f"http://127.0.0.1:{port}/"
            with context.expect_page(timeout=10000) as opened:
                link.click()
            page = opened.value
            page.wait_for_selector("#state", timeout=10000)
            assert page.locator("h1").inner_text().startswith("henry")
            assert page.locator("#state").inner_text() == "running"
            assert page.locator("#restarts").inner_text() == "1"
            table = page.locator("#calls").inner_text()
            assert "agent.restart_self" in table and "transport.vehicle.book" in table
            assert page.evaluate("document.scripts.length") == 0  # no script, nothing fetched
        finally:
            browser.close()
