"""The production settings (``rabs.settings.production``), in a process of their own: Django's
deployment checks pass, the staff side redirects to https, and the agents' broker API — plain
HTTP on a loopback-only port behind the proxy — is answered, not redirected, as is /healthz."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from rabs.stack.embedded import database_url

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, django
django.setup()
from django.test import Client
client = Client()
answers = {}
for method, path in [("post", "/api/v1/tool-calls/"), ("get", "/api/v1/tasks/"),
                     ("get", "/api/v1/review/approvals/"), ("get", "/admin/login/"),
                     ("get", "/board/"), ("get", "/healthz/web"), ("get", "/healthz")]:
    answer = getattr(client, method)(path)
    answers[path] = [answer.status_code, answer.get("Location", "")]
print(json.dumps(answers))
"""


def _production_env() -> dict[str, str]:
    # Not what a deployment has: the browser tests set it in this process.
    inherited = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    return {
        **inherited,
        "DJANGO_SETTINGS_MODULE": "rabs.settings.production",
        "DJANGO_SECRET_KEY": "a-production-like-secret-key-" + "x" * 40,
        "DJANGO_ALLOWED_HOSTS": "testserver,rabs.example.org",
        "DATABASE_URL": database_url(settings.DATABASES["default"]),
        "REDIS_URL": settings.REDIS.cache,
    }


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    """``python *args`` in the checkout under the production settings."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=_production_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_deployment_checks_pass() -> None:
    done = _run("manage.py", "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_staff_side_redirects_to_https_and_the_agent_api_does_not() -> None:
    done = _run("-c", PROBE)
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    # Agent endpoints answer (401: no signature), over plain HTTP.
    assert answers["/api/v1/tool-calls/"][0] == 401
    assert answers["/api/v1/tasks/"][0] == 401
    # Health checks from inside the network, too.
    assert answers["/healthz/web"][0] == 200
    assert answers["/healthz"][0] == 503  # answered over HTTP (no worker runs in this test)
    # The staff side, the reviewer API included, moves to https.
    for path in ("/api/v1/review/approvals/", "/admin/login/", "/board/"):
        assert answers[path] == [301, f"https://testserver{path}"], path
