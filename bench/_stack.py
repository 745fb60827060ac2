"""The whole stack (``python -m rabs.devstack``: daphne processes behind one port, a Celery
worker, beat) on the current (throwaway) database, with agents that may call
``roster.shift.read`` as fast as they like. Shared by the HTTP benchmarks."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Stack:
    url: str
    secrets: dict[str, str]  # agent id → credential secret


@contextmanager
def running_stack(agents: list[str], *, web: int = 2, name: str = "stack") -> Iterator[Stack]:
    from django.conf import settings

    from brainframe.models import Agent, Tool
    from brainframe.services.credentials import agent_credential_issue
    from rabs.devstack import launched
    from rabs.embedded import database_url

    Tool.objects.filter(tool_id="roster.shift.read").update(
        execution_mode="auto", agent_access=agents
    )
    secrets = {}
    for agent_id in agents:
        agent, _ = Agent.objects.get_or_create(
            agent_id=agent_id, defaults={"name": agent_id, "type": "type_2_sandboxed"}
        )
        secrets[agent_id] = agent_credential_issue(agent=agent)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
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
        "RABS_INDEX_ON_COMMIT": "false",
        "RABS_BENCH_ENDPOINTS": "true",
        "RABS_ADMIN_CREDENTIALS_FILE": str(ROOT / "var" / "bench" / f"{name}-admin.json"),
        "LOG_LEVEL": "WARNING",
    }
    log = ROOT / "var" / "bench" / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with launched(env, log=log) as url:
        yield Stack(url=url, secrets=secrets)
