"""Measure the Guardian on the AGT prompt-injection corpus (vendored in eval/corpora), its learned
and semantic stages by cross-validation on their training data, and benign business text.

    .venv/bin/python eval/guardian_eval.py [--corpus PATH] [--split test] [--show-misses]
                                           [--no-cv]

Attack recall = attacks assessed flag or block; benign FPR = benign texts not allowed.
Trust mapping per the corpus README: untrusted and tool_output → untrusted,
authenticated_user → standard. Each split is measured with the patterns alone and with both
stages (the learned stage where ``assess`` runs it). The learned stage is never trained on the
``test`` split. Benign business text: the report part of presidio-synth-v2 (the 1,000 texts after
the first 500 it trains on), assessed as untrusted.
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


def cross_validate(folds: int = 5) -> None:
    """The learned stage alone, 5-fold stratified (seeded) on its training data."""
    import numpy as np
    from sklearn.model_selection import StratifiedKFold

    from brainframe.safety.guardian.learned import Detector, fit, model_read, training_rows

    rows = training_rows()
    texts, labels = [r[0] for r in rows], np.array([r[1] for r in rows])
    sources = np.array([r[2] for r in rows])
    scores = np.zeros(len(rows))
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=0).split(texts, labels):
        model = Detector(fit([texts[i] for i in train], [int(labels[i]) for i in train]))
        scores[test] = model.scores([texts[i] for i in test])
    threshold = Detector(model_read()).threshold
    print(f"learned stage, {folds}-fold cross-validation at threshold {threshold}:")
    for name in ("all", *sorted(set(sources))):
        chosen = np.ones(len(rows), bool) if name == "all" else sources == name
        attack, benign = scores[chosen & (labels == 1)], scores[chosen & (labels == 0)]
        parts = []
        if len(attack):
            parts.append(f"recall {np.mean(attack >= threshold):6.1%} of {len(attack):3d}")
        if len(benign):
            parts.append(f"FPR {np.mean(benign >= threshold):5.1%} of {len(benign):3d}")
        print(f"  {name:10s} " + "   ".join(parts))


def cross_validate_semantic(folds: int = 5) -> None:
    """The semantic stage alone, 5-fold stratified (seeded) on its training data (the learned
    stage's rows and the hand-written families), per source and per family; then trained on
    all of it and scored on the AGT test split and the presidio report part (never trained on)."""
    import numpy as np
    from sklearn.model_selection import StratifiedKFold

    from brainframe.safety.guardian import semantic
    from brainframe.safety.guardian.learned import family_rows, training_rows

    rows = training_rows() + family_rows()
    texts, labels = [r[0] for r in rows], np.array([r[1] for r in rows])
    sources = np.array([r[2] for r in rows])
    weights = np.array(semantic.weights_for(list(sources)))
    encoder = semantic.Encoder()
    scores = np.zeros(len(rows))
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=0).split(texts, labels):
        data = semantic.fit(
            [texts[i] for i in train],
            [int(labels[i]) for i in train],
            list(weights[train]),
            encoder,
        )
        scores[test] = semantic.Detector(data, encoder).scores([texts[i] for i in test])
    threshold = semantic.DEFAULT_THRESHOLD
    print(f"semantic stage, {folds}-fold cross-validation at threshold {threshold}:")
    for name in ("all", *sorted(set(sources))):
        chosen = np.ones(len(rows), bool) if name == "all" else sources == name
        attack, benign = scores[chosen & (labels == 1)], scores[chosen & (labels == 0)]
        parts = []
        if len(attack):
            parts.append(f"recall {np.mean(attack >= threshold):6.1%} of {len(attack):3d}")
        if len(benign):
            parts.append(f"FPR {np.mean(benign >= threshold):5.1%} of {len(benign):3d}")
        print(f"  {name:22s} " + "   ".join(parts))
    model = semantic.detector()
    with open(ROOT / "eval/corpora/agt-injection-smoke.jsonl") as corpus:
        test = [json.loads(line) for line in corpus if json.loads(line)["split"] == "test"]
    attack = [model.score(r["text"]) for r in test if r["attack_class"] != "benign"]
    benign = [model.score(r["text"]) for r in test if r["attack_class"] == "benign"]
    with open(ROOT / "eval/corpora/presidio-synth-v2.json") as f:
        business = [model.score(item["full_text"]) for item in json.load(f)[500:]]
    print(
        f"  semantic alone, AGT test: recall {np.mean(np.array(attack) >= threshold):.1%} of "
        f"{len(attack)}, FPR {np.mean(np.array(benign) >= threshold):.1%} of {len(benign)}; "
        f"presidio report part FPR {np.mean(np.array(business) >= threshold):.1%}"
    )


def main() -> int:
    from brainframe.safety.guardian.core import assess

    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", default=str(ROOT / "eval/corpora/agt-injection-smoke.jsonl"))
    parser.add_argument("--split", action="append", help="repeatable; default: each split")
    parser.add_argument("--show-misses", action="store_true")
    parser.add_argument("--no-cv", action="store_true", help="skip the cross-validation")
    args = parser.parse_args()
    with open(args.corpus) as corpus:
        rows = [json.loads(line) for line in corpus]
    splits = args.split or ["exemplar_bank", "validation", "test"]
    for split in splits:
        chosen = [r for r in rows if r["split"] == split]
        attacks = [r for r in chosen if r["attack_class"] != "benign"]
        benign = [r for r in chosen if r["attack_class"] == "benign"]
        for stages, learned in (("patterns", False), ("both", None)):

            def verdict(r: dict, learned: bool | None = learned) -> str:
                return assess(r["text"], TRUST[r["trust_level"]], learned=learned).action

            caught = [r for r in attacks if verdict(r) != "allow"]
            false = [r for r in benign if verdict(r) != "allow"]
            recall = len(caught) / max(1, len(attacks))
            fpr = len(false) / max(1, len(benign))
            print(
                f"{split:14s} {stages:8s} attacks {len(caught):3d}/{len(attacks):3d} "
                f"recall {recall:6.1%}   benign flagged {len(false):3d}/{len(benign):3d} "
                f"FPR {fpr:5.1%}"
            )
            if args.show_misses and learned is None:
                for r in attacks:
                    if r not in caught:
                        print("  MISS", r["attack_class"], r["bypass_class"], r["text"][:100])
                for r in false:
                    a = assess(r["text"], TRUST[r["trust_level"]])
                    print("  FP  ", a.patterns, r["text"][:100])
    with open(ROOT / "eval/corpora/presidio-synth-v2.json") as f:
        business = [item["full_text"] for item in json.load(f)[500:]]
    flagged = [t for t in business if assess(t, "untrusted").action != "allow"]
    print(
        f"benign business text (presidio report part, untrusted, both stages): "
        f"{len(flagged)}/{len(business)} flagged, FPR {len(flagged) / len(business):.1%}"
    )
    if not args.no_cv:
        cross_validate()
        cross_validate_semantic()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
