"""The Guardian's semantic stage: what a text means, read with the offline sentence model.

The sentence model the project ships (all-mpnet-base-v2, 768-d) is too slow to run on every
call (hundreds of milliseconds per kilobyte on a CPU), so the stage reads its distilled static
form (``brainframe.embeddings.static``: every token's vector as the full model gives it, PCA'd to
128 dimensions): a text's vector is the IDF-weighted mean of its tokens' vectors, unit length.
A logistic regression over that vector scores it (the probability of an attack). Because
paraphrases land near each other in the model's space, it catches wordings the patterns and the
character n-grams of the learned stage never saw; because the vocabulary is the model's own
(with Chinese characters and Latin subwords), it reads other languages a little too.

The score is the highest of the whole text and of each window of ``WINDOW`` tokens (half
overlapping): an instruction buried in a long, harmless document is not averaged away.

Training: ``manage.py guardian_train`` (with the learned stage) on the same rows as the learned
stage (``learned.training_rows``), the hand-written RABS rows weighted ``OWN_WEIGHT``; the weights
are checked in (``semantic_model.json.gz``). The table's PCA keeps the first 128 components.
"""

from __future__ import annotations

import gzip
import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from brainframe.embeddings.static import TABLE
from brainframe.embeddings.static import read as read_table

MODEL_PATH = Path(__file__).with_name("semantic_model.json.gz")
WINDOW = 48
MAX_CHARS = 16384
C = 2.0
#: Chosen on the training data's cross-validation (docs/safety.md): the stage is kept for the
#: texts it is sure of; below it the business's own hard negatives crowd in.
DEFAULT_THRESHOLD = 0.9
#: Hand-written RABS rows weigh this much more than the public corpora's in training.
OWN_WEIGHT = 3.0


class Encoder:
    """Texts → unit-length static vectors (and token-window vectors)."""

    def __init__(self, table: dict[str, Any] | None = None) -> None:
        from tokenizers import Tokenizer  # loads slowly: only when the stage first runs

        table = table or read_table(TABLE)
        self.vectors = table["vectors"].astype(np.float32) * table["scale"]
        self.tokenizer = Tokenizer.from_str(table["tokenizer"])
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.idf = np.ones(len(self.vectors), dtype=np.float32)

    def ids(self, text: str) -> list[int]:
        return self.tokenizer.encode(text[:MAX_CHARS], add_special_tokens=False).ids

    def encode(self, text: str) -> np.ndarray:
        return _unit(self._weighted(self.ids(text)).sum(axis=0))

    def windows(self, text: str) -> np.ndarray:
        """The whole text's vector, then one per window of WINDOW tokens (stride WINDOW/2)."""
        rows = self._weighted(self.ids(text))
        out = [rows.sum(axis=0)]
        if len(rows) > WINDOW:
            sums = np.cumsum(rows, axis=0)
            starts = range(0, len(rows) - WINDOW // 2, WINDOW // 2)
            for start in starts:
                end = min(len(rows), start + WINDOW)
                out.append(sums[end - 1] - (sums[start - 1] if start else 0))
        return np.stack([_unit(v) for v in out])

    def _weighted(self, ids: list[int]) -> np.ndarray:
        if not ids:
            return np.zeros((1, self.vectors.shape[1]), dtype=np.float32)
        index = np.asarray(ids)
        return self.vectors[index] * self.idf[index, None]


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


def document_frequencies(encoder: Encoder, texts: list[str]) -> np.ndarray:
    """Smoothed IDF of each token over ``texts`` (scikit-learn's formula)."""
    df = np.zeros(len(encoder.vectors), dtype=np.float64)
    for text in texts:
        df[np.unique(np.asarray(encoder.ids(text), dtype=np.int64))] += 1
    return np.log((1 + len(texts)) / (1 + df)) + 1.0


def fit(
    texts: list[str],
    labels: list[int],
    weights: list[float] | None = None,
    encoder: Encoder | None = None,
) -> dict[str, Any]:
    # scikit-learn: only where the model is built.
    from sklearn.linear_model import LogisticRegression

    encoder = encoder or base_encoder()
    idf = document_frequencies(encoder, texts)
    encoder.idf = idf.astype(np.float32)
    features = np.stack([encoder.encode(t) for t in texts])
    model = LogisticRegression(
        C=C, class_weight="balanced", solver="liblinear", random_state=0, max_iter=2000
    )
    model.fit(features, labels, sample_weight=weights)
    return {
        "idf": [round(float(v), 4) for v in idf],
        "coef": [round(float(v), 6) for v in model.coef_[0]],
        "intercept": round(float(model.intercept_[0]), 6),
        "threshold": DEFAULT_THRESHOLD,
    }


class Detector:
    def __init__(self, data: dict[str, Any], encoder: Encoder | None = None) -> None:
        self.encoder = encoder or Encoder()
        self.encoder.idf = np.asarray(data["idf"], dtype=np.float32)
        self.coef = np.asarray(data["coef"], dtype=np.float32)
        self.intercept = float(data["intercept"])
        self.threshold = float(data["threshold"])

    def score(self, text: str) -> float:
        logits = self.encoder.windows(text) @ self.coef + self.intercept
        top = float(logits.max())
        return 1.0 / (1.0 + math.exp(-top)) if top > -700 else 0.0

    def scores(self, texts: list[str]) -> list[float]:
        return [self.score(t) for t in texts]


def model_write(data: dict[str, Any], path: Path = MODEL_PATH) -> None:
    body = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    with gzip.GzipFile(filename="", mode="wb", fileobj=path.open("wb"), mtime=0) as out:
        out.write(body)


def model_read(path: Path = MODEL_PATH) -> dict[str, Any]:
    with gzip.open(path) as f:
        data: dict[str, Any] = json.load(f)
    return data


@lru_cache(maxsize=1)
def base_encoder() -> Encoder:
    return Encoder()


@lru_cache(maxsize=1)
def detector() -> Detector:
    """The checked-in model over the checked-in table (read once per process)."""
    return Detector(model_read(), Encoder())


def weights_for(sources: list[str]) -> list[float]:
    return [OWN_WEIGHT if s == "rabs" or s.startswith("family:") else 1.0 for s in sources]
