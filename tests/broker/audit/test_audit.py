"""The hash-chained audit: `verify_audit` passes on real history and finds tampering."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from brainframe.models import ToolCall
from broker.audit.hashing import GENESIS_HASH
from broker.audit.verify import verify_chain
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db
CALLS = "/api/v1/tool-calls/"


@pytest.fixture
def history(henry: SignedClient, reggie: SignedClient) -> None:
    """A real mix of executed, denied, invalid and pending calls from two agents."""
    read = {
        "tool_id": "roster.shift.read",
        "reason": "check",
        "arguments": {"date_from": "2026-03-02", "date_to": "2026-03-02"},
    }
    for _ in range(3):
        henry.post(CALLS, read)
        reggie.post(CALLS, read)
    henry.post(CALLS, {**read, "arguments": {"date_from": "nope"}})
    henry.post(CALLS, {"tool_id": "hr.kpi.update", "reason": "x", "arguments": {}})
    reggie.post(CALLS, {"tool_id": "hr.kpi.update", "reason": "x", "arguments": {}})
    henry.post(
        CALLS,
        {
            "tool_id": "comms.notification.push",
            "reason": "tell staff",
            "arguments": {"staff_ids": ["ST-1"], "message": "Bus is late"},
        },
    )
    henry.post(CALLS, {"tool_id": "unknown.tool", "reason": "x", "arguments": {}})


def _verify() -> str:
    out, err = StringIO(), StringIO()
    call_command("verify_audit", stdout=out, stderr=err)
    return out.getvalue()


def _tamper(sql: str, params: list[Any]) -> None:
    """Edit the audit the way someone with database superuser rights could: triggers off."""
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        cursor.execute(sql, params)
        cursor.execute("SET session_replication_role = DEFAULT")


def test_chains_are_linked_and_verify(history: None) -> None:
    henry_rows = list(ToolCall.objects.filter(agent_id="henry").order_by("seq"))
    assert [r.seq for r in henry_rows] == list(range(1, len(henry_rows) + 1))
    assert henry_rows[0].prev_hash == GENESIS_HASH
    assert all(b.prev_hash == a.row_hash for a, b in itertools.pairwise(henry_rows))
    assert "audit intact: 2 chain(s)" in _verify()


def test_an_edited_row_is_named(history: None) -> None:
    victim = ToolCall.objects.filter(agent_id="henry").order_by("seq")[3]
    _tamper(
        "UPDATE tool_calls SET input = %s WHERE id = %s", ['{"date_from": "2020-01-01"}', victim.id]
    )
    with pytest.raises(CommandError, match="FAILED"):
        _verify()
    problem = verify_chain("henry")
    assert problem is not None and problem.call_id == victim.id
    assert "row edited" in problem.problem
    assert verify_chain("reggie") is None


def test_a_deleted_row_is_found(history: None) -> None:
    victim = ToolCall.objects.filter(agent_id="reggie").order_by("seq")[1]
    _tamper("DELETE FROM tool_calls WHERE id = %s", [victim.id])
    problem = verify_chain("reggie")
    assert problem is not None and problem.seq == victim.seq + 1
    assert "missing" in problem.problem


def test_an_edited_outcome_is_found(history: None) -> None:
    victim = ToolCall.objects.filter(agent_id="henry", outcome="succeeded").first()
    _tamper("UPDATE tool_calls SET output = %s WHERE id = %s", ['{"shifts": []}', victim.id])
    problem = verify_chain("henry")
    assert problem is not None and problem.call_id == victim.id
    assert "outcome edited" in problem.problem


@pytest.mark.django_db(transaction=True)
def test_a_chain_verified_in_parallel_names_the_same_rows(history: None) -> None:
    """Cut into runs checked in forked processes, the chain gives the sequential answers."""
    rows = list(ToolCall.objects.filter(agent_id="henry").order_by("seq"))
    assert len(rows) >= 6
    parallel = {"workers": 3, "parallel_from": 1}
    assert verify_chain("henry", **parallel) is None

    edited = rows[4]  # inside the second or third run, not its first row
    _tamper("UPDATE tool_calls SET input = %s WHERE id = %s", ['{"x": 1}', edited.id])
    found = verify_chain("henry", **parallel)
    assert found is not None and found.call_id == edited.id and "row edited" in found.problem
    assert found == verify_chain("henry")

    # A row deleted at the end of a run is found at the first row of the next one.
    step = -(-len(rows) // 3)
    boundary = rows[step - 1]
    _tamper("DELETE FROM tool_calls WHERE id = %s", [boundary.id])
    found = verify_chain("henry", **parallel)
    assert found is not None and found.seq == boundary.seq + 1 and "missing" in found.problem
    assert found == verify_chain("henry")


def _verify_file(path: Any) -> tuple[int, str]:
    """The standalone verifier, in its own interpreter with no Django settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO")}
    done = subprocess.run(
        [sys.executable, "-m", "broker.verify_export", str(path)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
        env=env,
        timeout=60,
    )
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("fmt", ["ndjson", "csv"])
def test_an_exported_audit_is_verified_without_the_database(
    history: None, tmp_path: Any, fmt: str
) -> None:
    path = tmp_path / f"audit.{fmt}"
    call_command("export_audit", "--format", fmt, "--output", str(path), stderr=StringIO())
    lines = path.read_text().splitlines()
    # The rows, then the signed trailer (no checkpoint written yet); CSV has its header.
    assert len(lines) == ToolCall.objects.count() + 1 + (1 if fmt == "csv" else 0)
    code, said = _verify_file(path)
    assert code == 0 and f"intact ({ToolCall.objects.count()} rows" in said, said
    # one row edited outside the product: the verifier names it
    target = next(i for i, line in enumerate(lines) if "Bus is late" in line)
    lines[target] = lines[target].replace("Bus is late", "Bus is early")
    path.write_text("\n".join(lines) + "\n")
    code, said = _verify_file(path)
    line_number = target if fmt == "csv" else target + 1
    assert code == 1 and f"line {line_number}: " in said and "row edited" in said, said
    # a row dropped from the file breaks its agent's sequence
    del lines[target]
    path.write_text("\n".join(lines) + "\n")
    code, said = _verify_file(path)
    assert code == 1 and "a row is missing" in said, said


def test_an_export_from_a_date_on_is_verified_from_its_first_row(
    history: None, tmp_path: Any
) -> None:
    rows = ToolCall.objects.order_by("timestamp")
    middle = rows[len(rows) // 2].timestamp
    path = tmp_path / "since.ndjson"
    call_command(
        "export_audit", "--since", middle.isoformat(), "--output", str(path), stderr=StringIO()
    )
    assert 0 < len(path.read_text().splitlines()) - 1 < ToolCall.objects.count()
    assert _verify_file(path)[0] == 0
    with pytest.raises(CommandError, match="--since"):
        call_command("export_audit", "--since", "yesterday", stderr=StringIO())
