"""Measure the outbound PII filter on presidio-research's synthetic set.

    .venv/bin/python eval/pii_eval.py [--part tune|report|rabs] [--corpus PATH]

tune = the first 500 texts, report = the other 1,000. A predicted span counts when it overlaps
a labelled span of the same type. Prints recall and precision per entity type.
rabs = hand-written RABS examples (eval/pii-rabs-examples.jsonl) of the types the synthetic set
does not label: Australian street addresses, dates of birth, bank details (BSB and account),
driver licence and passport numbers, e-mail addresses on any domain; with negatives (dates,
numbers, street names that are none of these).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.typecheck")

# The corpus's labels for what the filter detects.
LABELS = {
    "PERSON": "PERSON",
    "EMAIL_ADDRESS": "EMAIL_ADDRESS",
    "PHONE_NUMBER": "PHONE_NUMBER",
    "CREDIT_CARD": "CREDIT_CARD",
    "IBAN_CODE": "IBAN_CODE",
    "IP_ADDRESS": "IP_ADDRESS",
}


def main() -> int:
    from brainframe.safety.pii.filter import pii_find

    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", default=str(ROOT / "eval/corpora/presidio-synth-v2.json"))
    parser.add_argument("--part", choices=["tune", "report", "rabs"], default="report")
    args = parser.parse_args()
    if args.part == "rabs":
        return rabs_examples(pii_find)
    with open(args.corpus) as handle:
        rows = json.load(handle)
    rows = rows[:500] if args.part == "tune" else rows[500:1500]
    started = time.monotonic()
    cases = []
    for row in rows:
        gold = [
            (LABELS[s["entity_type"]], s["start_position"], s["end_position"])
            for s in row["spans"]
            if s["entity_type"] in LABELS
        ]
        cases.append((gold, _predicted(pii_find, row["full_text"], LABELS.values())))
    print(f"{args.part}: {len(rows)} texts in {time.monotonic() - started:.1f}s")
    _report(cases, list(LABELS.values()))
    return 0


Span = tuple[str, int, int]


def _predicted(pii_find: Any, text: str, kinds: Any) -> list[Span]:
    return [(f.type, f.start, f.end) for f in pii_find(text) if f.type in kinds]


def _report(cases: list[tuple[list[Span], list[Span]]], kinds: list[str]) -> None:
    """Recall and precision per type over (gold, predicted) pairs: a span counts when it
    overlaps one of the same type on the other side."""
    gold_n: Counter[str] = Counter()
    pred_n: Counter[str] = Counter()
    hit_gold: Counter[str] = Counter()
    hit_pred: Counter[str] = Counter()
    for gold, predicted in cases:
        for side, other, total, hit in (
            (gold, predicted, gold_n, hit_gold),
            (predicted, gold, pred_n, hit_pred),
        ):
            for kind, start, end in side:
                total[kind] += 1
                if any(k == kind and s < end and start < e for k, s, e in other):
                    hit[kind] += 1
    width = max(len(k) for k in kinds) + 3
    print(f"{'entity':{width}s} {'recall':>16s} {'precision':>18s}")
    for kind in kinds:
        recall = hit_gold[kind] / gold_n[kind] if gold_n[kind] else float("nan")
        precision = hit_pred[kind] / pred_n[kind] if pred_n[kind] else float("nan")
        print(
            f"{kind:{width}s} {recall:7.1%} ({hit_gold[kind]:4d}/{gold_n[kind]:4d})"
            f" {precision:8.1%} ({hit_pred[kind]:4d}/{pred_n[kind]:4d})"
        )


RABS_TYPES = (
    "AU_ADDRESS",
    "DATE_OF_BIRTH",
    "AU_BANK_ACCOUNT",
    "AU_DRIVER_LICENCE",
    "AU_PASSPORT",
    "EMAIL_ADDRESS",
)


def rabs_examples(pii_find: Any) -> int:
    with open(ROOT / "eval/pii-rabs-examples.jsonl") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    cases = []
    for row in rows:
        text = row["text"]
        gold = []
        for kind, value in row["spans"]:
            start = text.index(value)
            gold.append((kind, start, start + len(value)))
        cases.append((gold, _predicted(pii_find, text, RABS_TYPES)))
    print(f"rabs: {len(rows)} hand-written texts")
    _report(cases, list(RABS_TYPES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
