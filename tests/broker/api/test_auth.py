"""RABS-HMAC: forged, tampered, stale and replayed requests are refused with a code."""

from __future__ import annotations

import json
import time

import pytest

from brainframe.models import Agent
from brainframe.services.access.credentials import agent_credential_issue
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db
PATH = "/api/v1/tools/"


def _code(response) -> str:  # type: ignore[no-untyped-def]
    assert response.status_code == 401, response.content
    assert response["WWW-Authenticate"] == "RABS-HMAC"
    return response.json()["code"]


def test_valid_signature_is_accepted(henry: SignedClient) -> None:
    assert henry.get(PATH).status_code == 200


def test_missing_and_malformed_headers(henry: SignedClient) -> None:
    assert _code(henry.client.get(PATH)) == "auth_missing"
    assert _code(henry.client.get(PATH, HTTP_AUTHORIZATION="Bearer abc")) == "auth_malformed"


def test_replayed_nonce_is_refused(henry: SignedClient) -> None:
    headers = henry.headers("GET", PATH, b"", nonce="ab" * 16)
    assert henry.client.get(PATH, **headers).status_code == 200
    assert _code(henry.client.get(PATH, **headers)) == "auth_replayed_nonce"


def test_stale_or_future_timestamp_is_refused(henry: SignedClient) -> None:
    for offset in (-301, 301):
        headers = henry.headers("GET", PATH, b"", ts=int(time.time()) + offset)
        assert _code(henry.client.get(PATH, **headers)) == "auth_stale_timestamp"


def test_tampered_body_path_or_method_is_refused(henry: SignedClient) -> None:
    body = json.dumps({"tool_id": "roster.shift.read", "arguments": {}, "reason": "x"}).encode()
    headers = henry.headers("POST", "/api/v1/tool-calls/", body)
    tampered = body.replace(b"roster.shift.read", b"finance.billing.adjust")
    response = henry.client.generic(
        "POST", "/api/v1/tool-calls/", tampered, content_type="application/json", **headers
    )
    assert _code(response) == "auth_bad_signature"
    headers = henry.headers("GET", PATH, b"")
    assert _code(henry.client.get("/api/v1/tasks/", **headers)) == "auth_bad_signature"
    assert _code(henry.client.get(PATH + "?x=1", **headers)) == "auth_bad_signature"
    headers = henry.headers("GET", "/api/v1/heartbeat/", b"")
    response = henry.client.generic("POST", "/api/v1/heartbeat/", b"", **headers)
    assert _code(response) == "auth_bad_signature"


def test_wrong_secret_unknown_agent_and_revoked_key(henry: SignedClient) -> None:
    forged = SignedClient(henry.client, "henry", "0" * 64)
    assert _code(forged.get(PATH)) == "auth_bad_signature"
    ghost = SignedClient(henry.client, "ghost", "0" * 64)
    assert _code(ghost.get(PATH)) == "auth_unknown_agent"
    agent_credential_issue(agent=Agent.objects.get(agent_id="henry"))  # rotate
    assert _code(henry.get(PATH)) == "auth_bad_signature"


def test_paused_agent_is_refused(henry: SignedClient) -> None:
    Agent.objects.filter(agent_id="henry").update(status="paused")
    assert _code(henry.get(PATH)) == "auth_agent_paused"


def test_many_forged_requests_none_accepted(henry: SignedClient) -> None:
    accepted = 0
    for i in range(200):
        headers = henry.headers("GET", PATH, b"")
        sig = headers["HTTP_AUTHORIZATION"][-64:]
        flipped = sig[: i % 64] + ("0" if sig[i % 64] != "0" else "1") + sig[i % 64 + 1 :]
        headers["HTTP_AUTHORIZATION"] = headers["HTTP_AUTHORIZATION"][:-64] + flipped
        accepted += henry.client.get(PATH, **headers).status_code == 200
    assert accepted == 0
