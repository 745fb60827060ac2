"""Answers go back on the person's channel (docs/channels.md): a family member's SMS answered at
the local SMS provider by the SMS rules and followed to "delivered" by the provider's signed
status callback; an e-mail answer threaded under the original at a real SMTP server; an answer
held for a reviewer sent once, after approval; a provider failure retried with its reason; and
what an agent cannot make a reply do."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.utils import timezone

from brainframe.models import (
    Agent,
    ApprovalRequest,
    ChannelAdapter,
    ChannelIdentity,
    OutboundMessage,
    Person,
    ToolCall,
    Turn,
)
from brainframe.services.access.acl import acl_load
from brainframe.services.access.credentials import agent_credential_issue, secret_seal
from brainframe.services.ledger.channels import token_hash
from brainframe.services.seed import seed_brainframe
from broker.channels.delivery import deliveries_run
from broker.channels.replies import reply_key, reply_submit
from broker.services.approvals import ApprovalError, approval_decide
from broker.services.execution import approved_call_execute
from tests import factories as f
from tests.mail_servers import MailServer
from tests.signing import SignedClient
from tests.sms_server import SMSProvider

pytestmark = pytest.mark.django_db(transaction=True)
TOKEN = "inbound-provider-token-0123456789"
MUM = "+61412345678"

# Family and carers are answered by Henry here (the demo routes them to Reggie); family members
# may read personal information in their answers, carers may not.
TO_HENRY = """
name: family-to-henry
priority: 60
when: {field: principal.relationship, op: in, value: [participant, family]}
effect: allow
permissions:
  tools: ["test.*"]
  scopes: {participant: own, recipient: sender, personal_info: see}
---
name: carers-to-henry
priority: 61
when: {field: principal.relationship, op: eq, value: carer}
effect: allow
permissions:
  tools: ["test.*"]
  scopes: {participant: own, recipient: sender}
