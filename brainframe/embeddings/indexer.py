"""The Indexer: texts in, unit-length 768-d vectors out, in batches.

Two backends behind one interface:

- ``LocalIndexer``: the offline sentence model (all-mpnet-base-v2) assembled under
  ``var/models`` by ``python -m brainframe.embeddings.assemble``. It is loaded once per process,
  with the Hugging Face hub switched off, so nothing is ever downloaded at run time.
- ``OpenAIIndexer``: any OpenAI-compatible ``/embeddings`` endpoint, asked for ``dimensions=768``.

Vectors are normalised to unit length, so cosine distance and dot product agree whichever
backend made them. ``Indexer.name`` is stored beside each vector (``embedding_model``), which is
how ``manage.py reembed`` knows what is left to do after a model change.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from django.conf import settings

DIMENSIONS = 768


class IndexerUnavailable(RuntimeError):
    """The embedding backend cannot produce vectors (model missing, endpoint down, bad reply)."""


class Indexer(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector of ``DIMENSIONS`` floats per text, in order."""
        ...


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else list(vector)


class LocalIndexer:
    """The offline sentence-transformers model; one load per process and path."""

    _models: dict[Path, Any] = {}
    _lock = threading.Lock()

    def __init__(self, path: Path | str, *, batch_size: int = 32) -> None:
        self.path = Path(path)
        self.batch_size = batch_size
        self.name = f"local:{self.path.name}"

    def _model(self) -> Any:
        model = self._models.get(self.path)
        if model is not None:
            return model
        with self._lock:
            if self.path not in self._models:
                if not (self.path / "modules.json").is_file():
                    raise IndexerUnavailable(
                        f"no embedding model at {self.path}; "
                        "run `python -m brainframe.embeddings.assemble` (make install does)"
                    )
                # Never reach for the hub: the model is local or it is not there.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                from sentence_transformers import SentenceTransformer  # torch: loaded on first use

                loaded = SentenceTransformer(str(self.path), device="cpu", local_files_only=True)
                dims = loaded.get_embedding_dimension()
                if dims != DIMENSIONS:
                    raise IndexerUnavailable(
                        f"{self.path} makes {dims}-d vectors, not {DIMENSIONS}"
                    )
                self._models[self.path] = loaded
            return self._models[self.path]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._model().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [row.tolist() for row in vectors]


class OpenAIIndexer:
    """Any OpenAI-compatible embeddings endpoint (``dimensions=768``)."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        batch_size: int = 64,
        timeout: float = 30.0,
    ) -> None:
        from openai import OpenAI  # only this backend needs the client (a slow import)

        self.model = model
        self.batch_size = batch_size
        self.name = f"openai:{model}"
        self._client = OpenAI(
            base_url=base_url, api_key=api_key or "unused", timeout=timeout, max_retries=2
        )

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        from openai import OpenAIError  # see __init__

        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            try:
                reply = self._client.embeddings.create(
                    model=self.model, input=batch, dimensions=DIMENSIONS
                )
            except OpenAIError as exc:
                raise IndexerUnavailable(f"embeddings endpoint failed: {exc}") from exc
            rows = sorted(reply.data, key=lambda d: d.index)
            if len(rows) != len(batch):
                raise IndexerUnavailable(
                    f"embeddings endpoint returned {len(rows)} vectors for {len(batch)} texts"
                )
            for row in rows:
                if len(row.embedding) != DIMENSIONS:
                    raise IndexerUnavailable(
                        f"embeddings endpoint returned {len(row.embedding)}-d vectors, "
                        f"not {DIMENSIONS}"
                    )
                out.append(_unit(row.embedding))
        return out


def get_indexer(model: str | None = None) -> Indexer:
    """The configured backend; ``model`` overrides its model (local: a path; openai: an id)."""
    backend = settings.RABS_EMBEDDING_BACKEND
    if backend == "local":
        return LocalIndexer(
            model or settings.RABS_EMBEDDING_MODEL_PATH,
            batch_size=settings.RABS_EMBEDDING_BATCH_SIZE,
        )
    if backend == "openai":
        if not settings.RABS_EMBEDDING_BASE_URL:
            raise IndexerUnavailable("RABS_EMBEDDING_BACKEND=openai needs RABS_EMBEDDING_BASE_URL")
        return OpenAIIndexer(
            base_url=settings.RABS_EMBEDDING_BASE_URL,
            api_key=settings.RABS_EMBEDDING_API_KEY,
            model=model or settings.RABS_EMBEDDING_MODEL,
            batch_size=settings.RABS_EMBEDDING_BATCH_SIZE,
        )
    raise IndexerUnavailable(f"unknown RABS_EMBEDDING_BACKEND {backend!r} (local or openai)")
