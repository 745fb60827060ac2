"""Benchmark: what the model gateway adds over calling the upstream directly, beside LiteLLM's
proxy on the same upstream, in the same run.

    .venv/bin/python bench/llm_gateway.py [--requests 300] [--rounds 3]

One local OpenAI-compatible upstream (``tests/llm_server.py``: ``http.server`` with Nagle off,
an answer in well under a millisecond). Three ways to it, each through one kept-alive HTTP/1.1
connection from the same client (``httpx``), one request at a time, interleaved request by
request (direct, ours, LiteLLM, direct, …) so all three see the same machine:

- **direct**: the upstream itself;
- **ours**: ``/llm/v1`` of the whole stack (``python -m rabs.stack.devstack``, one daphne process,
  on a throwaway database): key, model access, budget, the per-minute limits in Redis, the record;
  the upstream marked internal (no PII redaction: an external upstream adds the PII filter's
  cost, see docs/performance.md);
- **LiteLLM**: ``litellm[proxy]==1.108.7`` (installed into ``var/bench/litellm-venv`` on first
  use, never into the project's environment), master-key auth, ``LITELLM_LOCAL_MODEL_COST_MAP``;
  its virtual keys and budgets need a Prisma engine that cannot be downloaded here, so it runs
  without them while ours run with theirs on.

Figures per round, in ms: non-streaming request latency, and for ``stream: true`` the time to
the first content chunk; p50 and p99 of each way and the added p50/p99 of each gateway (its
figure minus direct's).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")
DB = "rabs_llm_gateway"
LITELLM_VENV = ROOT / "var" / "bench" / "litellm-venv"
LITELLM = "litellm[proxy]==1.108.7"
MODEL = "bench-model"
MASTER_KEY = "sk-bench-master-key"
BODY = {"model": MODEL, "messages": [{"role": "user", "content": "Say hello to the roster."}]}


def _ensure_litellm() -> Path:
    binary = LITELLM_VENV / "bin" / "litellm"
    if not binary.exists():
        print(f"installing {LITELLM} into {LITELLM_VENV} (benchmark only)")
        base = shutil.which("python3.11") or sys.executable
        subprocess.run([base, "-m", "venv", str(LITELLM_VENV)], check=True)
        subprocess.run([str(LITELLM_VENV / "bin" / "pip"), "install", "-q", LITELLM], check=True)
    return binary


@contextmanager
def litellm_proxy(binary: Path, upstream: str) -> Iterator[str]:
    from bench.common.stack import wait_for_answer  # bench/ is not on the path at import
    from rabs.stack.devstack import free_port

    work = ROOT / "var" / "bench" / "litellm"
    work.mkdir(parents=True, exist_ok=True)
    (work / "config.yaml").write_text(
        "model_list:\n"
        f"  - model_name: {MODEL}\n"
        "    litellm_params:\n"
        f"      model: openai/{MODEL}\n"
        f"      api_base: {upstream}\n"
        "      api_key: sk-upstream\n"
        "litellm_settings:\n"
        "  telemetry: false\n"
    )
    port = free_port()
    env = {
        **os.environ,
        "LITELLM_MASTER_KEY": MASTER_KEY,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_LOG": "ERROR",
    }
    env.pop("DATABASE_URL", None)
    log = (work / "litellm.log").open("w")
    process = subprocess.Popen(
        [str(binary), "--config", str(work / "config.yaml"), "--port", str(port),
         "--num_workers", "1"],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work,
    )  # fmt: skip
    try:
        wait_for_answer(f"http://127.0.0.1:{port}/health/liveliness", timeout=180)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def _ours(upstream: str) -> str:
    from decimal import Decimal

    from brainframe.models import Agent, LLMBudget
    from brainframe.services.llm.admission import llm_key_issue, llm_upstream_set

    llm_upstream_set(
        name="bench",
        base_url=upstream,
        served_models=[MODEL],
        api_key="sk-upstream",
        price_in=Decimal("0.15"),
        price_out=Decimal("0.60"),
        external=False,
    )
    agent, _ = Agent.objects.get_or_create(
        agent_id="llm-bench", defaults={"name": "llm-bench", "type": "type_2_sandboxed"}
    )
    LLMBudget.objects.update_or_create(
        agent=agent,
        defaults={
            "rpm_limit": 1_000_000,
            "tpm_limit": 1_000_000_000,
            "max_parallel_requests": 100,
            "max_budget": Decimal("1000000"),
            "budget_duration": "1d",
        },
    )
    return llm_key_issue(agent=agent)


def _plain(client: httpx.Client, url: str, key: str) -> float:
    started = time.perf_counter()
    response = client.post(url, json=BODY, headers={"Authorization": f"Bearer {key}"})
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    return elapsed * 1000


def _first_chunk(client: httpx.Client, url: str, key: str) -> float:
    started = time.perf_counter()
    first = 0.0
    body = {**BODY, "stream": True}
    with client.stream(
        "POST", url, json=body, headers={"Authorization": f"Bearer {key}"}
    ) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not first and '"content"' in line:
                first = (time.perf_counter() - started) * 1000
    return first


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    import django

    django.setup()
    import logging

    from bench.common.db import throwaway_database
    from bench.common.stack import running_stack
    from tests.llm_server import OpenAICompatibleServer

    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)
    binary = _ensure_litellm()
    upstream = OpenAICompatibleServer()
    upstream.chat_script = lambda messages, tools: {"content": "Hello to the whole roster."}
    with (
        upstream.running(),
        throwaway_database(DB),
        running_stack([], web=1, name="llm_gateway") as stack,
        litellm_proxy(binary, upstream.base_url) as litellm_url,
    ):
        key = _ours(upstream.base_url)
        ways: dict[str, tuple[str, str]] = {
            "direct": (f"{upstream.base_url}/chat/completions", "sk-upstream"),
            "ours": (f"{stack.url}/llm/v1/chat/completions", key),
            "litellm": (f"{litellm_url}/v1/chat/completions", MASTER_KEY),
        }
        clients = {name: httpx.Client(timeout=30) for name in ways}
        for _ in range(30):  # warm every path and connection
            for name, (url, secret) in ways.items():
                _plain(clients[name], url, secret)
                _first_chunk(clients[name], url, secret)
        print(f"{args.requests} requests per way per round, interleaved; ms")
        header = "round  kind     direct p50/p99   ours p50/p99   litellm p50/p99"
        print(f"{header}   added: ours p50/p99   litellm p50/p99")
        for round_ in range(1, args.rounds + 1):
            for kind, measure in (("plain", _plain), ("ttfc", _first_chunk)):
                seen: dict[str, list[float]] = {name: [] for name in ways}
                for _ in range(args.requests):
                    for name, (url, secret) in ways.items():
                        seen[name].append(measure(clients[name], url, secret))
                p: dict[str, tuple[float, float]] = {
                    n: (_pct(v, 0.5), _pct(v, 0.99)) for n, v in seen.items()
                }
                added = {
                    n: (p[n][0] - p["direct"][0], p[n][1] - p["direct"][1])
                    for n in ("ours", "litellm")
                }
                print(
                    f"{round_:>5}  {kind:<6}  {p['direct'][0]:6.1f}/{p['direct'][1]:6.1f}"
                    f"  {p['ours'][0]:6.1f}/{p['ours'][1]:6.1f}"
                    f"  {p['litellm'][0]:6.1f}/{p['litellm'][1]:6.1f}"
                    f"   {added['ours'][0]:6.1f}/{added['ours'][1]:6.1f}"
                    f"  {added['litellm'][0]:6.1f}/{added['litellm'][1]:6.1f}"
                )
        for client in clients.values():
            client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
