"""Measure the bucket checker on the labelled RABS-domain texts.

    .venv/bin/python eval/bucket_eval.py [--labelled PATH] [--keywords-only]

Uses the seeded bucket definitions (scopes, keyword rules, exemplars from
``brainframe/bucket_hints.py``) and the offline embedding model; no database needed. Prints
top-1 and top-3 accuracy, the accuracy of the answer's first bucket per bucket, and the misses.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.typecheck")


def main() -> int:
    import django

    django.setup()
    from brainframe.embeddings.indexer import IndexerUnavailable, get_indexer
    from brainframe.services.memory.bucket_checker import (
        bucket_classify,
        default_definitions,
        rules_from,
    )

    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--labelled", default=str(ROOT / "tests/fixtures/bucket_checker_labelled.jsonl")
    )
    parser.add_argument("--keywords-only", action="store_true")
    args = parser.parse_args()

    rows = [json.loads(line) for line in Path(args.labelled).read_text().splitlines() if line]
    rules = rules_from(default_definitions())

    class NoModel:
        name = "none"

        def embed(self, texts: list[str]) -> list[list[float]]:
            raise IndexerUnavailable("--keywords-only")

    indexer = NoModel() if args.keywords_only else get_indexer()
    started = time.perf_counter()
    top1 = top3 = 0
    per_bucket: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    misses = []
    method = ""
    for row in rows:
        result = bucket_classify(row["text"], indexer=indexer, rules=rules)  # type: ignore[arg-type]
        method = result.method
        totals[row["bucket"]] += 1
        if result.bucket == row["bucket"]:
            top1 += 1
            per_bucket[row["bucket"]] += 1
        else:
            misses.append((row["id"], result.bucket, round(result.confidence, 2)))
        top3 += row["bucket"] in result.ranking[:3]
    elapsed = time.perf_counter() - started
    n = len(rows)
    print(f"labelled texts: {n} in {len(totals)} buckets; method: {method}")
    print(f"top-1 accuracy: {top1 / n:.1%} ({top1}/{n})")
    print(f"top-3 accuracy: {top3 / n:.1%} ({top3}/{n})")
    print(f"time: {elapsed:.1f} s (including the model load and prototypes)")
    print("per bucket (top-1):")
    for bucket in sorted(totals):
        print(f"  {bucket:26} {per_bucket[bucket]}/{totals[bucket]}")
    print("misses (id -> predicted, confidence):")
    for miss in misses:
        print(f"  {miss[0]} -> {miss[1]} ({miss[2]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
