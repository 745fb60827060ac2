"""Settings for mypy's django-stubs plugin: loads the app registry without starting services.

mypy ends with ``os._exit`` (no atexit), so it must never take a lease on embedded servers.
"""

from __future__ import annotations

import os

os.environ.setdefault("DATABASE_URL", "postgres://typecheck@localhost/typecheck")
os.environ.setdefault("REDIS_URL", "redis://localhost:6379/0")

from .base import *  # noqa: F403
