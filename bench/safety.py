"""Benchmark: Guardian (patterns alone, and both stages) and the PII filter on 1 KB and 16 KB
texts, p50/p99, in one run.

.venv/bin/python bench/safety.py [--runs 300]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.typecheck")

SENTENCES = [
    "Henry checked the roster for Monday and found two open community access shifts.",
    "Please confirm the Hiace booking for the Saturday social group outing at 9:30.",
    "The carer asked whether transport can collect Jo from the day program at 3pm.",
    "Progress notes for the quarter are due to the coordinator by Friday afternoon.",
    "Call Sam Carter on 0412 345 678 about the respite booking next week.",
    "The invoice for supports delivered in March is attached for review.",
]


def text_of(size: int, rng: random.Random) -> str:
    parts: list[str] = []
    while sum(len(p) + 1 for p in parts) < size:
        parts.append(rng.choice(SENTENCES))
    return " ".join(parts)[:size]


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def main() -> int:
    from brainframe.safety.guardian import assess
    from brainframe.safety.pii import pii_find

    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    rng = random.Random(7)
    pii_find("warm up the model once")
    assess("warm up the learned stage once", "untrusted", learned=True)
    for size in (1024, 16 * 1024):
        texts = [text_of(size, rng) for _ in range(20)]
        for name, fn, runs in (
            ("patterns", lambda t: assess(t, "untrusted", learned=False), args.runs),
            ("both", lambda t: assess(t, "untrusted", learned=True), args.runs),
            ("pii", pii_find, max(20, args.runs // 10)),
        ):
            samples = []
            for i in range(runs):
                started = time.perf_counter()
                fn(texts[i % len(texts)])
                samples.append((time.perf_counter() - started) * 1000)
            p50, p99 = percentiles(samples)
            line = f"{name:9s} {size // 1024:2d} KB  p50 {p50:8.3f} ms  p99 {p99:8.3f} ms"
            print(f"{line}  ({runs} runs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
