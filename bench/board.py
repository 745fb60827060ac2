"""Benchmark: a tool call → visible on the board in a real browser, at an offered rate.

    .venv/bin/python bench/board.py [--rate 100] [--seconds 20] [--web 2]

Starts the whole stack (``--web`` daphne processes behind one port, a worker, beat) on a
throwaway database (``rabs_board``), opens the board for agent ``board-0`` in Debian's chromium
(headless, logged in as a reviewer) and records, in the page, when each call's row appears in
the action log (a MutationObserver, ``Date.now()``). Calls are then offered over HTTP at
``--rate``/s for ``--seconds`` (open loop: each sent at its time, signed, ``roster.shift.read``
run inline), and each call's latency is its row's appearance minus its scheduled send.
Prints p50/p95/p99 and how many rows never appeared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's loop, ORM set-up
DB = "rabs_board"
AGENT = "board-0"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
OBSERVE = """() => {
  window.__seen = {};
  const log = document.querySelector('#action-log');
  new MutationObserver((records) => {
    const now = Date.now();
    for (const record of records) {
      for (const node of record.addedNodes) {
        if (node.id && node.id.startsWith('call-') && !(node.id in window.__seen)) {
          window.__seen[node.id] = now;
        }
      }
    }
  }).observe(log, {childList: true, subtree: true});
}"""


ANSWERED: list[float] = []  # each call's HTTP answer time (ms), to tell the broker from the board


def _offer(url: str, secret: str, *, rate: float, seconds: float) -> dict[str, float]:
    """Calls offered at ``rate`` by the lean client (``bench/common/http.py``, signed beforehand: a
    general-purpose client took a core of the two at 100/s): call id → when it was sent
    (epoch ms)."""
    from bench.common.http import open_loop, signed_calls

    requests = list(signed_calls(url, {AGENT: secret}, int(rate * seconds)))
    # Playwright's sync API keeps an event loop on this thread; the sender gets its own. The
    # page records arrivals by itself (its observer runs in the browser).
    with ThreadPoolExecutor(1) as pool:
        answers = pool.submit(lambda: asyncio.run(open_loop(url, requests, rate=rate))).result()
    ANSWERED[:] = [answer.ms for answer in answers if answer.status]
    sent = {
        json.loads(answer.body)["call_id"]: answer.sent_ms
        for answer in answers
        if answer.status in (200, 202)
    }
    if len(sent) < len(answers):
        print(f"{len(answers) - len(sent)} call(s) failed to send")
    return sent


def main() -> int:
    import django

    django.setup()
    import logging

    from django.conf import settings
    from django.contrib.auth.models import Group, User
    from django.test import Client
    from playwright.sync_api import sync_playwright

    from bench.common.db import throwaway_database
    from bench.common.stack import percentile, running_stack

    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=100)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--web", type=int, default=2)
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install -y chromium")

    with throwaway_database(DB), running_stack([AGENT], web=args.web, name="board") as stack:
        reviewer = User.objects.create_user("board-reviewer")
        reviewer.groups.add(Group.objects.get(name="reviewers"))
        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
        client = Client()
        client.force_login(reviewer)  # the session is in the stack's own session store
        cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            context = browser.new_context()
            context.add_cookies(
                [{"name": settings.SESSION_COOKIE_NAME, "value": cookie, "url": stack.url}]
            )
            page = context.new_page()
            page.goto(f"{stack.url}/board/?agent={AGENT}")
            page.wait_for_selector("#live-state[data-ok='1']", timeout=15000)
            page.evaluate(OBSERVE)
            # Warm up: a few calls before measuring.
            _offer(stack.url, stack.secrets[AGENT], rate=10, seconds=1)
            page.wait_for_timeout(1000)
            page.evaluate("() => { window.__seen = {}; }")
            sent = _offer(stack.url, stack.secrets[AGENT], rate=args.rate, seconds=args.seconds)
            page.wait_for_timeout(3000)
            seen: dict[str, Any] = page.evaluate("() => window.__seen")
            browser.close()
    latencies = [seen[f"call-{cid}"] - at for cid, at in sent.items() if f"call-{cid}" in seen]
    missing = len(sent) - len(latencies)
    if not latencies:
        raise SystemExit("no call appeared on the board")
    print(
        f"board, {args.rate:g} calls/s offered for {args.seconds:g} s on {args.web} daphne "
        f"process(es): {len(latencies)} of {len(sent)} calls appeared ({missing} missing); "
        f"sent → visible p50 {statistics.median(latencies):.0f} ms, "
        f"p95 {percentile(latencies, 95):.0f} ms, p99 {percentile(latencies, 99):.0f} ms "
        f"(the HTTP answers: p50 {statistics.median(ANSWERED):.0f} ms, "
        f"p95 {percentile(ANSWERED, 95):.0f} ms)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
