"""The broker keeps the registry in memory: a change is in force from the next call, however it
was made, and a change rolled back is never served."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from brainframe.models import PrimeDirective, ToolCall
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db
CALLS = "/api/v1/tool-calls/"
READ = {
    "tool_id": "roster.shift.read",
    "reason": "check coverage",
    "arguments": {"date_from": "2026-03-02", "date_to": "2026-03-02"},
}


def _disable_by_sql() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE tools SET execution_mode = 'disabled' WHERE tool_id = %s",
            ["roster.shift.read"],
        )


def test_a_tool_disabled_by_raw_sql_is_refused_on_the_next_call(henry: SignedClient) -> None:
    assert henry.post(CALLS, READ).status_code == 200  # the registry is now in memory
    _disable_by_sql()
    refused = henry.post(CALLS, READ)
    assert refused.status_code == 403 and refused.json()["code"] == "tool_disabled"


def test_a_new_directive_is_in_force_on_the_next_call(henry: SignedClient) -> None:
    assert henry.post(CALLS, READ).status_code == 200
    PrimeDirective.objects.create(
        code="NO_ROSTER_READS",
        priority=90,
        scope="rosters",
        rule_text="Do not read rosters.",
        predicates=[
            {
                "id": "no-reads",
                "action": "deny",
                "reason": "rosters are closed today",
                "when": {"field": "tool.tool_id", "op": "eq", "value": "roster.shift.read"},
            }
        ],
    )
    refused = henry.post(CALLS, READ)
    assert refused.status_code == 403
    assert refused.json()["code"] == "directive:NO_ROSTER_READS"


def test_a_rolled_back_change_is_never_served(henry: SignedClient) -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        _disable_by_sql()
        assert henry.post(CALLS, READ).json()["code"] == "tool_disabled"  # seen inside
        raise RuntimeError("roll back")
    answer = henry.post(CALLS, READ)
    assert answer.status_code == 200 and answer.json()["outcome"] == "succeeded"
    assert ToolCall.objects.filter(decision="executed").count() == 1
