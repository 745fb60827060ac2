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
from schemathesis.config import SchemathesisConfig
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import ignored_auth
from schemathesis.transport.prepare import get_exclude_headers

from agents_vm.client.signing import sign
from brainframe.models import Agent
from brainframe.services.access.credentials import agent_credential_issue
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
    # A tool call whose arguments do not match *that tool's* input schema (held in the
    # registry, not in the OpenAPI document) is refused 400 `invalid_arguments`, with its audit
    # row, although the request matches the generic ToolCallRequest: for this one operation 400
    # is an expected answer to schema-valid data. Every other operation keeps the strict list.
    # A request body over the size limit is refused 413 before it is parsed (a generated
    # negative body can be that long): a rejection like the others.
    config = SchemathesisConfig.from_dict(
        {
            "checks": {
                "negative_data_rejection": {
                    "expected-statuses": [
                        "400", "401", "403", "404", "405", "406", "409", "413", "415", "422",
                        "428", "429", "5XX",
                    ]
                }
            },
            "operations": [
                {
                    "include-path": "/api/v1/tool-calls/",
                    "include-method": "POST",
                    "checks": {
                        "positive_data_acceptance": {
                            "expected-statuses": [
                                "2XX", "3XX", "400", "401", "403", "404", "409", "429", "5XX",
                            ]
                        }
                    },
                },
                # A hook's definition is checked beyond its shape (the tools its agent may call,
                # a valid cron expression and condition, a name not taken): 400 and 409 are
                # answers to schema-valid proposals too.
                {
                    "include-path": "/api/v1/hooks/",
                    "include-method": "POST",
                    "checks": {
                        "positive_data_acceptance": {
                            "expected-statuses": ["2XX", "400", "401", "409", "429", "5XX"]
                        }
                    },
                },
            ]
        }
    )  # fmt: skip
    # Tests run tasks in-process (eager): the first observation would load the embedding model
    # inside a request (~10 s from a cold disk), past the client's timeout. Load it first; this
    # test is about conformance, not a process's first second.
    from brainframe.embeddings.indexer import get_indexer

    get_indexer().embed(["warm"])
    loaded = schemathesis.openapi.from_url(f"{live_server_url}/api/schema/", config=config)
    # Valid and invalid data both. No NUL characters: the API refuses them anywhere (PostgreSQL
    # text cannot hold them; tests/broker/api/test_hostile_input.py), which a JSON Schema cannot say
    # of free-form objects such as tool arguments.
    loaded.config.generation.update(modes=list(GenerationMode), allow_x00=False)
    return loaded


@pytest.fixture
def henry() -> RabsHmac:
    seed_brainframe()
    # Discovery embeds every tool's text on its first search (seconds on two cores, past the
    # client's timeout): index them first, for the same reason as the model's warm-up above.
    from brainframe.services.memory.discovery import discovery_index

    discovery_index()
    return RabsHmac("henry", agent_credential_issue(agent=Agent.objects.get(agent_id="henry")))


# The reviewer API is for signed-in people (session + CSRF), not agents: tested in test_approvals.
# Deliverables are multipart file uploads, which the generator sends as plain form fields:
# covered by tests/broker/api/test_inbox.py. Yielding the turn sleeps until traffic (up to 30 s a
# request, by design): covered by tests/broker/channels/test_loop.py.
SKIPPED = "review|deliverables|loop/yield"
schema = schemathesis.pytest.from_fixture("api_schema").exclude(path_regex=SKIPPED)


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_api_conforms(case: Any, henry: RabsHmac, live_server_url: str) -> None:
    # ignored_auth replays the case with broken credentials through the same signer, which
    # would sign them again; forged, tampered and replayed signatures are covered by
    # bench/forgery.py and tests/broker/api/test_auth.py.
    case.call_and_validate(
        base_url=live_server_url,
        auth=None if _unsigned(case) else henry,
        excluded_checks=[ignored_auth],
    )


def _unsigned(case: Any) -> bool:
    """Whether this case is one that leaves the Authorization header out (else: sign it)."""
    return "Authorization" in get_exclude_headers(case) or (
        case.meta is not None
        and (headers := case.meta.components.get(ParameterLocation.HEADER)) is not None
        and headers.mode.is_negative
        and "Authorization" not in (case.headers or {})
    )


STATEFUL_EXAMPLES = int(os.environ.get("SCHEMATHESIS_STATEFUL_EXAMPLES", "10"))


def test_api_conforms_statefully(api_schema: Any, henry: RabsHmac, live_server_url: str) -> None:
    """Sequences of calls that follow the schema's links (call → poll it; list tasks → claim →
    progress / complete / fail / context) with identifiers from real answers, signed as Henry."""
    from brainframe.models import AgentTask, ApprovalRequest, Tool

    for n in range(3):  # tasks to list and claim
        AgentTask.objects.create(agent_id="henry", title=f"stateful task {n}", payload={})
    machine = api_schema.exclude(path_regex=SKIPPED).as_state_machine()
    # What a run changes and the next must find as it was: Henry's level (a denied call demotes
    # him), the tools' levels, the open approvals.
    agent_state = Agent.objects.filter(agent_id="henry").values(
        "monitoring_level", "status", "trust_level"
    )[0]
    tool_levels = dict(Tool.objects.values_list("tool_id", "monitoring_level"))

    class Signed(machine):  # type: ignore[misc,valid-type]
        def setup(self) -> None:
            # Every example starts from the same inbox: what the last one claimed, completed
            # or failed is open again (hypothesis replays examples and needs the same answers).
            Agent.objects.filter(agent_id="henry").update(**agent_state)
            for tool_id, level in tool_levels.items():
                Tool.objects.filter(tool_id=tool_id).update(monitoring_level=level)
            ApprovalRequest.objects.filter(status__in=["pending", "escalated"]).update(
                status="expired"
            )
            AgentTask.objects.filter(agent_id="henry").update(
                status="todo",
                result=None,
                failure_reason="",
                progress=0,
                started_at=None,
                completed_at=None,
            )

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"base_url": live_server_url, "auth": None if _unsigned(case) else henry}

        def validate_response(
            self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any
        ) -> None:
            case.validate_response(
                response,
                additional_checks=additional_checks,
                excluded_checks=[ignored_auth],
                transport_kwargs=kwargs,
            )

    Signed.run(
        settings=settings(
            max_examples=STATEFUL_EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            stateful_step_count=6,
        )
    )
