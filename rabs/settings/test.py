"""Test settings: the same engines as everywhere, only faster password hashing and mail kept."""

from __future__ import annotations

from .base import *  # noqa: F403
from .base import DATABASES

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# Each test process gets its own pool; keep it small so parallel workers stay under max_connections.
DATABASES["default"]["OPTIONS"]["pool"] = {"min_size": 1, "max_size": 4, "timeout": 10.0}
