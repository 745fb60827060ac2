"""The Guardian's domain stage, measured leave-one-set-out on the kept-back sets it trains on.

    .venv/bin/python eval/domain_eval.py [--thresholds 0.7,0.8,0.9]

For each of kept-back sets 2–7 the stage is trained without that set (``domain.train(exclude=…)``)
and the whole Guardian is run on it with that model, at each threshold and with the stage off;
totals per family, never the texts. Kept-back sets not in ``domain.USED_SETS`` (8 and later) are
measured by ``heldout_eval.py`` with the checked-in model, which never saw them.
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--thresholds", default="0.7,0.8,0.9")
    args = parser.parse_args()
    thresholds = [float(t) for t in args.thresholds.split(",")]
    from brainframe.safety.guardian import domain, stages
    from brainframe.safety.guardian.core import assess
    from brainframe.safety.guardian.learned import Detector

    right: Counter[tuple[str, str, str]] = Counter()
    total: Counter[tuple[str, str]] = Counter()
    for suffix in domain.USED_SETS[1:]:
        model = domain.train(exclude=suffix)
        with open(domain.HELDOUT / f"guardian-heldout{suffix}.jsonl") as f:
            rows = [json.loads(line) for line in f]
        for setting in ["off", *map(str, thresholds)]:
            threshold = 2.0 if setting == "off" else float(setting)
            found = Detector({**model, "threshold": threshold})
            stages.own_detector = lambda found=found: found  # type: ignore[assignment]  # this run's model
            for row in rows:
                verdict = assess(row["text"], row["trust"], source=row.get("source")).action
                key = (row["label"], row["family"])
                right[(setting, *key)] += (verdict != "allow") == (row["label"] == "attack")
                if setting == "off":
                    total[key] += 1
    for label, what in (("attack", "caught"), ("benign", "allowed")):
        keys = sorted(k for k in total if k[0] == label)
        count = sum(total[k] for k in keys)
        print(f"{label}s {what} (of {count}):")
        for setting in ["off", *map(str, thresholds)]:
            hits = sum(right[(setting, *k)] for k in keys)
            per = " ".join(f"{k[1]} {right[(setting, *k)]}/{total[k]}" for k in keys)
            print(f"  {setting:>4s} {hits / count:6.1%}  {per}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