"""


@pytest.fixture
def provider() -> Iterator[SMSProvider]:
    server = SMSProvider()
    yield server
    server.close()


@pytest.fixture
def world(settings: Any, live_server_url: str) -> dict[str, Any]:
    seed_brainframe()
    acl_load(TO_HENRY)
    settings.RABS_PUBLIC_URL = live_server_url  # where the provider's callbacks go
    henry = Agent.objects.get(agent_id="henry")
    henry.monitoring_level = 4  # trusted: its answers go at once
    henry.save()
    ruby = Person.objects.create(
        name="Ruby Tran", relationship="participant", attributes={"participant_id": "P-1042"}
    )
    mum = Person.objects.create(name="Linh Tran", relationship="family", acts_for=ruby)
    ChannelIdentity.objects.create(person=mum, channel="sms", address=MUM)
    ChannelIdentity.objects.create(person=mum, channel="email", address="linh@family.example")
    return {"henry": henry, "mum": mum, "url": live_server_url, "signed": SignedClient(
        Client(), "henry", agent_credential_issue(agent=henry))}  # fmt: skip


def sms_adapter(agent: Agent, provider: SMSProvider, **extra: Any) -> ChannelAdapter:
    return ChannelAdapter.objects.create(
        name="sms",
        channel="sms",
        agent=agent,
        token_hash=token_hash(TOKEN),
        send_via="twilio",
        send_url=provider.url,
        send_account=provider.account,
        send_from="+61400000999",
        send_secret_encrypted=secret_seal(provider.token),
        **extra,
    )


def inbound(channel: str, payload: dict[str, Any]) -> dict[str, Any]:
    response = Client().post(
        f"/api/v1/channels/{channel}/",
        payload,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )
    assert response.status_code == 201, response.content
    return dict(response.json())


def answer(signed: SignedClient, turn_id: str, text: str) -> None:
    done = signed.post(f"/api/v1/turns/{turn_id}/complete/", {"answer": text, "tool_calls": []})
    assert done.status_code == 200, done.content


def eventually(check: Callable[[], Any], timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


LONG = (
    "**Yes**, Ruby's outing is still on for Friday. The bus leaves the centre at 9:30 and "
    "comes back by 3 — she'll need a hat, sunscreen and her “blue” water bottle. Her carer "
    "Sam will be with her all day; if anything changes we'll text you straight away. "
    "Lunch is at the café by the lake, and the group will walk the short loop after it. "
) * 3


def test_an_sms_is_answered_by_sms_within_its_rules_and_followed_to_delivered(
    world: dict[str, Any], provider: SMSProvider, settings: Any
) -> None:
    settings.RABS_SMS_MAX_SEGMENTS = 2
    sms_adapter(world["henry"], provider)
    # Linh's text reaches us as the provider posts it (its form fields, signed); a forged one
    # (signed with another token) is refused.
    webhook = f"{world['url']}/api/v1/channels/sms/"
    arrived = provider.incoming(webhook, sender="0412 345 678", body="Is Friday on?")
    assert arrived.status_code == 201, arrived.text
    came = arrived.json()
    assert came["known_sender"] and came["handled"] == "turn"
    real, provider.token = provider.token, "someone-elses-token"
    assert provider.incoming(webhook, sender=MUM, body="forged").status_code == 401
    provider.token = real
    answer(world["signed"], came["turn_id"], LONG)

    assert len(provider.messages) == 1
    sent = provider.messages[0]
    assert sent.to == MUM and sent.sender == "+61400000999"
    # Plain text: no Markdown, GSM-7 punctuation; cut to two segments with a clear marker.
    assert "**" not in sent.body and "Yes, Ruby's outing" in sent.body
    assert "“" not in sent.body and '"blue"' in sent.body and "—" not in sent.body
    assert len(sent.body) <= 2 * 153 and sent.body.endswith(" (cut short)")
    outbound = OutboundMessage.objects.get()
    assert outbound.body == sent.body and outbound.segments == 2 and outbound.truncated
    assert outbound.turn_id is not None and str(outbound.turn_id) == came["turn_id"]
    # The call that sent it is a governed call of Henry's, in the message's chain.
    call = ToolCall.objects.get(pk=outbound.call_id)
    assert (call.requested_tool_id, call.agent_id, call.decision) == (
        "channel.reply",
        "henry",
        "executed",
    )
    assert str(call.o_tag_id) == came["o_tag"] and call.idempotency_key == reply_key(
        came["turn_id"]
    )
    # The provider's signed callbacks move it to delivered, with its id.
    assert eventually(lambda: OutboundMessage.objects.get().state == "delivered")
    outbound = OutboundMessage.objects.get()
    assert outbound.provider_id == sent.sid
    assert [h["state"] for h in outbound.history] == ["queued", "sending", "sent", "delivered"][
        -len(outbound.history) :
    ]
    # the provider notes each callback's answer once it has it (after the state moved)
    assert eventually(lambda: provider.callbacks == [("sent", 204), ("delivered", 204)])

    # Submitting the same answer again sends nothing more (one reply per turn).
    reply_submit(Turn.objects.get(pk=came["turn_id"]).pk)
    assert len(provider.messages) == 1 and OutboundMessage.objects.count() == 1


def test_an_email_answer_threads_under_the_original(world: dict[str, Any], settings: Any) -> None:
    server = MailServer()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
    try:
        ChannelAdapter.objects.create(
            name="email",
            channel="email",
            agent=world["henry"],
            token_hash=token_hash(TOKEN),
            send_via="smtp",
            send_from="Henry at RABS <henry@rabs.example>",
        )
        came = inbound(
            "email",
            {
                "message_id": "<CAF1x2y3@family.example>",
                "from": "Linh Tran <Linh@Family.example>",
                "subject": "Ruby's outing",
                "text": "Is the outing still on?",
                "references": "<older@family.example>",
            },
        )
        answer(world["signed"], came["turn_id"], "Yes — **Friday** at 9:30.\n\n- hat\n- water")
        assert eventually(lambda: server.messages)
    finally:
        server.close()
    recipients, mail = server.messages[0]
    assert recipients == ["linh@family.example"]
    assert mail["Subject"] == "Re: Ruby's outing"
    assert mail["In-Reply-To"] == "<CAF1x2y3@family.example>"
    assert mail["References"] == "<older@family.example> <CAF1x2y3@family.example>"
    assert "henry@rabs.example" in mail["From"]
    body = mail.get_payload(decode=True).decode().replace("\r\n", "\n")
    assert "Friday at 9:30" in body and "- hat\n- water" in body and "**" not in body
    outbound = OutboundMessage.objects.get()
    assert outbound.state == "sent" and outbound.provider_id == mail["Message-ID"]


def test_an_answer_held_for_review_is_sent_once_after_approval(
    world: dict[str, Any], provider: SMSProvider
) -> None:
    henry = world["henry"]
    henry.monitoring_level = 0  # every write of Henry's waits for a reviewer
    henry.save()
    sms_adapter(henry, provider)
    came = inbound("sms", {"message_id": "SM-in-2", "from": MUM, "body": "Can Ruby come?"})
    answer(world["signed"], came["turn_id"], "Yes, she can come.")

    approval = ApprovalRequest.objects.get(tool_call__requested_tool_id="channel.reply")
    assert approval.status == "pending" and approval.arguments["text"] == "Yes, she can come."
    assert provider.messages == [] and OutboundMessage.objects.count() == 0

    reviewer = f.UserFactory(username="rhea")
    reviewer.groups.add(Group.objects.get(name="reviewers"))
    approval_decide(approval_id=approval.pk, reviewer=reviewer, action="approve")
    # A second click, running the approved call again and the sweep change nothing.
    with pytest.raises(ApprovalError):
        approval_decide(approval_id=approval.pk, reviewer=reviewer, action="approve")
    assert approved_call_execute(approval_id=approval.pk) == "already_claimed"
    deliveries_run()
    assert [m.body for m in provider.messages] == ["Yes, she can come."]
    assert OutboundMessage.objects.get().call_id == approval.tool_call_id


def test_a_provider_failure_is_retried_with_its_reason_then_a_final_one_is_shown(
    world: dict[str, Any], provider: SMSProvider
) -> None:
    sms_adapter(world["henry"], provider)
    provider.fail_next = 1  # the provider has a bad minute
    came = inbound("sms", {"message_id": "SM-in-3", "from": MUM, "body": "Pick-up time?"})
    answer(world["signed"], came["turn_id"], "3 pm at the front gate.")

    outbound = OutboundMessage.objects.get()
    assert outbound.state == "queued" and outbound.attempts == 1
    assert "503" in outbound.last_error and "service unavailable" in outbound.last_error
    assert outbound.next_attempt_at is not None and outbound.next_attempt_at > timezone.now()
    assert deliveries_run()["attempted"] == {}  # not due yet: nothing sent early
    OutboundMessage.objects.filter(pk=outbound.pk).update(
        next_attempt_at=timezone.now() - timedelta(seconds=1)
    )
    deliveries_run()
    outbound.refresh_from_db()
    assert outbound.state in ("sent", "delivered") and outbound.attempts == 2
    assert [m.body for m in provider.messages] == ["3 pm at the front gate."]

    # A number the provider refuses: failed at once, its reason on the record, not retried.
    provider.refuse.add("+61499999999")
    other = Person.objects.create(name="Ana", relationship="carer")
    ChannelIdentity.objects.create(person=other, channel="sms", address="+61499999999")
    came = inbound("sms", {"message_id": "SM-in-4", "from": "+61499999999", "body": "Hi"})
    answer(world["signed"], came["turn_id"], "Hello Ana.")
    refused = OutboundMessage.objects.get(address="+61499999999")
    assert refused.state == "failed" and refused.attempts == 1
    assert "21211" in refused.last_error and "not a valid phone number" in refused.last_error


def test_the_agent_cannot_aim_a_reply_elsewhere(
    world: dict[str, Any], provider: SMSProvider
) -> None:
    """What an agent sends is a claim: no address, no channel, no other person's turn."""
    sms_adapter(world["henry"], provider)
    came = inbound("sms", {"message_id": "SM-in-5", "from": MUM, "body": "Hello?"})
    other = Person.objects.create(name="Ana", relationship="carer")
    ChannelIdentity.objects.create(person=other, channel="sms", address="+61411111111")
    theirs = inbound("sms", {"message_id": "SM-in-6", "from": "+61411111111", "body": "Hi"})
    task = Turn.objects.get(pk=came["turn_id"]).task_id
    signed = world["signed"]

    def reply(arguments: dict[str, Any]) -> dict[str, Any]:
        body = {"tool_id": "channel.reply", "arguments": arguments, "reason": "say hello"}
        return dict(signed.post("/api/v1/tool-calls/", {**body, "task_id": str(task)}).json())

    # A word before the answer, in its own turn: it goes to Linh.
    ours = reply({"text": "a word first", "turn_id": came["turn_id"]})
    assert ours["outcome"] == "succeeded" and ours["result"]["to"] == MUM
    # An address of its own choosing is not an argument at all.
    sent = reply({"text": "hi", "to": "+61499999999"})
    assert sent["status"] == "invalid" and "'to'" in sent["errors"][0]["message"]
    # Nor is the consent flag: whether the person may see personal information is derived.
    assert reply({"text": "hi", "consent_pii": True})["status"] == "invalid"
    # Ana's turn, from Linh's chain: refused (and Henry, caught aiming it, is watched closer).
    aimed = reply({"text": "hi Ana", "turn_id": theirs["turn_id"]})
    assert aimed["status"] == "executed" and aimed["outcome"] == "failed"
    assert aimed["error"].startswith("chain_conflict")
    assert [m.body for m in provider.messages] == ["a word first"]


