"""Sharing between agents and people (docs/access.md, "DAC → MAC → ABAC"): deliverables and memory
entries shared by ACL, MAC rules as a ratchet, and a refused message that wakes no hook."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction

from brainframe.models import (
    Agent,
    ChannelIdentity,
    ContextBucketEntry,
    Deliverable,
    EventLogEntry,
    MacRule,
    Person,
)
from brainframe.services.hooks.lifecycle import hook_propose
from brainframe.services.hooks.runner import hooks_run
from tests.brainframe.access.conftest import task_of
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db


def test_sharing_a_deliverable_dac_mac_abac(inbound: Any, reggie: SignedClient) -> None:
    henry = Agent.objects.get(agent_id="henry")
    item = Deliverable.objects.create(
        agent=henry, file=SimpleUploadedFile("plan.txt", b"Ruby's support plan"),
        filename="plan.txt", content_type="text/plain", size_bytes=19, sha256="x" * 64,
        participant_id="P-1042", data_class="health",
    )  # fmt: skip
    url = f"/api/v1/deliverables/{item.pk}/"

    def read(**params: str) -> Any:
        return reggie.get(
            url + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")
        )

    # DAC: the owner shares it with nobody.
    refused = read()
    assert refused.status_code == 403 and refused.json()["code"] == "share_denied"
    assert refused.json()["detail"].startswith("dac:")

    # Shared with all: Reggie reads it on his own work, and for Ruby's mother...
    Deliverable.objects.filter(pk=item.pk).update(boundary="all")
    mine = read()
    assert mine.status_code == 200 and b"".join(mine.streaming_content) == b"Ruby's support plan"
    linh = inbound("sms", "0400000102", "can I see Ruby's plan?")
    assert read(task_id=task_of(linh)).status_code == 200
    # ...but MAC wins over the owner's "all": not for another participant's family.
    sam = Person.objects.create(name="Sam Lee", relationship="participant",
                                attributes={"participant_id": "P-2000"})  # fmt: skip
    dad = Person.objects.create(name="Joe Lee", relationship="family", acts_for=sam)
    ChannelIdentity.objects.create(person=dad, channel="sms", address="+61400000999")
    other = inbound("sms", "0400000999", "send me the plan")
    across = read(task_id=task_of(other))
    assert across.status_code == 403 and across.json()["detail"].startswith("mac: MAC-1")

    # ask: the item's policy decides, over the requester's attributes.
    Deliverable.objects.filter(pk=item.pk).update(
        boundary="ask",
        share_policy={"field": "requester.trust_level", "op": "eq", "value": "operator"},
    )
    assert read().json()["detail"].startswith("abac:")
    Agent.objects.filter(agent_id="reggie").update(trust_level="operator")
    assert read().status_code == 200

    # Every decision kept, allowed or not.
    kept = EventLogEntry.objects.filter(name="governance:share_decided").order_by("id")
    assert [(e.payload["allowed"], e.payload["layer"]) for e in kept] == [
        (False, "dac"), (True, "dac"), (True, "dac"), (False, "mac"), (False, "abac"),
        (True, "abac"),
    ]  # fmt: skip
    assert read(task_id="nope").json()["field"] == "task_id"


def test_mac_rules_are_a_ratchet(seeded: None) -> None:
    assert MacRule.objects.filter(code="MAC-1").exists()
    with (
        pytest.raises(Exception, match="append_only"),
        transaction.atomic(),
        connection.cursor() as c,
    ):
        c.execute("UPDATE mac_rules SET reason = 'relaxed' WHERE code = 'MAC-1'")
    with (
        pytest.raises(Exception, match="append_only"),
        transaction.atomic(),
        connection.cursor() as c,
    ):
        c.execute("DELETE FROM mac_rules WHERE code = 'MAC-1'")
    MacRule.objects.create(code="MAC-2", when={"field": "item.data_class", "op": "eq",
                                               "value": "credentials"}, reason="never")  # fmt: skip
    assert MacRule.objects.count() == 2


def test_memory_entries_are_shared_the_same_way(inbound: Any, reggie: SignedClient) -> None:
    general = ContextBucketEntry.objects.create(
        bucket="transportation", entity="bus 2", pattern_type="preference",
        observation="bus 2 has the wheelchair lift", created_by="agent:henry",
    )  # fmt: skip
    health = ContextBucketEntry.objects.create(
        bucket="transportation", entity="Ruby Tran", pattern_type="preference",
        observation="Ruby needs her seizure medication on outings", created_by="agent:henry",
        participant_id="P-1042", data_class="health",
    )  # fmt: skip
    private = ContextBucketEntry.objects.create(
        bucket="transportation", entity="bus 3", pattern_type="preference",
        observation="bus 3's driver is on leave", created_by="agent:henry", boundary="none",
    )  # fmt: skip
    sam = Person.objects.create(name="Sam Lee", relationship="participant",
                                attributes={"participant_id": "P-2000"})  # fmt: skip
    dad = Person.objects.create(name="Joe Lee", relationship="family", acts_for=sam)
    ChannelIdentity.objects.create(person=dad, channel="sms", address="+61400000999")

    def seen(task: str | None) -> set[str]:
        query = "bucket=transportation" + (f"&task_id={task}" if task else "")
        answer = reggie.get(f"/api/v1/context/?{query}")
        assert answer.status_code == 200, answer.content
        return {o["id"] for o in answer.json()["observations"]}

    ids = {str(general.pk), str(health.pk), str(private.pk)}
    assert seen(None) & ids == {str(general.pk), str(health.pk)}  # DAC keeps bus 3 private
    linh = inbound("sms", "0400000102", "is Ruby's outing on?")
    assert seen(task_of(linh)) & ids == {str(general.pk), str(health.pk)}
    joe = inbound("sms", "0400000999", "is Sam's outing on?")
    assert seen(task_of(joe)) & ids == {str(general.pk)}  # MAC-1: not Ruby's health record
    refused = EventLogEntry.objects.filter(
        name="governance:share_decided", payload__item=f"observation:{health.pk}",
        payload__allowed=False,
    )  # fmt: skip
    assert [e.payload["layer"] for e in refused] == ["mac"]


def test_a_message_the_acl_refuses_wakes_no_hook(inbound: Any) -> None:
    hook = hook_propose(
        agent=Agent.objects.get(agent_id="henry"),
        definition={
            "name": "every message",
            "kind": "deterministic",
            "events": ["conversation:message_received"],
            "condition": {"field": "event.name", "op": "eq",
                          "value": "conversation:message_received"},
            "effects": [{"type": "wake", "title": "a message came"}],
        },
        proposed_by="agent:henry",
    )  # fmt: skip
    assert hook.status == "active"
    owner = inbound("chat", "@Priya", "hello")  # Henry's, allowed
    supplier = inbound("email", "bookings@hillsbus.example", "invoice attached")
    assert (owner["handled"], supplier["handled"]) == ("turn", "acl_denied")
    counts = hooks_run()
    assert counts["fired"] == 1  # the owner's message only: the ACL runs before hooks
