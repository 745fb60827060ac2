"""The Guardian's domain stage: the learned stage's kind of model, trained on this business's own
attacks and look-alikes.

The learned stage reads style and words learned mostly from public jailbreaks; the business's
own families (a bank-detail change in a supplier's e-mail, "no need to mention this to the
coordinators", a worksheet that hands the client list to an outside address, the same in Hindi)
read like ordinary business mail to it. This stage is the same model (``learned.fit``: character
3–5-grams and word uni- and bigrams, logistic regression, plain-Python scoring with
``learned.Detector``) trained on the RABS rows: every hand-written tuning batch
(``eval/corpora/rabs-families-guardian*.jsonl``) and the kept-back sets already scored and
reported (``USED_SETS``), with the learned stage's public rows at ``PUBLIC_WEIGHT`` so that
ordinary business prose and public jailbreaks keep their places. A kept-back set is added here
only after its figures were recorded: set 8 and later are not training data, so that they stay a
measure of it.

It runs with the learned and semantic stages (nothing named matched; the text untrusted or long)
and counts from ``DEFAULT_THRESHOLD``, chosen on a leave-one-set-out run over kept-back sets 2–7
(figures in docs/safety.md). ``manage.py guardian_train`` rebuilds ``domain_model.json.gz``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from brainframe.safety.guardian.learned import (
    CORPORA,
    ROOT,
    Detector,
    fit,
    model_read,
    training_rows,
)

MODEL_PATH = Path(__file__).with_name("domain_model.json.gz")
HELDOUT = ROOT / "eval" / "heldout"
#: The kept-back sets whose figures are on record (docs/safety.md), by file suffix.
USED_SETS = ("", "-2", "-3", "-4", "-5", "-6", "-7")
PUBLIC_WEIGHT = 0.3
#: From the leave-one-set-out run: the highest threshold that catches more without letting
#: fewer legitimate texts through (at 0.7 it catches 2 % more and allows 0.7 % fewer).
DEFAULT_THRESHOLD = 0.8


def own_rows(exclude: str | None = None) -> list[tuple[str, int, str]]:
    """(text, 1 for an attack, where it came from) for the RABS rows, in a fixed order; without
    the kept-back set ``exclude`` (a suffix of ``USED_SETS``), for a leave-one-set-out run."""
    paths = sorted(CORPORA.glob("rabs-families-guardian*.jsonl"))
    used = [suffix for suffix in USED_SETS if suffix != exclude]
    paths += [HELDOUT / f"guardian-heldout{suffix}.jsonl" for suffix in used]
    rows: list[tuple[str, int, str]] = []
    for path in paths:
        with open(path) as f:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    rows.append((row["text"], int(row["label"] == "attack"), path.stem))
    return rows


def training_set(exclude: str | None = None) -> tuple[list[str], list[int], list[float]]:
    """Texts, labels and weights: the RABS rows at 1, the learned stage's rows at
    ``PUBLIC_WEIGHT``."""
    own, public = own_rows(exclude), training_rows()
    return (
        [r[0] for r in own] + [r[0] for r in public],
        [r[1] for r in own] + [r[1] for r in public],
        [1.0] * len(own) + [PUBLIC_WEIGHT] * len(public),
    )


def train(exclude: str | None = None) -> dict[str, Any]:
    """The model, as ``learned.fit`` gives it, with this stage's threshold."""
    return {**fit(*training_set(exclude)), "threshold": DEFAULT_THRESHOLD}


@lru_cache(maxsize=1)
def detector() -> Detector:
    """The checked-in model (read once per process)."""
    return Detector(model_read(MODEL_PATH))
