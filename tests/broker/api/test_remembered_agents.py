"""A web process keeps the agent and its key it read last and decides a signed tool call without
reading them again; the statement that records the decision checks that they are still current.
Whatever changed the agent or its keys — the admin, a service, raw SQL — is in force from the
next call: a paused agent, a revoked or rotated key, a new trust level."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from brainframe.models import Agent, AgentCredential, Tool, ToolCall
from brainframe.services.access.credentials import agent_credential_issue
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db
CALLS = "/api/v1/tool-calls/"
READ = {
    "tool_id": "roster.shift.read",
    "reason": "check coverage",
    "arguments": {"date_from": "2026-03-02", "date_to": "2026-03-02"},
}


def _sql(statement: str, params: list[Any]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def _generation(agent_id: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT generation::text FROM agents WHERE agent_id = %s", [agent_id])
        return str(cursor.fetchone()[0])


def _refused(response: Any, code: str) -> None:
    assert response.status_code == 401, response.content
    assert response.json()["code"] == code


def test_an_agent_paused_by_sql_is_refused_on_the_next_call_and_nothing_is_written(
    henry: SignedClient, executed: list[dict[str, Any]]
) -> None:
    assert henry.post(CALLS, READ).status_code == 200  # henry and his key are now remembered
    calls = ToolCall.objects.count()
    _sql("UPDATE agents SET status = 'paused' WHERE agent_id = %s", ["henry"])
    _refused(henry.post(CALLS, READ), "auth_agent_paused")
    book = {**READ, "tool_id": "transport.vehicle.book", "arguments": {"vehicle_id": "x"}}
    _refused(henry.post(CALLS, book), "auth_agent_paused")
    assert ToolCall.objects.count() == calls
    _sql("UPDATE agents SET status = 'active' WHERE agent_id = %s", ["henry"])
    assert henry.post(CALLS, READ).status_code == 200


def test_a_revoked_key_is_refused_on_the_next_call(henry: SignedClient) -> None:
    assert henry.post(CALLS, READ).status_code == 200
    _sql("UPDATE agent_credentials SET revoked_at = now() WHERE agent_id = %s", ["henry"])
    _refused(henry.post(CALLS, READ), "auth_unknown_agent")


def test_a_rotated_key_replaces_the_remembered_one_at_once(henry: SignedClient) -> None:
    assert henry.post(CALLS, READ).status_code == 200
    new_secret = agent_credential_issue(agent=Agent.objects.get(agent_id="henry"))
    _refused(henry.post(CALLS, READ), "auth_bad_signature")  # the old key, remembered or not
    rotated = SignedClient(henry.client, "henry", new_secret)
    assert rotated.post(CALLS, READ).status_code == 200
    assert rotated.post(CALLS, READ).status_code == 200  # the new key, now remembered


def test_an_agent_changed_between_calls_is_decided_as_it_is_now(henry: SignedClient) -> None:
    """Henry at monitoring level 4 runs a gated read at once; moved to level 0 (review all),
    his next call is held: decided under the agent as it is now, not as it was remembered."""
    Tool.objects.filter(pk="roster.shift.read").update(
        execution_mode="gated", monitoring_level=4, monitoring_ceiling=4
    )
    Agent.objects.filter(agent_id="henry").update(monitoring_level=4)
    assert henry.post(CALLS, READ).status_code == 200
    Agent.objects.filter(agent_id="henry").update(monitoring_level=0)
    held = henry.post(CALLS, READ)
    assert held.status_code == 202, held.json()


def test_a_heartbeat_does_not_make_a_new_generation_but_a_change_does(
    henry: SignedClient,
) -> None:
    beat = {"status": "active", "uptime_seconds": 3600}
    assert henry.post("/api/v1/heartbeat/", beat).status_code == 200
    before = _generation("henry")  # a new status is a change (a paused agent is refused)
    for uptime in (3660, 3720):
        beat = {"status": "active", "uptime_seconds": uptime}
        assert henry.post("/api/v1/heartbeat/", beat).status_code == 200
    assert _generation("henry") == before
    Agent.objects.filter(agent_id="henry").update(trust_level="restricted")
    assert _generation("henry") != before
    after_trust = _generation("henry")
    AgentCredential.objects.filter(agent_id="henry").update(revoked_at=None)  # a key's row
    assert _generation("henry") != after_trust
