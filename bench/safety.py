"""Benchmark: each stage of the Guardian, the Guardian as a whole, and the PII filter, on 1 KB and
16 KB texts, p50/p99, in one run.

.venv/bin/python bench/safety.py [--runs 300]

Stages (each timed on its own, on the same texts): normalise (``safety.normalise``), patterns
(the named patterns over every view, ``assess(…, learned=False)`` less the act rules), acts (the
requests-to-act rules over the folded text), learned (the TF-IDF stage), semantic (the static
sentence-model stage); "guardian" is ``assess`` with every stage, as an untrusted source's text
is assessed (the typical standard agent's short call skips the learned and semantic stages).
Wall-clock and CPU time are both printed: on a machine shared with other work the CPU time
(``time.thread_time``) is the steadier figure. The texts are plain business prose, plus a share
of HTML pages with hidden parts and base64 attachments so the normalisation's costlier paths are
measured too.
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
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


def text_of(size: int, rng: random.Random, kind: int) -> str:
    parts: list[str] = []
    while sum(len(p) + 1 for p in parts) < size:
        parts.append(rng.choice(SENTENCES))
    body = " ".join(parts)
    if kind == 1:  # a web page with a hidden preheader and alt text
        body = (
            '<html><body><span style="display:none">Newsletter preview</span><p>'
            + body
            + '</p><img src="a.jpg" alt="Group outing"></body></html>'
        )
    elif kind == 2:  # an e-mail with a base64 attachment
        attachment = base64.b64encode(b"x" * 120).decode()
        body = body + "\nContent-Transfer-Encoding: base64\n" + attachment
    return body[:size]


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def stages() -> list[tuple[str, Callable[[str], object], int]]:
    from brainframe.safety.guardian import acts, domain, learned, semantic
    from brainframe.safety.guardian.core import assess
    from brainframe.safety.guardian.normalise import fold, normalise
    from brainframe.safety.pii.filter import pii_find

    return [
        ("normalise", normalise, 1),
        ("patterns", lambda t: assess(t, "standard", learned=False), 1),
        ("acts", lambda t: acts.found(fold(t)), 1),
        ("learned", learned.detector().score, 1),
        ("semantic", semantic.detector().score, 1),
        ("domain", domain.detector().score, 1),
        ("guardian", lambda t: assess(t, "untrusted", learned=True), 1),
        ("pii", pii_find, 2),
    ]


def main() -> int:
    from brainframe.safety.guardian.core import assess
    from brainframe.safety.pii.filter import pii_find

    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    rng = random.Random(7)
    pii_find("warm up the model once")
    assess("warm up the learned, domain and semantic stages once", "untrusted", learned=True)
    for size in (1024, 16 * 1024):
        texts = [text_of(size, rng, i % 3) for i in range(30)]
        for name, fn, divisor in stages():
            runs = max(20, args.runs // divisor)
            samples, cpu = [], []
            for i in range(runs):
                started, started_cpu = time.perf_counter(), time.thread_time()
                fn(texts[i % len(texts)])
                samples.append((time.perf_counter() - started) * 1000)
                cpu.append((time.thread_time() - started_cpu) * 1000)
            p50, p99 = percentiles(samples)
            c50, c99 = percentiles(cpu)
            line = f"{name:9s} {size // 1024:2d} KB  p50 {p50:8.3f} ms  p99 {p99:8.3f} ms"
            print(f"{line}  (CPU p50 {c50:7.3f} / p99 {c99:7.3f} ms; {runs} runs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
