"""What the HTTP benchmarks share: the whole stack (``python -m rabs.stack.devstack``: daphne
processes behind one port, a Celery worker, beat) on the current (throwaway) database, with
agents that may call ``roster.shift.read`` as fast as they like; signed calls offered at a rate
(open loop); percentiles."""

from __future__ import annotations

import json
import os
import secrets as tokens
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAYLOAD = json.dumps(
    {
        "tool_id": "roster.shift.read",
        "reason": "load test",
        "arguments": {"date_from": "2026-03-02", "date_to": "2026-03-02"},
    }
).encode()


def signed(agent_id: str, secret: str) -> dict[str, str]:
    """Headers of a signed ``POST /api/v1/tool-calls/`` with ``PAYLOAD``."""
    from agents_vm.client.signing import sign

    ts, nonce = str(int(time.time())), tokens.token_hex(16)
    sig = sign(secret.encode(), "POST", "/api/v1/tool-calls/", ts, nonce, PAYLOAD)
    return {
        "Authorization": f"RABS-HMAC agent={agent_id},ts={ts},nonce={nonce},sig={sig}",
        "Content-Type": "application/json",
    }


def wait_for_answer(url: str, timeout: float = 120) -> None:
    """Until ``url`` answers at all (a server started beside the benchmark)."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.5)
    raise RuntimeError(f"{url} did not answer within {timeout:g}s")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


@dataclass(frozen=True)
class Stack:
    url: str
    secrets: dict[str, str]  # agent id → credential secret


@contextmanager
def running_stack(agents: list[str], *, web: int = 2, name: str = "stack") -> Iterator[Stack]:
    from django.conf import settings

    from brainframe.models import Agent, Tool
    from brainframe.services.access.credentials import agent_credential_issue
    from rabs.stack.devstack import free_port, launched
    from rabs.stack.embedded import database_url

    Tool.objects.filter(tool_id="roster.shift.read").update(
        execution_mode="auto", agent_access=agents
    )
    secrets = {}
    for agent_id in agents:
        agent, _ = Agent.objects.get_or_create(
            agent_id=agent_id, defaults={"name": agent_id, "type": "type_2_sandboxed"}
        )
        secrets[agent_id] = agent_credential_issue(agent=agent)
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "rabs.settings.base",
        "DATABASE_URL": database_url(settings.DATABASES["default"]),
        "REDIS_URL": settings.REDIS.cache,
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,  # agent secrets are encrypted with it
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "RABS_PORT": str(port),
        "RABS_WEB_PROCESSES": str(web),
        "RABS_WORKER_PROCESSES": "1",
        "RABS_AGENT_RATE": "10000000/min",
        # Counted as in production, never reached: a load is not a loop without input.
        "RABS_LOOP_LATCH_CALLS": "100000000",
        "RABS_INDEX_ON_COMMIT": "false",
        "RABS_BENCH_ENDPOINTS": "true",
        "RABS_ADMIN_CREDENTIALS_FILE": str(ROOT / "var" / "bench" / f"{name}-admin.json"),
        "LOG_LEVEL": "WARNING",
    }
    log = ROOT / "var" / "bench" / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with launched(env, log=log) as url:
        yield Stack(url=url, secrets=secrets)
