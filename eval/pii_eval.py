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
    from brainframe.safety.pii import pii_find

    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", default=str(ROOT / "eval/corpora/presidio-synth-v2.json"))
    parser.add_argument("--part", choices=["tune", "report", "rabs"], default="report")
    args = parser.parse_args()
    if args.part == "rabs":
        return rabs_examples(pii_find)
    with open(args.corpus) as handle:
        rows = json.load(handle)
    rows = rows[:500] if args.part == "tune" else rows[500:1500]
    gold_n: Counter[str] = Counter()
    pred_n: Counter[str] = Counter()
    hit_gold: Counter[str] = Counter()
    hit_pred: Counter[str] = Counter()
    started = time.monotonic()
    for row in rows:
        gold = [
            (LABELS[s["entity_type"]], s["start_position"], s["end_position"])
            for s in row["spans"]
            if s["entity_type"] in LABELS
        ]
        predicted = [
            (f.type, f.start, f.end)
            for f in pii_find(row["full_text"])
            if f.type in LABELS.values()
        ]
        for kind, start, end in gold:
            gold_n[kind] += 1
            if any(k == kind and s < end and start < e for k, s, e in predicted):
                hit_gold[kind] += 1
        for kind, start, end in predicted:
            pred_n[kind] += 1
            if any(k == kind and s < end and start < e for k, s, e in gold):
                hit_pred[kind] += 1
    print(f"{args.part}: {len(rows)} texts in {time.monotonic() - started:.1f}s")
    print(f"{'entity':15s} {'recall':>16s} {'precision':>18s}")
    for kind in LABELS.values():
        recall = hit_gold[kind] / gold_n[kind] if gold_n[kind] else float("nan")
        precision = hit_pred[kind] / pred_n[kind] if pred_n[kind] else float("nan")
        print(
            f"{kind:15s} {recall:7.1%} ({hit_gold[kind]:4d}/{gold_n[kind]:4d})"
            f" {precision:8.1%} ({hit_pred[kind]:4d}/{pred_n[kind]:4d})"
        )
    return 0


RABS_TYPES = (
    "AU_ADDRESS",
    "DATE_OF_BIRTH",
    "AU_BANK_ACCOUNT",
    "AU_DRIVER_LICENCE",
    "AU_PASSPORT",
    "EMAIL_ADDRESS",
)


def rabs_examples(pii_find: Any) -> int:
    gold_n: Counter[str] = Counter()
    pred_n: Counter[str] = Counter()
    hit_gold: Counter[str] = Counter()
    hit_pred: Counter[str] = Counter()
    with open(ROOT / "eval/pii-rabs-examples.jsonl") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    for row in rows:
        text = row["text"]
        gold = []
        for kind, value in row["spans"]:
            start = text.index(value)
            gold.append((kind, start, start + len(value)))
        predicted = [(f.type, f.start, f.end) for f in pii_find(text) if f.type in RABS_TYPES]
        for kind, start, end in gold:
            gold_n[kind] += 1
            if any(k == kind and s < end and start < e for k, s, e in predicted):
                hit_gold[kind] += 1
        for kind, start, end in predicted:
            pred_n[kind] += 1
            if any(k == kind and s < end and start < e for k, s, e in gold):
                hit_pred[kind] += 1
    print(f"rabs: {len(rows)} hand-written texts")
    print(f"{'entity':18s} {'recall':>16s} {'precision':>18s}")
    for kind in RABS_TYPES:
        recall = hit_gold[kind] / gold_n[kind] if gold_n[kind] else float("nan")
        precision = hit_pred[kind] / pred_n[kind] if pred_n[kind] else float("nan")
        print(
            f"{kind:18s} {recall:7.1%} ({hit_gold[kind]:4d}/{gold_n[kind]:4d})"
            f" {precision:8.1%} ({hit_pred[kind]:4d}/{pred_n[kind]:4d})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
