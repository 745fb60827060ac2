"""Reliability check: N forged, tampered and replayed signed requests; prints how many got in.

    .venv/bin/python bench/forgery.py [--requests 10000]

Runs against the app in-process (Django's test client, real database and Redis) inside a
transaction that is rolled back, with one real agent key. A quarter of the requests each: a
signature from the wrong key, a body changed after signing, a replayed nonce, a stale
timestamp. The expected answer is 0 accepted.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")


class Rollback(Exception):
    pass


def main() -> int:
    import django

    django.setup()
    import logging

    logging.getLogger("django.request").setLevel(logging.ERROR)  # 10,000 expected 401s
    from django.db import transaction
    from django.test import Client

    from agents_vm.client.signing import sign
    from brainframe.models import Agent
    from brainframe.services.access.credentials import agent_credential_issue

    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=10_000)
    args = parser.parse_args()
    outcomes: Counter[str] = Counter()
    accepted = 0
    started = time.perf_counter()
    try:
        with transaction.atomic():
            agent, _ = Agent.objects.get_or_create(
                agent_id="forgery-bench",
                defaults={"name": "Forgery bench", "type": "type_2_sandboxed"},
            )
            secret = agent_credential_issue(agent=agent).encode()
            client = Client(HTTP_HOST="127.0.0.1")
            path = "/api/v1/tool-calls/"
            body = json.dumps(
                {
                    "tool_id": "roster.shift.read",
                    "reason": "x",
                    "arguments": {"date_from": "2026-03-02", "date_to": "2026-03-02"},
                }
            ).encode()
            replay_nonce = secrets.token_hex(16)
            replay_ts = str(int(time.time()))
            for i in range(args.requests):
                kind = ("wrong_key", "tampered_body", "replayed_nonce", "stale_timestamp")[i % 4]
                ts, nonce, payload, key = str(int(time.time())), secrets.token_hex(16), body, secret
                if kind == "wrong_key":
                    key = secrets.token_hex(32).encode()
                elif kind == "replayed_nonce":
                    ts, nonce = replay_ts, replay_nonce
                elif kind == "stale_timestamp":
                    ts = str(int(time.time()) - 301 - i % 1000)
                sig = sign(key, "POST", path, ts, nonce, payload)
                if kind == "tampered_body":
                    payload = payload.replace(b"roster.shift.read", b"finance.billing.adjust")
                header = f"RABS-HMAC agent=forgery-bench,ts={ts},nonce={nonce},sig={sig}"
                response = client.generic(
                    "POST",
                    path,
                    payload,
                    content_type="application/json",
                    HTTP_AUTHORIZATION=header,
                )
                code = response.json().get("code", response.status_code)
                # The very first replay-nonce request is a legitimate one: it is the original.
                if kind == "replayed_nonce" and i == 2:
                    outcomes["original (the one replayed later)"] += 1
                    continue
                outcomes[f"{kind} → {response.status_code} {code}"] += 1
                accepted += response.status_code != 401  # got past authentication
            raise Rollback
    except Rollback:
        pass
    elapsed = time.perf_counter() - started
    for line, count in sorted(outcomes.items()):
        print(f"{count:6d}  {line}")
    print(f"{args.requests - 1:,} hostile requests in {elapsed:.1f} s: {accepted} accepted")
    return 1 if accepted else 0


if __name__ == "__main__":
    raise SystemExit(main())
