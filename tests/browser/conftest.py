"""Browser tests: a real daphne (HTTP + websockets) on the test database, driven by Playwright
in Debian's chromium. Everything runs on this machine; nothing is fetched from outside."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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

    def opener(
        user: Any, path: str, *, width: int = 1280, height: int = 900, before: Any = None
    ) -> Any:
        """``before(page)`` runs before the page is loaded (to route its websocket, say)."""
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
        if before is not None:
            before(page)
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


DOCS_IMG = ROOT / "docs" / "img"


def docs_screenshot(page: Any, name: str) -> Path:
    """What the page shows (its viewport) as a picture for the docs: into docs/img/ when
    ``RABS_DOCS_SCREENSHOTS=1`` (then ``pngquant`` them before committing, docs/board.md), else
    into test-artifacts/docs-img/."""
    folder = DOCS_IMG if os.environ.get("RABS_DOCS_SCREENSHOTS") == "1" else ARTIFACTS / "docs-img"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path))
    return path
