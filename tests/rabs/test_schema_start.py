"""A fresh web process answers its first schema requests, even several at once (a readiness
probe that timed out and asked again, or two clients just after a deploy).

drf-spectacular resolves each schema extension's target class on the first schema request,
without a lock: a second request's thread could find one half-resolved (``None``) and answer
500 (seen at a benchmark's start-up). A web process resolves them all when it starts, before it
takes a request; this checks it in a process that starts as daphne's does."""

from __future__ import annotations

import os
import subprocess
import sys

from django.conf import settings

from tests.conftest import ROOT

CHECK = """
import rabs.asgi
import drf_spectacular.openapi  # what the first schema request imports
from rabs.web.schema import EXTENSION_KINDS

every = [x for kind in EXTENSION_KINDS for x in kind._registry]
print(len(every), [x.__name__ for x in every if isinstance(x.target_class, str)])
"""


def test_a_web_process_resolves_the_schema_extensions_before_its_first_request() -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "rabs.settings.test",
        "REDIS_URL": settings.REDIS.cache,
    }
    done = subprocess.run(
        [sys.executable, "-c", CHECK], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120, check=True,
    )  # fmt: skip
    registered, left = done.stdout.strip().splitlines()[-1].split(" ", 1)
    assert int(registered) > 20  # drf-spectacular's own (contrib) and ours
    assert left == "[]", f"resolved only on a first request: {left}"
