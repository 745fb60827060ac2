"""Score the Guardian and the PII filter on the kept-back RABS sets (eval/heldout/).

    .venv/bin/python eval/heldout_eval.py [--part guardian|pii|both] [--set 1…9]
    .venv/bin/python eval/heldout_eval.py --file eval/corpora/rabs-families-guardian-r3.jsonl
    .venv/bin/python eval/heldout_eval.py --part pii --file eval/pii-tuning-r3.jsonl

The kept-back sets were written before the rules they measure and are not used to tune them:
this prints totals per family only, never the texts (there is deliberately no option to list
misses). Guardian: each text is assessed at its ``trust`` with its ``source``; an attack is
caught when flagged or blocked, a legitimate text allowed when allowed. PII: a personal detail
leaks when no finding overlaps it; a thing that must survive (a public service number, a
helpline's name, a medication dose) is over-redacted when a finding overlaps it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.typecheck")
HELDOUT = ROOT / "eval" / "heldout"


SETS = {"1": "", **{str(n): f"-{n}" for n in range(2, 10)}}


def guardian(path: Path) -> None:
    from brainframe.safety.guardian.core import assess

    rows = [json.loads(line) for line in path.open()]
    right: Counter[tuple[str, str]] = Counter()
    total: Counter[tuple[str, str]] = Counter()
    for row in rows:
        verdict = assess(row["text"], row["trust"], source=row.get("source")).action
        key = (row["label"], row["family"])
        total[key] += 1
        right[key] += (verdict != "allow") == (row["label"] == "attack")
    for label, what in (("attack", "caught"), ("benign", "allowed")):
        keys = sorted(k for k in total if k[0] == label)
        hits, count = sum(right[k] for k in keys), sum(total[k] for k in keys)
        print(f"{label}s {what}: {hits}/{count} = {hits / count:.1%}")
        for key in keys:
            print(f"  {key[1]:14s} {right[key]:3d}/{total[key]:3d}")


def pii(path: Path) -> None:
    from brainframe.safety.pii.filter import pii_find

    rows = [json.loads(line) for line in path.open()]
    details = leaked = keeps = redacted = 0
    leaks: Counter[str] = Counter()
    for row in rows:
        text, found = row["text"], pii_find(row["text"])

        def covered(value: str, text: str = text, found: list = found) -> bool:
            start = text.index(value)
            return any(f.start < start + len(value) and start < f.end for f in found)

        for kind, value in row["pii"]:
            details += 1
            if not covered(value):
                leaked += 1
                leaks[kind] += 1
        for value in row["keep"]:
            keeps += 1
            redacted += covered(value)
    print(f"PII details leaked: {leaked}/{details} = {leaked / details:.1%} {dict(leaks)}")
    print(f"things that must survive, redacted: {redacted}/{keeps} = {redacted / keeps:.1%}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", choices=["guardian", "pii", "both"], default="both")
    parser.add_argument("--set", choices=sorted(SETS), default="1")
    parser.add_argument("--file", type=Path, help="another set of the same form (totals)")
    args = parser.parse_args()
    if args.file:
        (pii if args.part == "pii" else guardian)(args.file)
        return 0
    if args.part in ("guardian", "both"):
        guardian(HELDOUT / f"guardian-heldout{SETS[args.set]}.jsonl")
    if args.part in ("pii", "both"):
        pii(HELDOUT / f"pii-heldout{SETS[args.set]}.jsonl")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
