"""The tools registry in the admin: a tool is saved with its history and its MCP name, bad
schemas and handler configurations are refused, JSON documents are edited indented, and the
list's actions and filters work."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.db.models import Model
from django.test import Client
from django.urls import reverse

from brainframe.models import Tool
from tests.admin_forms import page_form as _page_form

pytestmark = pytest.mark.django_db


def _url(model: type[Model], view: str, *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def _tool_form(**overrides: Any) -> dict[str, Any]:
    data = {
        "tool_id": "roster.leave.read",
        "description": "Read approved leave",
        "category": "operations",
        "context_bucket": "rostering_scheduling",
        "agent_access": "henry,reggie",
        "role_requirements": "",
        "risk_level": "read",
        "execution_mode": "auto",
        "validation_mode": "monitor",
        "data_class": "logistics",
        "monitoring_level": "0",
        "monitoring_ceiling": "4",
        "permission_tier": "READ_ONLY",
        "handler_type": "function",
        "handler_config": '{"callable": "roster.leave_read"}',
        "input_schema": '{"type": "object", "properties": {"date": {"type": "string"}}}',
        "output_schema": "{}",
        "level_changes-TOTAL_FORMS": "0",
        "level_changes-INITIAL_FORMS": "0",
    }
    data.update(overrides)
    return data


def test_valid_tool_is_saved_with_history(admin_client: Client) -> None:
    response = admin_client.post(_url(Tool, "add"), _tool_form())
    assert response.status_code == 302, response.content.decode()[:2000]
    tool = Tool.objects.get(tool_id="roster.leave.read")
    assert tool.agent_access == ["henry", "reggie"]
    record = tool.history.get()
    assert record.history_type == "+"
    assert record.history_user.username == "admin"


def test_each_tool_shows_its_mcp_name_and_a_clashing_id_is_refused(
    admin_client: Client,
) -> None:
    assert admin_client.post(_url(Tool, "add"), _tool_form()).status_code == 302
    listed = admin_client.get(_url(Tool, "changelist")).content.decode()
    assert "MCP name" in listed and "roster_leave_read" in listed
    page = admin_client.get(_url(Tool, "change", "roster.leave.read")).content.decode()
    assert "roster_leave_read" in page
    clash = admin_client.post(_url(Tool, "add"), _tool_form(tool_id="roster.leave_read"))
    assert clash.status_code == 200
    assert "would be named as roster.leave.read is" in clash.content.decode()
    assert not Tool.objects.filter(tool_id="roster.leave_read").exists()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("input_schema", '{"type": "objekt"}', "not a valid JSON Schema"),
        ("input_schema", '{"type": "string"}', "needs &quot;type&quot;: &quot;object&quot;"),
        ("input_schema", "[1, 2]", "must be a JSON object"),
        ("input_schema", "{not json", "Enter a valid JSON"),
        ("output_schema", '{"properties": 5}', "not a valid JSON Schema"),
        ("handler_config", '{"url": "http://x"}', "callable"),
    ],
)
def test_invalid_schema_or_handler_config_is_refused(
    admin_client: Client, field: str, value: str, message: str
) -> None:
    response = admin_client.post(_url(Tool, "add"), _tool_form(**{field: value}))
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not Tool.objects.filter(tool_id="roster.leave.read").exists()


def test_json_documents_are_edited_indented_and_a_typo_is_shown_back(
    admin_client: Client,
) -> None:
    assert admin_client.post(_url(Tool, "add"), _tool_form()).status_code == 302
    tool = Tool.objects.get(tool_id="roster.leave.read")
    page = admin_client.get(_url(Tool, "change", tool.pk)).content.decode()
    shown = _page_form(page)
    assert shown["input_schema"].splitlines()[:2] == ["{", '  "type": "object",']
    assert 'class="json-editor"' in page
    # Saving the page as shown changes nothing (the admin's log says so).
    assert admin_client.post(_url(Tool, "change", tool.pk), shown).status_code == 302
    assert LogEntry.objects.latest("action_time").get_change_message() == "No fields changed."
    tool.refresh_from_db()
    assert tool.input_schema == {"type": "object", "properties": {"date": {"type": "string"}}}
    # A typo is refused and shown back as typed, to be corrected rather than retyped.
    typo = '{\n  "type": "object",\n  "properties": {\n}'
    refused = admin_client.post(_url(Tool, "change", tool.pk), {**shown, "input_schema": typo})
    assert refused.status_code == 200 and "Enter a valid JSON" in refused.content.decode()
    assert _page_form(refused.content.decode())["input_schema"] == typo
    # An edit is saved, and logged as one.
    edited = shown["input_schema"].replace('"string"', '"string", "format": "date"')
    assert (
        admin_client.post(
            _url(Tool, "change", tool.pk), {**shown, "input_schema": edited}
        ).status_code
        == 302
    )
    assert LogEntry.objects.latest("action_time").get_change_message() == "Changed Input schema."
    tool.refresh_from_db()
    assert tool.input_schema["properties"]["date"] == {"type": "string", "format": "date"}


def test_handler_config_is_checked_against_the_handler_type(admin_client: Client) -> None:
    sql_injection_prone = '{"query": "SELECT * FROM shifts WHERE id = {id}"}'
    response = admin_client.post(
        _url(Tool, "add"), _tool_form(handler_type="sql", handler_config=sql_injection_prone)
    )
    assert "named %(name)s placeholders" in response.content.decode()
    response = admin_client.post(
        _url(Tool, "add"),
        _tool_form(handler_type="api", handler_config='{"url": "ftp://x", "method": "GET"}'),
    )
    assert "does not match" in response.content.decode()
    assert not Tool.objects.filter(tool_id="roster.leave.read").exists()


def test_disable_and_enable_actions(admin_client: Client, seeded: None) -> None:
    ids = ["roster.shift.read", "roster.shift.create"]
    url = _url(Tool, "changelist")
    admin_client.post(url, {"action": "disable_tools", "_selected_action": ids})
    assert set(Tool.objects.filter(tool_id__in=ids).values_list("execution_mode", flat=True)) == {
        "disabled"
    }
    admin_client.post(url, {"action": "enable_tools", "_selected_action": ids})
    modes = dict(Tool.objects.filter(tool_id__in=ids).values_list("tool_id", "execution_mode"))
    # Re-enabled in the seed's default mode for their risk: read → auto, write → review.
    assert modes == {"roster.shift.read": "auto", "roster.shift.create": "review"}
    assert Tool.objects.get(tool_id="roster.shift.read").history.count() == 3


def test_set_execution_mode_action(admin_client: Client, seeded: None) -> None:
    admin_client.post(
        _url(Tool, "changelist"),
        {"action": "set_mode_review", "_selected_action": ["roster.shift.read"]},
    )
    assert Tool.objects.get(tool_id="roster.shift.read").execution_mode == "review"


def test_tool_list_filters_on_each_enum(admin_client: Client, seeded: None) -> None:
    url = _url(Tool, "changelist")
    response = admin_client.get(url, {"risk_level__exact": "critical"})
    body = response.content.decode()
    assert "finance.ndis.claim.submit" in body
    assert "roster.shift.read" not in body
    for field in (
        "category",
        "execution_mode",
        "validation_mode",
        "data_class",
        "monitoring_level",
        "handler_type",
        "context_bucket",
    ):
        assert f"{field}__exact" in body
