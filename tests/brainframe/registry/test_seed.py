"""`manage.py seed_brainframe` loads realistic demo data and is idempotent."""

from __future__ import annotations

from io import StringIO

import pytest
from django.apps import apps
from django.core.management import call_command

from brainframe.choices import BUCKET_SCOPES, ContextBucket
from brainframe.models import (
    Agent,
    AgentNote,
    AgentTask,
    ContextBucketDefinition,
    PrimeDirective,
    Tool,
    ValidationPolicy,
)
from brainframe.safety.policy.conditions import vpol_rules_errors
from brainframe.schemas import handler_config_errors, json_schema_errors

pytestmark = pytest.mark.django_db


def _snapshot() -> dict[str, list[tuple[object, ...]]]:
    """Every row of every brainframe table (history included), as plain values."""
    snapshot = {}
    for model in apps.get_app_config("brainframe").get_models():
        fields = [
            f.attname
            for f in model._meta.concrete_fields
            if f.attname not in ("history_date", "created_at", "updated_at")
        ]
        snapshot[model._meta.db_table] = sorted(
            model._default_manager.values_list(*fields), key=repr
        )
    return snapshot


def test_running_twice_gives_the_same_rows() -> None:
    first = StringIO()
    call_command("seed_brainframe", stdout=first)
    assert "Created" in first.getvalue()
    before = _snapshot()
    second = StringIO()
    call_command("seed_brainframe", stdout=second)
    assert "nothing to add" in second.getvalue()
    assert _snapshot() == before


def test_reseeding_keeps_staff_changes(seeded: None) -> None:
    tool = Tool.objects.get(tool_id="comms.email.send")
    tool.execution_mode = "disabled"
    tool.save()
    call_command("seed_brainframe", stdout=StringIO())
    assert Tool.objects.get(tool_id="comms.email.send").execution_mode == "disabled"


def test_buckets_directives_and_agents(seeded: None) -> None:
    definitions = list(ContextBucketDefinition.objects.order_by("number"))
    assert [d.bucket for d in definitions] == list(ContextBucket.values)
    assert definitions[0].number == 1 and definitions[-1].number == 20
    assert all(d.scope == BUCKET_SCOPES[d.bucket] for d in definitions)

    assert dict(PrimeDirective.objects.values_list("code", "priority")) == {
        "PRIVACY_NO_PII": 100,
        "SAFETY_FIRST": 100,
        "NDIS_COMPLIANCE": 95,
    }
    agents = {a.agent_id: a for a in Agent.objects.all()}
    assert agents["henry"].type == Agent.Type.SANDBOXED and agents["henry"].role == "operations"
    assert agents["reggie"].type == Agent.Type.SANDBOXED and agents["reggie"].role == "reception"
    assert Agent.objects.filter(type=Agent.Type.NATIVE).count() == 1


def test_tools_cover_the_six_categories_with_the_seed_defaults(seeded: None) -> None:
    tools = list(Tool.objects.all())
    assert len(tools) >= 20
    assert {t.category for t in tools} == set(Tool.Category.values)
    for tool in tools:
        if tool.execution_mode == "disabled":
            continue
        expected = "auto" if tool.risk_level == "read" else "review"
        if tool.tool_id == "agents.delegate":
            # It only hands a task on: every call the worker makes is governed on its own.
            expected = "auto"
        assert tool.execution_mode == expected, tool.tool_id
        assert json_schema_errors(tool.input_schema, require_object=True) == [], tool.tool_id
        assert json_schema_errors(tool.output_schema, require_object=False) == [], tool.tool_id
        assert handler_config_errors(tool.handler_type, tool.handler_config) == [], tool.tool_id
    assert Tool.objects.get(tool_id="finance.billing.adjust").monitoring_ceiling == 2


def test_policies_notes_and_tasks(seeded: None) -> None:
    assert ValidationPolicy.objects.count() >= 3
    for policy in ValidationPolicy.objects.all():
        assert vpol_rules_errors(policy.rules) == [], policy.name
    henry_notes = set(AgentNote.objects.filter(agent_id="henry").values_list("content", flat=True))
    assert {
        "Always CC manager on emails",
        "Use formal tone for external",
        "Flag any NDIS budget > 80%",
    } <= henry_notes
    columns = set(AgentTask.objects.filter(agent_id="henry").values_list("status", flat=True))
    assert columns == {"todo", "in_progress", "review", "done"}


def test_baseline_is_what_a_deployment_governs_with_and_nothing_of_the_demo() -> None:
    from django.contrib.auth.models import Group

    from brainframe import demo_data
    from brainframe.models import ConstitutionRule, ContextBucketEntry, ModelPrice
    from brainframe.safety.policy import baseline

    out = StringIO()
    call_command("seed_brainframe", "--baseline", stdout=out)
    assert "Created" in out.getvalue()
    assert set(PrimeDirective.objects.values_list("code", flat=True)) == {
        d["code"] for d in baseline.PRIME_DIRECTIVES
    }
    assert set(ConstitutionRule.objects.values_list("code", flat=True)) == {
        r["code"] for r in baseline.CONSTITUTION
    }
    assert Group.objects.filter(name="reviewers").exists()
    assert ContextBucketDefinition.objects.count() == len(ContextBucket.values)
    assert ModelPrice.objects.count() == len(demo_data.MODEL_PRICES)
    for demo in (Agent, ValidationPolicy, AgentNote, AgentTask, ContextBucketEntry):
        assert not demo.objects.exists(), demo.__name__
    # The only tools are the broker's own, which every agent may call.
    assert set(Tool.objects.values_list("tool_id", flat=True)) == {
        t["tool_id"] for t in baseline.SYSTEM_TOOLS
    }

    # The full seed adds the demo on top and leaves the baseline as it was.
    baseline = _snapshot()
    call_command("seed_brainframe", stdout=StringIO())
    after = _snapshot()
    for table in ("prime_directives", "constitution_rules"):
        assert after[table] == baseline[table]
    assert Agent.objects.exists() and Tool.objects.exists()


def test_demo_people_resolve_from_their_identities(seeded: None) -> None:
    from brainframe.services.ledger.ledgers import person_resolve

    linh = person_resolve("sms", "0400 000 102")
    assert linh is not None and linh.name == "Linh Tran" and linh.relationship == "family"
    assert linh.acts_for is not None and linh.acts_for.name == "Ruby Tran"
    assert person_resolve("email", "Linh <LINH.TRAN@example.org>") == linh
    assert person_resolve("chat", "@Priya").name == "Priya Nair"  # type: ignore[union-attr]
    assert person_resolve("sms", "+61 499 999 999") is None  # unknown
