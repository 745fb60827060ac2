"""Browser tests: a real daphne (HTTP + websockets) on the test database, driven by Playwright
in Debian's chromium. Everything runs on this machine; nothing is fetched from outside."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
# Playwright's sync API runs an event loop in the test thread; the ORM calls the tests make
# around it are ordinary blocking ones.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def live_server_url(django_db_setup: Any, django_db_blocker: Any) -> Iterator[str]:
    """daphne serving the app against the test database, for the whole session."""
    db = settings.DATABASES["default"]
    port = _free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "rabs.settings.test",
        "DATABASE_URL": f"postgres://{db['USER']}@/{db['NAME']}?host={db['HOST']}",
        "REDIS_URL": settings.REDIS.cache,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_DEBUG": "true",
    }
    log = ARTIFACTS / "daphne.log"
    ARTIFACTS.mkdir(exist_ok=True)
    with open(log, "w") as out:
        server = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "daphne"),
                "-b",
                "127.0.0.1",
                "-p",
                str(port),
                "rabs.asgi:application",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"{url}/api/schema/", timeout=1)
            break
        except httpx.HTTPError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"daphne did not start; see {log}") from None
            time.sleep(0.2)
    yield url
    server.terminate()
    server.wait(timeout=10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Module-scoped: Playwright's event loop must be gone before async tests run."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture
def open_page(browser: Any, live_server_url: str) -> Iterator[Any]:
    """open_page(user, path) → a logged-in page; closed after the test."""
    from django.test import Client

    contexts: list[Any] = []

    def opener(user: Any, path: str, *, width: int = 1280, height: int = 900) -> Any:
        client = Client()
        client.force_login(user)
        context = browser.new_context(viewport={"width": width, "height": height})
        context.add_cookies(
            [
                {
                    "name": settings.SESSION_COOKIE_NAME,
                    "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                    "url": live_server_url,
                }
            ]
        )
        contexts.append(context)
        page = context.new_page()
        page.goto(f"{live_server_url}{path}")
        page.wait_for_selector("#live-state[data-ok='1']", timeout=10000)
        return page

    yield opener
    for context in contexts:
        context.close()


def screenshot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
