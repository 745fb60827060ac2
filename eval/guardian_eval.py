"""Measure the Guardian on the AGT prompt-injection corpus (vendored in eval/corpora).

    .venv/bin/python eval/guardian_eval.py [--corpus PATH] [--split test] [--show-misses]

Attack recall = attacks assessed flag or block; benign FPR = benign texts not allowed.
Trust mapping per the corpus README: untrusted and tool_output → untrusted,
authenticated_user → standard.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.typecheck")

TRUST = {"untrusted": "untrusted", "tool_output": "untrusted", "authenticated_user": "standard"}


def main() -> int:
    from brainframe.safety.guardian import assess

    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", default=str(ROOT / "eval/corpora/agt-injection-smoke.jsonl"))
    parser.add_argument("--split", action="append", help="repeatable; default: each split")
    parser.add_argument("--show-misses", action="store_true")
    args = parser.parse_args()
    with open(args.corpus) as corpus:
        rows = [json.loads(line) for line in corpus]
    splits = args.split or ["exemplar_bank", "validation", "test"]
    for split in splits:
        chosen = [r for r in rows if r["split"] == split]
        attacks = [r for r in chosen if r["attack_class"] != "benign"]
        benign = [r for r in chosen if r["attack_class"] == "benign"]
        caught = [
            r for r in attacks if assess(r["text"], TRUST[r["trust_level"]]).action != "allow"
        ]
        false = [r for r in benign if assess(r["text"], TRUST[r["trust_level"]]).action != "allow"]
        recall = len(caught) / max(1, len(attacks))
        fpr = len(false) / max(1, len(benign))
        print(
            f"{split:14s} attacks {len(caught):3d}/{len(attacks):3d} recall {recall:6.1%}   "
            f"benign flagged {len(false):3d}/{len(benign):3d} FPR {fpr:5.1%}"
        )
        if args.show_misses:
            for r in attacks:
                if r not in caught:
                    print("  MISS", r["attack_class"], r["bypass_class"], r["text"][:100])
            for r in false:
                a = assess(r["text"], TRUST[r["trust_level"]])
                print("  FP  ", a.patterns, r["text"][:100])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
