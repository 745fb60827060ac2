"""The Guardian's second stage: a learned detector for the attacks the patterns do not name.

A linear model over TF-IDF features — character n-grams (3–5, within word boundaries) and word
uni- and bigrams, lower-cased, sublinear term frequencies — scored by logistic regression. It
reads style as well as words (persona set-ups, "stay in character", fake turn markers), costs a
fraction of a millisecond per kilobyte, needs no download, and gives the same weights every time
it is trained: ``manage.py guardian_train`` rebuilds ``learned_model.json.gz`` (checked in) from
the training data below, with scikit-learn's deterministic liblinear solver.

Training data (never the AGT corpus's ``test`` split, on which it is measured):
``eval/corpora/inthewild-jailbreaks-train.jsonl`` (attacks), the AGT corpus's ``exemplar_bank`` and
``validation`` splits (attacks and benign), the tuning part of ``presidio-synth-v2.json`` (the
first 500 texts: benign business messages) and ``eval/corpora/rabs-domain-guardian.jsonl``
(hand-written RABS-domain attacks and hard negatives: policies, changelogs, training material,
complaints, everyday requests).

The score is the model's probability that the text is an attack. ``guardian.assess`` asks for it
only when no pattern matched (so every pattern verdict, and the seed's risk table, is unchanged)
and maps it onto the base-risk scale (see ``guardian.learned_base``).
"""

from __future__ import annotations

import gzip
import json
import math
import re
from collections import Counter
from functools import lru_cache
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
MODEL_PATH = Path(__file__).with_name("learned_model.json.gz")
CORPORA = ROOT / "eval" / "corpora"
CHAR_NGRAMS = (3, 5)
CHAR = {"analyzer": "char_wb", "ngram_range": CHAR_NGRAMS, "min_df": 2, "max_features": 20000}
WORD = {"analyzer": "word", "ngram_range": (1, 2), "min_df": 2, "max_features": 10000}
COMMON = {"lowercase": True, "sublinear_tf": True, "dtype": np.float64}
C = 4.0
#: Scores at or above it count (chosen on the training data's cross-validation, figures in
#: docs/safety.md: 88 % recall at 2.4 % false positives, most of those on hard negatives).
DEFAULT_THRESHOLD = 0.6
MAX_CHARS = 16384


def training_rows() -> list[tuple[str, int, str]]:
    """(text, 1 for an attack, source) for every training example, in a fixed order."""
    rows: list[tuple[str, int, str]] = []
    with open(CORPORA / "inthewild-jailbreaks-train.jsonl") as f:
        rows += [(json.loads(line)["text"], 1, "inthewild") for line in f if line.strip()]
    with open(CORPORA / "agt-injection-smoke.jsonl") as f:
        for line in f:
            row = json.loads(line)
            if row["split"] in ("exemplar_bank", "validation"):
                rows.append((row["text"], int(row["attack_class"] != "benign"), "agt"))
    with open(CORPORA / "presidio-synth-v2.json") as f:
        rows += [(item["full_text"], 0, "presidio") for item in json.load(f)[:500]]
    with open(CORPORA / "rabs-domain-guardian.jsonl") as f:
        for line in f:
            row = json.loads(line)
            rows.append((row["text"], int(row["label"] == "attack"), "rabs"))
    return rows


def family_rows() -> list[tuple[str, int, str]]:
    """Hand-written examples of each attack family and of each kind of hard negative
    (``eval/corpora/rabs-families-guardian.jsonl``): training data for the semantic stage only
    (the learned stage's weights, and its measured figures, stay as they were)."""
    with open(CORPORA / "rabs-families-guardian.jsonl") as f:
        return [
            (row["text"], int(row["label"] == "attack"), f"family:{row['family']}")
            for row in map(json.loads, f)
        ]


def _vectorizers() -> tuple[Any, Any]:
    # scikit-learn is imported only where the model is built or read (not at Django start-up).
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(**CHAR, **COMMON), TfidfVectorizer(**WORD, **COMMON)


def fit(texts: list[str], labels: list[int], weights: list[float] | None = None) -> dict[str, Any]:
    """Train on ``texts`` (each counted ``weights[i]`` times, by default once); returns the model
    as plain JSON-able data."""
    # scikit-learn and scipy: only for training and reading the model (see _vectorizers).
    from scipy.sparse import hstack
    from sklearn.linear_model import LogisticRegression

    char, word = (_limited(v, texts) for v in _vectorizers())
    features = hstack([char.fit_transform(texts), word.fit_transform(texts)]).tocsr()
    model = LogisticRegression(
        C=C, class_weight="balanced", solver="liblinear", random_state=0, max_iter=1000
    )
    model.fit(features, labels, sample_weight=weights)
    return {
        "char": {"vocabulary": _vocabulary(char), "idf": _rounded(char.idf_)},
        "word": {"vocabulary": _vocabulary(word), "idf": _rounded(word.idf_)},
        "coef": _rounded(model.coef_[0]),
        "intercept": round(float(model.intercept_[0]), 6),
        "threshold": DEFAULT_THRESHOLD,
    }


