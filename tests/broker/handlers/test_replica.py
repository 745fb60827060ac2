"""Super Reggie's read replica (seed 000 §8; docs/agents.md): a real PostgreSQL streaming standby
of the embedded server (the session's, ``replica_standby``), its read-only role, and the governed
``db.replica.query`` tool that only Super mode may use.

Writes go to the primary and are read on the standby once it has replayed them; a write through
the tool is refused by PostgreSQL itself (the standby, the role and the transaction are all
read-only).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.db.models import Count
from django.test import Client

from brainframe.models import Agent, AgentTask, ReplicaView, ToolCall
from brainframe.services.registry.replica import replica_grants_sync
from broker.audit.verify import verify_chain
from rabs.stack.replica import replica_lsn_caught_up
from tests import factories as f
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db(transaction=True)
CALLS = "/api/v1/tool-calls/"
SUPER = "Compare how many tasks each agent has done and why some are stuck"
NORMAL = "When is Tom's next shift?"


@pytest.fixture
def replica(
    replica_standby: dict[str, str] | None, settings: Any, seeded: None
) -> Iterator[dict[str, str]]:
    if replica_standby is None:
        pytest.skip("the replica tests need the embedded PostgreSQL")
    settings.RABS_REPLICA_URL = replica_standby["reader"]
    replica_grants_sync()
    yield replica_standby


def _caught_up(replica: dict[str, str]) -> None:
    replica_lsn_caught_up(replica["primary"], replica["admin"])


def _task(query: str) -> AgentTask:
    task: AgentTask = f.AgentTaskFactory(
        agent=Agent.objects.get(agent_id="reggie"),
        title="Front desk",
        payload={"query": query, "channel": "sms"},
    )
    return task


def _query(reggie: SignedClient, arguments: dict[str, Any], task: AgentTask | None) -> Any:
    body: dict[str, Any] = {
        "tool_id": "db.replica.query",
        "reason": "the caller asked how the agents' work stands",
        "arguments": arguments,
    }
    if task is not None:
        body["task_id"] = str(task.task_id)
    return reggie.post(CALLS, body).json()


def test_a_write_on_the_primary_is_read_on_the_replica(
    reggie: SignedClient, replica: dict[str, str], client: Client
) -> None:
    task = _task(SUPER)
    f.AgentTaskFactory(agent=Agent.objects.get(agent_id="henry"), title="Replicated outing")
    _caught_up(replica)
    answer = _query(
        reggie,
        {"sql": "SELECT agent_id, title FROM tasks WHERE title = 'Replicated outing'"},
        task,
    )
    assert answer["status"] == "executed" and answer["outcome"] == "succeeded", answer
    result = answer["result"]
    assert result["rows"] == [{"agent_id": "henry", "title": "Replicated outing"}]
    # The query and its plan are in the audit, in the hash-chained outcome.
    call = ToolCall.objects.get(pk=answer["call_id"])
    assert call.output["query"].startswith("SELECT agent_id, title FROM tasks")
    assert call.output["plan"]["Node Type"] and "Total Cost" in call.output["plan"]
    assert verify_chain("reggie") is None
    # A named query, its values bound.
    named = _query(reggie, {"query": "tasks_by_status"}, task)["result"]
    expected = list(
        AgentTask.objects.values("agent_id", "status")
        .annotate(tasks=Count("task_id"))
        .order_by("agent_id", "status")
    )
    assert named["rows"] == expected and named["named"] == "tasks_by_status"
    # The board shows the replica's lag: nothing behind once it has caught up.
    client.force_login(f.UserFactory(is_staff=True))
    _caught_up(replica)
    page = client.get("/board/replica/").content.decode()
    assert "streaming standby" in page and 'id="replica-lag">0' in page


def test_writes_are_refused_by_postgresql_and_the_role_reads_only_exposed_views(
    reggie: SignedClient, replica: dict[str, str]
) -> None:
    task = _task(SUPER)
    for sql in ("CREATE TABLE intruder (a int)", "UPDATE tasks SET title = 'x'"):
        answer = _query(reggie, {"sql": sql}, task)
        assert answer["outcome"] == "failed", answer
        assert answer["error"].startswith("postgres 25006"), answer["error"]
        assert "read-only transaction" in answer["error"]
    # The standby refuses whoever asks: its own superuser too.
    with (
        psycopg.connect(replica["admin"], autocommit=True) as conn,
        pytest.raises(psycopg.errors.ReadOnlySqlTransaction),
    ):
        conn.execute("CREATE TABLE intruder (a int)")
    assert not AgentTask.objects.filter(title="x").exists()
    # The role reads the views staff expose, nothing else.
    secret = _query(reggie, {"sql": "SELECT * FROM public.agent_credentials"}, task)
    assert secret["outcome"] == "failed" and secret["error"].startswith("postgres 42501")
    ReplicaView.objects.filter(name="agents").update(exposed=False)
    assert "agents" not in replica_grants_sync()["views"]
    _caught_up(replica)
    hidden = _query(reggie, {"sql": "SELECT name FROM agents"}, task)
    assert hidden["outcome"] == "failed" and hidden["error"].startswith("postgres 42501")
    shown = _query(reggie, {"sql": "SELECT count(*) AS n FROM tool_calls"}, task)
    assert shown["outcome"] == "succeeded", shown


def test_row_cap_timeout_pii_filter_and_super_mode_only(
    reggie: SignedClient, replica: dict[str, str]
) -> None:
    task = _task(SUPER)
    for n in range(3):
        f.AgentTaskFactory(agent=Agent.objects.get(agent_id="henry"), title=f"Call 0412 345 67{n}")
    _caught_up(replica)
    capped = _query(
        reggie,
        {"sql": "SELECT title FROM tasks WHERE title LIKE 'Call%' ORDER BY title", "max_rows": 2},
        task,
    )["result"]
    assert capped["row_count"] == 2 and capped["truncated"] is True
    assert capped["rows"][0]["title"] == "Call <PHONE_NUMBER>" and capped["redactions"] == 2
    slow = _query(reggie, {"sql": "SELECT pg_sleep(10)"}, task)
    assert slow["outcome"] == "timed_out", slow
    missing = _query(reggie, {"query": "calls_since"}, task)
    assert missing["outcome"] == "failed" and missing["error"] == "missing_params: since"
    unknown = _query(reggie, {"query": "everything"}, task)
    assert unknown["outcome"] == "failed" and unknown["error"].startswith("unknown_query")
    # Only Super mode: the mode is the task's (its own query, worked out by the broker).
    normal = _query(reggie, {"query": "tasks_by_status"}, _task(NORMAL))
    assert normal["status"] == "denied" and normal["code"] == "mode_not_allowed"
    assert "this task is normal" in normal["detail"]
    without = _query(reggie, {"query": "tasks_by_status"}, None)
    assert without["status"] == "denied" and without["code"] == "mode_not_allowed"
    henry_task = f.AgentTaskFactory(agent=Agent.objects.get(agent_id="henry"))
    answer = reggie.post(
        CALLS,
        {
            "tool_id": "db.replica.query",
            "reason": "another agent's super task",
            "arguments": {"query": "tasks_by_status"},
            "task_id": str(henry_task.task_id),
        },
    )
    assert answer.status_code in (403, 404), answer.json()
