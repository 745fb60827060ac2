"""schemathesis against /api/schema/ on a real server: generated (and negative) requests, signed
as Henry, every check on. Bounded here; `SCHEMATHESIS_EXAMPLES=500 pytest -k schemathesis` for a
long run."""

from __future__ import annotations

import os
import secrets
import time
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import ignored_auth
from schemathesis.transport.prepare import get_exclude_headers

from agents_vm.signing import sign
from brainframe.models import Agent
from brainframe.services.credentials import agent_credential_issue
from brainframe.services.seed import seed_brainframe

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
EXAMPLES = int(os.environ.get("SCHEMATHESIS_EXAMPLES", "15"))


class RabsHmac(requests.auth.AuthBase):
    """Sign the exact bytes that go on the wire, as the agent SDK does."""

    def __init__(self, agent_id: str, secret: str) -> None:
        self.agent_id, self.secret = agent_id, secret.encode()

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        body = request.body or b""
        if isinstance(body, str):
            body = body.encode()
        path = urlsplit(request.url or "").path
        query = urlsplit(request.url or "").query
        ts, nonce = str(int(time.time())), secrets.token_hex(16)
        target = f"{path}?{query}" if query else path
        sig = sign(self.secret, request.method or "GET", target, ts, nonce, body)
        request.headers["Authorization"] = (
            f"RABS-HMAC agent={self.agent_id},ts={ts},nonce={nonce},sig={sig}"
        )
        return request


@pytest.fixture
def api_schema(live_server_url: str) -> Any:
    loaded = schemathesis.openapi.from_url(f"{live_server_url}/api/schema/")
    # Valid and invalid data both. No NUL characters: the API refuses them anywhere (PostgreSQL
    # text cannot hold them; tests/broker/test_hostile_input.py), which a JSON Schema cannot say
    # of free-form objects such as tool arguments.
    loaded.config.generation.update(modes=list(GenerationMode), allow_x00=False)
    return loaded


@pytest.fixture
def henry() -> RabsHmac:
    seed_brainframe()
    return RabsHmac("henry", agent_credential_issue(agent=Agent.objects.get(agent_id="henry")))


# The reviewer API is for signed-in people (session + CSRF), not agents: tested in test_approvals.
# Deliverables are multipart file uploads, which the generator sends as plain form fields:
# covered by tests/broker/test_inbox.py.
schema = schemathesis.pytest.from_fixture("api_schema").exclude(path_regex="review|deliverables")


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_api_conforms(case: Any, henry: RabsHmac, live_server_url: str) -> None:
    # Signed as Henry, unless this case is one that leaves the Authorization header out.
    unsigned = "Authorization" in get_exclude_headers(case) or (
        case.meta is not None
        and (headers := case.meta.components.get(ParameterLocation.HEADER)) is not None
        and headers.mode.is_negative
        and "Authorization" not in (case.headers or {})
    )
    # ignored_auth replays the case with broken credentials through the same signer, which
    # would sign them again; forged, tampered and replayed signatures are covered by
    # bench/forgery.py and tests/broker/test_auth.py.
    case.call_and_validate(
        base_url=live_server_url,
        auth=None if unsigned else henry,
        excluded_checks=[ignored_auth],
    )
