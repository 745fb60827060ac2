"""A daphne shared by the modules that drive the MCP face with outside clients."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings

from rabs.devstack import free_port, start_daphne, wait_until_up
from rabs.embedded import database_url

#: The MCP face's holds in that daphne: without a progressToken (the default), and with one.
HOLD = 3.0
PROGRESS_HOLD = 8.0


@pytest.fixture(scope="session")
def mcp_url(django_db_setup: Any, django_db_blocker: Any) -> Iterator[str]:
    db = settings.DATABASES["default"]
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "rabs.settings.test",
        "DATABASE_URL": database_url(db),
        "REDIS_URL": settings.REDIS.cache,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "RABS_MCP_HOLD_SECONDS": str(HOLD),
        "RABS_MCP_APPROVAL_WAIT_SECONDS": str(PROGRESS_HOLD),
        "RABS_MCP_PROGRESS_SECONDS": "1",
    }
    process = start_daphne(env, port)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