def _limited(vectorizer: Any, texts: list[str]) -> Any:
    """``vectorizer`` with its vocabulary chosen as scikit-learn's ``max_features`` does (the
    terms most frequent over the corpus, after ``min_df``), but with ties broken by the term's
    place in alphabetical order: scikit-learn's own unstable sort breaks them differently on
    CPUs with different vector instructions, so the same data gave different weights on
    different machines."""
    # scikit-learn: only where the model is built (see _vectorizers).
    from sklearn.feature_extraction.text import CountVectorizer

    params = vectorizer.get_params()
    limit = params.pop("max_features")
    counter = CountVectorizer(
        analyzer=params["analyzer"],
        ngram_range=params["ngram_range"],
        min_df=params["min_df"],
        lowercase=params["lowercase"],
    )
    counts = counter.fit_transform(texts)
    terms = counter.get_feature_names_out()  # alphabetical
    totals = np.asarray(counts.sum(axis=0)).ravel()
    chosen = np.argsort(-totals, kind="stable")[:limit]
    return vectorizer.set_params(max_features=None, min_df=1, vocabulary=sorted(terms[chosen]))


def _vocabulary(vectorizer: Any) -> list[str]:
    ordered = sorted(vectorizer.vocabulary_.items(), key=lambda item: item[1])
    return [term for term, _ in ordered]


def _rounded(values: Any) -> list[float]:
    return [round(float(v), 6) for v in values]


#: scikit-learn's default ``token_pattern`` (the word features).
_TOKEN = re.compile(r"(?u)\b\w\w+\b")


class Detector:
    """A trained model, ready to score texts.

    It computes what scikit-learn's ``TfidfVectorizer.transform`` and the logistic model give
    (the same n-grams, counts, sublinear term frequencies, idf weights and L2 norms, per
    vectorizer), in plain Python: for one short text scikit-learn's sparse-matrix machinery
    cost 1–2 ms, the arithmetic itself a few microseconds. A test holds the two to the same
    scores on every corpus text (``tests/brainframe/safety/test_guardian.py``)."""

    def __init__(self, data: dict[str, Any]) -> None:
        coef = [float(c) for c in data["coef"]]
        offset = len(data["char"]["vocabulary"])
        # term → (idf, idf × its coefficient), for each vectorizer.
        self._char, self._word = (
            {
                term: (float(idf), float(idf) * coef[start + i])
                for i, (term, idf) in enumerate(zip(part["vocabulary"], part["idf"], strict=True))
            }
            for start, part in ((0, data["char"]), (offset, data["word"]))
        )
        self.intercept = float(data["intercept"])
        self.threshold = float(data["threshold"])

    def scores(self, texts: list[str]) -> list[float]:
        return [self.score(text) for text in texts]

    def score(self, text: str) -> float:
        return self.score_features(features(text))

    def score_features(self, counted: Features) -> float:
        """The score of a text's ``features`` (counted once for the models that share them)."""
        chars, words = counted
        logit = self.intercept + _weighted(chars, self._char) + _weighted(words, self._word)
        try:
            return 1.0 / (1.0 + math.exp(-logit))
        except OverflowError:  # a logit far below zero: no attack at all
            return 0.0


Features = tuple[Counter[str], Counter[str]]


def features(text: str) -> Features:
    """A text's character n-grams and words, counted as the models read them (the learned and
    domain stages share them)."""
    text = text[:MAX_CHARS].lower()
    return Counter(_char_wb_ngrams(text)), _word_counts(text)


def _char_wb_ngrams(text: str) -> list[str]:
    """scikit-learn's ``char_wb`` analyzer for n = 3–5: each word padded with a space either
    side; a word no longer than n gives itself once, and no longer n-grams."""
    low, high = CHAR_NGRAMS
    grams: list[str] = []
    for word in text.split():
        padded = f" {word} "
        size = len(padded)
        for n in range(low, high + 1):
            if size <= n:
                grams.append(padded)
                break
            grams.extend([padded[i : i + n] for i in range(size - n + 1)])
    return grams


def _word_counts(text: str) -> Counter[str]:
    """scikit-learn's ``word`` analyzer for uni- and bigrams, counted."""
    tokens = _TOKEN.findall(text)
    counts = Counter(tokens)
    counts.update([f"{a} {b}" for a, b in pairwise(tokens)])
    return counts


def _weighted(counts: Counter[str], terms: dict[str, tuple[float, float]]) -> float:
    """The vectorizer's L2-normalised tf-idf row, dotted with the model's coefficients."""
    dot = square = 0.0
    for term, count in counts.items():
        found = terms.get(term)
        if found is not None:
            tf = math.log(count) + 1.0
            dot += tf * found[1]
            square += (tf * found[0]) ** 2
    return dot / math.sqrt(square) if square else 0.0


def model_write(data: dict[str, Any], path: Path = MODEL_PATH) -> None:
    body = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    with gzip.GzipFile(filename="", mode="wb", fileobj=path.open("wb"), mtime=0) as out:
        out.write(body)


def model_read(path: Path = MODEL_PATH) -> dict[str, Any]:
    with gzip.open(path) as f:
        data: dict[str, Any] = json.load(f)
    return data


@lru_cache(maxsize=1)
def detector() -> Detector:
    """The checked-in model (read once per process)."""
    return Detector(model_read())
