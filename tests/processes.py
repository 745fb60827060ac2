"""The environment of a process a test starts against the test database and Redis (a daphne, a
Celery worker, the whole stack): this process's own, with the test settings and services."""

from __future__ import annotations

import os

from django.conf import settings

from rabs.stack.embedded import database_url


def process_env(**extra: str) -> dict[str, str]:
    """``os.environ`` with the test settings, the test database and Redis, and local hosts
    allowed; ``extra`` added or overriding."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "rabs.settings.test",
        "DATABASE_URL": database_url(settings.DATABASES["default"]),
        "REDIS_URL": settings.REDIS.cache,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        **extra,
    }
