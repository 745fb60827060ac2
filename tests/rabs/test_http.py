"""HTTP through rabs.web.http (what daphne serves): Django's synchronous path on worker threads, the
answer sent by the event loop — status, headers, cookies and streamed files intact."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import Group
from django.core.files.base import ContentFile
from django.test import Client

from brainframe.models import Deliverable
from brainframe.services.seed import seed_brainframe
from rabs.web.http import SyncASGIHandler
from tests import factories as f

# The worker threads have database connections of their own: what they read must be committed.
pytestmark = pytest.mark.django_db(transaction=True)
RECEIVED: list[int] = []


def _exchange(
    app: SyncASGIHandler,
    path: str,
    headers: list[tuple[bytes, bytes]] | None = None,
    *,
    method: str = "GET",
    body: list[bytes] | None = None,
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """One request through the handler; ``body`` is sent as that many ``http.request`` messages.
    Returns (status, headers, body); ``RECEIVED`` counts the messages the handler read."""
    sent: list[dict[str, Any]] = []
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), *(headers or [])],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    parts = body or [b""]
    incoming = [
        {"type": "http.request", "body": part, "more_body": n < len(parts) - 1}
        for n, part in enumerate(parts)
    ]
    RECEIVED.clear()

    async def receive() -> dict[str, Any]:
        RECEIVED.append(1)
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start, *body = sent
    assert start["type"] == "http.response.start"
    assert body[-1].get("more_body", False) is False  # the answer was finished
    return start["status"], start["headers"], b"".join(m.get("body", b"") for m in body)


@pytest.fixture
def app() -> SyncASGIHandler:
    return SyncASGIHandler(threads=2)


def test_an_api_refusal_keeps_its_status_and_json(app: SyncASGIHandler) -> None:
    status, headers, body = _exchange(app, "/api/v1/tools/")
    assert status == 401
    assert (b"Content-Type", b"application/json") in headers
    assert b'"code":"auth_missing"' in body.replace(b" ", b"")


def test_cookies_are_sent(app: SyncASGIHandler) -> None:
    status, headers, _ = _exchange(app, "/admin/login/")
    assert status == 200
    assert any(name == b"Set-Cookie" and value.startswith(b"csrftoken=") for name, value in headers)


def test_a_file_download_streams_in_full(
    app: SyncASGIHandler, settings: Any, tmp_path: Path
) -> None:
    seed_brainframe()
    settings.MEDIA_ROOT = tmp_path
    user = f.UserFactory(username="alice")
    user.groups.add(Group.objects.get(name="reviewers"))
    client = Client()
    client.force_login(user)
    content = b"participant,hours\n" * 20_000  # 360 KB: several chunks
    item = Deliverable(
        agent_id="henry",
        filename="hours.csv",
        content_type="text/csv",
        size_bytes=len(content),
        sha256="0" * 64,
    )
    item.file.save("hours.csv", ContentFile(content), save=True)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    status, headers, body = _exchange(app, f"/board/deliverables/{item.id}/", [(b"cookie", cookie)])
    assert status == 200 and body == content
    assert (b"Content-Disposition", b'attachment; filename="hours.csv"') in headers


def test_a_body_declared_too_large_is_refused_before_it_is_read(
    app: SyncASGIHandler, settings: Any
) -> None:
    settings.RABS_HTTP_MAX_BODY_BYTES = 1000
    status, headers, body = _exchange(
        app,
        "/api/v1/tool-calls/",
        [(b"content-length", b"5000000"), (b"content-type", b"application/json")],
        method="POST",
        body=[b"x" * 1000] * 5,
    )
    assert status == 413 and json.loads(body)["code"] == "body_too_large"
    assert (b"content-type", b"application/json") in headers
    assert RECEIVED == []  # not a byte of it was read


def test_a_body_that_grows_past_the_limit_is_refused_as_it_arrives(
    app: SyncASGIHandler, settings: Any
) -> None:
    settings.RABS_HTTP_MAX_BODY_BYTES = 1000
    status, _, body = _exchange(
        app,
        "/api/v1/tool-calls/",
        method="POST",
        body=[b"x" * 400] * 50,  # no Content-Length
    )
    assert status == 413 and json.loads(body)["code"] == "body_too_large"
    assert len(RECEIVED) == 3  # stopped at the message that crossed the limit


def test_agent_calls_take_the_lean_lane_with_the_same_safeguards(app: SyncASGIHandler) -> None:
    """POST /api/v1/tool-calls/ skips the people-only middleware but keeps the Host check, the
    security headers and the answers' shape; what the fast path hands back takes the full chain."""
    from brainframe.models import Agent
    from brainframe.services.access.credentials import agent_credential_issue
    from tests.signing import SignedClient

    seed_brainframe()
    secret = agent_credential_issue(agent=Agent.objects.get(agent_id="henry"))
    signer = SignedClient(Client(), "henry", secret)
    payload = json.dumps(
        {
            "tool_id": "roster.shift.read",
            "reason": "lane",
            "arguments": {"date_from": "2026-03-02", "date_to": "2026-03-02"},
        }
    ).encode()

    def post(body: bytes, *, host: bytes = b"testserver") -> tuple[int, dict[bytes, bytes], Any]:
        auth = signer.headers("POST", "/api/v1/tool-calls/", body)["HTTP_AUTHORIZATION"]
        headers = [
            (b"content-type", b"application/json"),
            (b"authorization", auth.encode()),
            (b"content-length", str(len(body)).encode()),
        ]
        if host != b"testserver":
            headers.append((b"host", host))
        status, raw, answer = _exchange(app, "/api/v1/tool-calls/", headers, method="POST",
                                        body=[body])  # fmt: skip
        return status, {k.lower(): v for k, v in raw}, json.loads(answer)

    status, headers, answer = post(payload)
    assert status == 200 and answer["status"] == "executed"
    assert headers[b"x-content-type-options"] == b"nosniff"
    assert headers[b"x-frame-options"] == b"DENY"
    assert b"set-cookie" not in headers  # no session for a signed agent
    bad = json.dumps({"tool_id": 7, "reason": "lane"}).encode()
    status, headers, answer = post(bad)  # handed to DRF: its full answer
    assert status == 400 and answer["field"] == "tool_id"
    assert headers[b"x-frame-options"] == b"DENY"


def test_a_form_body_reaches_the_app_under_daphne(live_server_url: str) -> None:
    """daphne's HTTP layer (Twisted) leaves POSTed forms to the app: a multipart body it cannot
    parse gets the API's own JSON answer, not a bare 400 from below the app."""
    answer = httpx.post(
        f"{live_server_url}/api/v1/tool-calls/",
        content=b"not a multipart body",
        headers={"Content-Type": "multipart/form-data"},
    )
    assert answer.status_code == 401, answer.text  # Twisted's own answer was a bare 400
    assert answer.json()["code"] == "auth_missing"