def test_personal_information_reaches_only_those_who_may_see_it(
    world: dict[str, Any], provider: SMSProvider
) -> None:
    sms_adapter(world["henry"], provider)
    ana = Person.objects.create(name="Ana Silva", relationship="carer")
    ChannelIdentity.objects.create(person=ana, channel="sms", address="+61411111111")
    text = "Call Sam on 0412 999 888 before 3."
    for sender, message_id in ((MUM, "SM-in-7"), ("+61411111111", "SM-in-8")):
        came = inbound("sms", {"message_id": message_id, "from": sender, "body": "Who do I call?"})
        answer(world["signed"], came["turn_id"], text)
    both = (MUM, "+61411111111")
    assert eventually(lambda: OutboundMessage.objects.filter(address__in=both).count() == 2)
    to_linh, to_ana = (OutboundMessage.objects.get(address=a) for a in both)
    # Linh's policy lets her see it: sent as written, and the record says why.
    assert to_linh.body == text and to_linh.pii.startswith("not filtered: Linh Tran may see it")
    # Ana's does not: the outbound PII filter took the number (and the name) out.
    assert "<PHONE_NUMBER>" in to_ana.body and "0412 999 888" not in to_ana.body
    findings = ToolCall.objects.get(pk=to_ana.call_id).outbound_findings
    assert "PHONE_NUMBER" in {f["type"] for f in findings}
    assert sorted(m.body for m in provider.messages) == sorted([to_linh.body, to_ana.body])
