"""Bad input always gets a 4xx with a machine-readable code, never a 500."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from brainframe.models import ToolCall
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db
CALLS = "/api/v1/tool-calls/"
GOOD = {
    "tool_id": "roster.shift.read",
    "reason": "x",
    "arguments": {"date_from": "2026-03-02", "date_to": "2026-03-02"},
}


@pytest.mark.parametrize(
    ("raw", "status", "code"),
    [
        (b"{not json", 400, "malformed_json"),
        (b"[1, 2, 3]", 400, "invalid_request"),
        (b'"a string"', 400, "invalid_request"),
        (b"", 400, "invalid_request"),
        (
            b'{"tool_id": "x", "arguments": {}, "reason": "x", "confidence": NaN}',
            400,
            "malformed_json",
        ),
        (  # not JSON, wherever it is (the audit could not store it either)
            b'{"tool_id": "roster.shift.read", "reason": "x", "arguments": {"n": Infinity}}',
            400,
            "malformed_json",
        ),
    ],
)
def test_malformed_bodies(henry: SignedClient, raw: bytes, status: int, code: str) -> None:
    response = henry.post(CALLS, raw=raw)
    assert response.status_code == status, response.content
    assert response.json()["code"] == code


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"tool_id": 12}, "tool_id"),
        ({"tool_id": "no.such.tool"}, None),
        ({"arguments": "date_from=today"}, "arguments"),
        ({"arguments": [1, 2]}, "arguments"),
        ({"confidence": 1.5}, "confidence"),
        ({"confidence": "very"}, "confidence"),
        ({"task_id": "not-a-uuid"}, "task_id"),
        ({"parent_r_tag": 5}, "parent_r_tag"),
        ({"reason": ""}, "reason"),
        ({"reason": None}, "reason"),
        ({"origin": {"origin_type": "pigeon", "source_ref": "x"}}, "origin"),
        ({"origin": {"origin_type": "email", "source_ref": "x", "extra": 1}}, "origin"),
        ({"surprise": True}, "surprise"),
        ({"arguments": {"note": "nul \x00 inside"}}, "arguments"),
    ],
)
def test_wrong_types_and_unknown_fields(
    henry: SignedClient, change: dict[str, Any], field: str | None
) -> None:
    payload = {**GOOD, **change}
    response = henry.post(CALLS, payload)
    assert 400 <= response.status_code < 500, response.content
    body = response.json()
    if field is None:
        assert body["code"] == "unknown_tool"
    else:
        assert body["code"] == "invalid_request"
        assert body["field"] == field
        assert body["errors"] and all("path" in e and "message" in e for e in body["errors"])


def test_missing_fields_are_named(henry: SignedClient) -> None:
    body = henry.post(CALLS, {"arguments": {}}).json()
    assert body["code"] == "invalid_request"
    assert {e["path"] for e in body["errors"]} == {"/tool_id", "/reason"}


def test_oversized_body_is_413(henry: SignedClient, settings: Any) -> None:
    payload = {**GOOD, "reason": "x" * 100, "arguments": {"blob": "y" * (300 * 1024)}}
    response = henry.post(CALLS, payload)
    assert response.status_code == 413
    assert response.json()["code"] == "body_too_large"
    assert ToolCall.objects.count() == 0


def test_unknown_references_are_404(henry: SignedClient) -> None:
    for field, code in (("task_id", "unknown_task"), ("parent_r_tag", "unknown_parent_r_tag")):
        response = henry.post(CALLS, {**GOOD, field: str(uuid.uuid4())})
        assert response.status_code == 404
        assert response.json() == {
            "code": code,
            "detail": response.json()["detail"],
            "field": field,
        }


def test_wrong_content_type_is_415(henry: SignedClient) -> None:
    raw = json.dumps(GOOD).encode()
    response = henry.post(CALLS, raw=raw, content_type="text/plain")
    assert response.status_code == 415
    assert response.json()["code"] == "unsupported_media_type"


def test_unknown_call_and_bad_task_status(henry: SignedClient) -> None:
    assert henry.get(f"{CALLS}{uuid.uuid4()}/").json()["code"] == "unknown_call"
    response = henry.get("/api/v1/tasks/?status=sleeping")
    assert response.status_code == 400 and response.json()["field"] == "status"


def test_schema_and_docs_are_served_without_a_cdn(client: Any) -> None:
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    assert b"/api/v1/tool-calls/" in schema.content and b"RABS-HMAC" in schema.content
    docs = client.get("/api/docs/").content.decode()
    assert "swagger-ui" in docs
    assert "cdn" not in docs.lower() and "unpkg" not in docs and "https://" not in docs


def test_rate_limit_per_agent_is_429(
    henry: SignedClient, reggie: SignedClient, settings: Any
) -> None:
    from broker.api.throttling import throttle_reset

    settings.RABS_AGENT_RATE = "3/min"
    for agent_id in ("henry", "reggie"):
        throttle_reset(agent_id)  # earlier tests' calls
    statuses = [henry.get("/api/v1/tools/").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    limited = henry.get("/api/v1/tools/")
    assert limited.json()["code"] == "rate_limited" and "Retry-After" in limited
    assert reggie.get("/api/v1/tools/").status_code == 200  # per agent, not global


def test_an_unknown_host_under_the_api_is_a_json_400(client: Any) -> None:
    response = client.get("/api/v1/tools/", HTTP_HOST="evil.example")
    assert response.status_code == 400
    assert response.json() == {
        "code": "disallowed_host",
        "detail": "this server does not answer for that Host",
        "field": "Host",
    }
