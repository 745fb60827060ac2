"""Super Reggie answers a complex question from the read replica (seed 000 §8): the agent
service in Super mode, its Dreamer asking for the named query, the Actuator calling
``db.replica.query`` on the session's streaming standby."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from brainframe.models import Agent, AgentTask, Tool, ToolCall
from brainframe.services.access.credentials import agent_credential_issue
from brainframe.services.registry.replica import replica_grants_sync
from brainframe.services.seed import seed_brainframe
from rabs.stack.replica import replica_lsn_caught_up
from tests import factories as f
from tests.agents_vm.runtime_kit import KEPT_TOOLS, agent_service, gateway_for, role_servers
from tests.agents_vm.runtime_kit import task_ended as _ended

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SUPER_QUERY = "Compare how many tasks Henry has done with how many are still to do"


def reggie_dreamer(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    last = messages[-1]["content"]
    if "db.replica.query was carried out" in last:
        counts: dict[str, str] = {}
        rows: dict[str, dict[str, str]] = {}
        for row, key, value in re.findall(r"rows (\d+)\.(\w+): (\S+)", last):
            rows.setdefault(row, {})[key] = value
        for row in rows.values():
            if row.get("agent_id") == "henry":
                counts[row["status"]] = row["tasks"]
        done, todo = counts.get("done", "0"), counts.get("todo", "0")
        return {"content": f"FINAL ANSWER: Henry has {done} tasks done and {todo} to do."}
    return {
        "content": "Ask the read replica how many tasks each agent has in each column, using "
        "db.replica.query with the named query tasks_by_status."
    }


def reggie_actuator(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    assert [m["role"] for m in messages] == ["system", "user"], "the Actuator saw more"
    dream = messages[1]["content"]
    if dream.startswith("FINAL ANSWER: "):
        return {"tool_calls": [{"name": "finish", "arguments": {"answer": dream[14:]}}]}
    assert "db_replica_query" in {t["function"]["name"] for t in tools}
    return {"tool_calls": [{"name": "db_replica_query", "arguments": {"query": "tasks_by_status"}}]}


@pytest.mark.timeout(180)
def test_super_reggie_answers_from_the_replica(
    live_server_url: str, replica_standby: dict[str, str] | None, tmp_path: Path
) -> None:
    if replica_standby is None:
        pytest.skip("the replica needs the embedded PostgreSQL")
    seed_brainframe()
    AgentTask.objects.all().delete()
    Tool.objects.exclude(tool_id__in=[*KEPT_TOOLS, "db.replica.query"]).delete()
    replica_grants_sync()
    for status in ("done", "done", "todo"):
        f.AgentTaskFactory(agent_id="henry", title="Earlier work", status=status)
    task = f.AgentTaskFactory(
        agent_id="reggie", title="Front desk", payload={"query": SUPER_QUERY, "channel": "sms"}
    )
    replica_lsn_caught_up(replica_standby["primary"], replica_standby["admin"])
    reggie = Agent.objects.get(agent_id="reggie")
    with role_servers(reggie_dreamer, reggie_actuator) as roles:
        key = gateway_for("reggie", roles)
        with agent_service(
            agent_id="reggie", secret=agent_credential_issue(agent=reggie), llm_key=key,
            broker_url=live_server_url, home=tmp_path / "reggie",
            extra='[modes]\nnormal = "actuator"\nsuper = "dreamer"\n',
        ):  # fmt: skip
            answered = _ended(task.task_id, timeout=90)
        assert not roles.dreamer.errors and not roles.actuator.errors
    assert answered.status == "done", answered.failure_reason
    assert answered.result["summary"] == "Henry has 2 tasks done and 1 to do."
    (call,) = ToolCall.objects.filter(task=answered)
    assert call.requested_tool_id == "db.replica.query" and call.outcome == "succeeded"
    assert call.output["named"] == "tasks_by_status" and call.output["plan"]["Node Type"]
