"""Test settings: the same engines as everywhere, only faster password hashing and mail kept."""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path

from .base import *  # noqa: F403
from .base import CACHES, CHANNEL_LAYERS, DATABASES

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Mail stays in memory, unless a test points a worker process it starts at a local SMTP server.
EMAIL_BACKEND = os.environ.get(
    "RABS_TEST_EMAIL_BACKEND", "django.core.mail.backends.locmem.EmailBackend"
)
# Each test process gets its own pool; keep it small so parallel workers stay under max_connections.
DATABASES["default"]["OPTIONS"]["pool"] = {"min_size": 1, "max_size": 4, "timeout": 10.0}

# Same Redis, but a namespace of this test run's own: nonces and cache entries from other runs
# (or from a `make run` sharing the embedded server) cannot leak in.
# A server started by the tests (browser tests) shares the run's namespace via RABS_TEST_RUN_ID.
_RUN = os.environ.get("RABS_TEST_RUN_ID") or uuid.uuid4().hex[:12]
os.environ["RABS_TEST_RUN_ID"] = _RUN
# And one of each parallel test process's own (its servers inherit PYTEST_XDIST_WORKER): one
# process's tests must not count, or reset, the rate limits of another's agents meanwhile.
_RUN_WORKER = f"{_RUN}-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
CACHES["default"]["KEY_PREFIX"] = f"rabs-test-{_RUN_WORKER}"
CHANNEL_LAYERS["default"]["CONFIG"]["prefix"] = f"rabs-test-{_RUN_WORKER}:channels"  # type: ignore[index]
# The checkpoint key of this test run (its servers share it), never the one under var/.
_KEYS = Path(tempfile.gettempdir()) / f"rabs-test-{_RUN}"
RABS_CHECKPOINT_KEY_FILE = _KEYS / "checkpoint-key.pem"
RABS_CHECKPOINT_KEYS_DIR = _KEYS / "checkpoint-keys"

# A worker started by a test consumes this test process's queue only (parallel test processes
# each have a database of their own: a task from another's would find nothing).
CELERY_TASK_DEFAULT_QUEUE = f"rabs-test-{_RUN_WORKER}"
# Celery tasks run in-process in tests (the Celery worker itself is exercised by its own tests).
# (The multi-process test starts real workers: RABS_CELERY_EAGER=false in its stack.)
CELERY_TASK_ALWAYS_EAGER = os.environ.get("RABS_CELERY_EAGER", "true") != "false"
CELERY_TASK_EAGER_PROPAGATES = True
# With eager Celery, indexing on commit would load the embedding model inside every request of
# the suite; the indexing tests turn it on where they exercise it.
RABS_INDEX_ON_COMMIT = False

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
