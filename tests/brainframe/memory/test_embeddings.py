"""The Indexer: the offline local model and an OpenAI-compatible endpoint."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from brainframe.embeddings.indexer import (
    DIMENSIONS,
    IndexerUnavailable,
    LocalIndexer,
    OpenAIIndexer,
    get_indexer,
)
from tests.llm_server import OpenAICompatibleServer

ROOT = Path(__file__).resolve().parents[3]


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_local_model_embeds_768_unit_vectors_that_capture_meaning() -> None:
    indexer = get_indexer()
    assert indexer.name == "local:all-mpnet-base-v2"
    invoice, payment, roster = indexer.embed(
        [
            "The plan manager has not paid invoice 2231.",
            "Chase the overdue payment from the plan manager.",
            "Two Saturday shifts are still unfilled on the roster.",
        ]
    )
    assert len(invoice) == DIMENSIONS
    assert math.isclose(math.sqrt(sum(x * x for x in invoice)), 1.0, rel_tol=1e-4)
    assert _cos(invoice, payment) > _cos(invoice, roster) + 0.2


def test_local_model_loads_once_per_process() -> None:
    first = LocalIndexer(settings.RABS_EMBEDDING_MODEL_PATH)
    second = LocalIndexer(settings.RABS_EMBEDDING_MODEL_PATH)
    first.embed(["warm"])
    assert first._model() is second._model()


def test_missing_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(IndexerUnavailable, match=r"brainframe\.embeddings\.assemble"):
        LocalIndexer(tmp_path / "nowhere").embed(["text"])


@pytest.mark.slow
def test_model_works_with_the_network_unplugged(tmp_path: Path) -> None:
    """A fresh process, an empty Hugging Face cache, HF_HUB_OFFLINE=1 and (where the machine
    allows it) no network at all: the model still loads and embeds."""
    script = (
        "from brainframe.embeddings.indexer import LocalIndexer;"
        f"v = LocalIndexer({str(settings.RABS_EMBEDDING_MODEL_PATH)!r}).embed(['offline'])[0];"
        "print(len(v))"
    )
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf-home"),
        "PYTHONPATH": str(ROOT),
    }
    command = [sys.executable, "-c", script]
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        command = [unshare, "-n", *command]  # a network namespace with no interfaces up
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == str(DIMENSIONS)


def test_openai_compatible_backend() -> None:
    with OpenAICompatibleServer().running() as server:
        indexer = OpenAIIndexer(
            base_url=server.base_url, api_key="k", model="embed-small", batch_size=2
        )
        vectors = indexer.embed(["one", "two", "three"])
        assert indexer.name == "openai:embed-small"
        assert len(vectors) == 3 and all(len(v) == DIMENSIONS for v in vectors)
        assert all(math.isclose(_cos(v, v), 1.0, rel_tol=1e-6) for v in vectors)
        # Batched, asked for 768 dimensions, in order.
        assert [body["input"] for _, body in server.requests] == [["one", "two"], ["three"]]
        assert all(body["dimensions"] == DIMENSIONS for _, body in server.requests)
        assert indexer.embed(["three"]) == [vectors[2]]


def test_openai_backend_failures_are_indexer_unavailable() -> None:
    with OpenAICompatibleServer().running() as server:
        indexer = OpenAIIndexer(base_url=server.base_url, api_key="k", model="m")
        server.fail_next = 10  # more than the client's retries
        with pytest.raises(IndexerUnavailable, match="endpoint failed"):
            indexer.embed(["text"])
        server.fail_next = 0
        server.dimensions_override = 1536
        with pytest.raises(IndexerUnavailable, match="1536-d"):
            indexer.embed(["text"])


def test_backend_is_chosen_by_settings(settings: object) -> None:
    with OpenAICompatibleServer().running() as server:
        settings.RABS_EMBEDDING_BACKEND = "openai"  # type: ignore[attr-defined]
        settings.RABS_EMBEDDING_BASE_URL = server.base_url  # type: ignore[attr-defined]
        settings.RABS_EMBEDDING_MODEL = "embed-x"  # type: ignore[attr-defined]
        indexer = get_indexer()
        assert indexer.name == "openai:embed-x"
        assert len(indexer.embed(["hello"])[0]) == DIMENSIONS
    settings.RABS_EMBEDDING_BACKEND = "carrier-pigeon"  # type: ignore[attr-defined]
    with pytest.raises(IndexerUnavailable, match="unknown RABS_EMBEDDING_BACKEND"):
        get_indexer()
