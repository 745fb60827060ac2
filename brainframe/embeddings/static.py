"""Static token vectors distilled from the offline sentence model, for per-call text checks.

    python -m brainframe.embeddings.static [--out PATH] [--check]

The sentence model (all-mpnet-base-v2, ``var/models``) costs hundreds of milliseconds per
kilobyte of text on a CPU: too slow for the Guardian, which reads every call's arguments. This
distils it the way model2vec does: every token of the model's vocabulary is passed through the
full model on its own (``[CLS] token [SEP]``), its mean-pooled output is its vector, and the
vectors are reduced by PCA to ``DIMENSIONS`` and stored as int8 with one scale per dimension. A
text's vector is then the weighted mean of its tokens' vectors (``StaticEncoder``): a tokenizer
pass and a table look-up, tens of microseconds per kilobyte.

The table is checked in (``brainframe/safety/static_mpnet.npz``) so the Guardian needs neither
torch nor the 440 MB model at run time; this module rebuilds it from the assembled model, and
``--check`` compares a rebuild with the checked-in table (float rounding differs between CPUs,
so the check allows a small tolerance).
"""

from __future__ import annotations

import argparse
import io
import os
from pathlib import Path
from typing import Any

import numpy as np

from brainframe.embeddings.assemble import DEFAULT_DEST, model_dir

ROOT = Path(__file__).resolve().parent.parent.parent
TABLE = ROOT / "brainframe" / "safety" / "static_mpnet.npz"
DIMENSIONS = 128
BATCH = 1024


def _token_vectors(path: Path) -> tuple[np.ndarray, str]:
    """(one mean-pooled 768-d output per vocabulary token, the tokenizer's JSON)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # torch and sentence-transformers load in seconds: only when the table is rebuilt.
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
    transformer: Any = model[0].auto_model
    tokenizer = model.tokenizer
    size = len(tokenizer)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    out = np.zeros((size, transformer.config.hidden_size), dtype=np.float32)
    torch.set_grad_enabled(False)
    for start in range(0, size, BATCH):
        ids = torch.arange(start, min(size, start + BATCH)).unsqueeze(1)
        batch = torch.cat([torch.full_like(ids, cls), ids, torch.full_like(ids, sep)], dim=1)
        hidden = transformer(input_ids=batch, attention_mask=torch.ones_like(batch))[0]
        out[start : start + len(ids)] = hidden.mean(dim=1).numpy()
    return out, (path / "tokenizer.json").read_text()


def distil(path: Path) -> dict[str, Any]:
    vectors, tokenizer = _token_vectors(path)
    centred = vectors - vectors.mean(axis=0)
    # PCA by SVD of the covariance (768 × 768: deterministic and quick); each component's sign
    # is fixed so that its largest loading is positive (SVD may flip it from one BLAS to another).
    _, _, components = np.linalg.svd(np.cov(centred, rowvar=False))
    components = components[:DIMENSIONS]
    signs = np.sign(components[np.arange(DIMENSIONS), np.abs(components).argmax(axis=1)])
    reduced = centred @ (components * signs[:, None]).T
    scale = np.abs(reduced).max(axis=0) / 127.0
    quantised = np.round(reduced / scale).astype(np.int8)
    return {"vectors": quantised, "scale": scale.astype(np.float32), "tokenizer": tokenizer}


def write(table: dict[str, Any], out: Path = TABLE) -> None:
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        vectors=table["vectors"],
        scale=table["scale"],
        tokenizer=np.frombuffer(table["tokenizer"].encode(), dtype=np.uint8),
    )
    out.write_bytes(buffer.getvalue())


def read(path: Path = TABLE) -> dict[str, Any]:
    with np.load(path) as data:
        return {
            "vectors": data["vectors"],
            "scale": data["scale"],
            "tokenizer": data["tokenizer"].tobytes().decode(),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=model_dir(DEFAULT_DEST))
    parser.add_argument("--out", type=Path, default=TABLE)
    parser.add_argument("--check", action="store_true", help="compare with the checked-in table")
    args = parser.parse_args(argv)
    table = distil(args.model)
    if args.check:
        shipped = read(args.out)
        a = table["vectors"].astype(np.float32) * table["scale"]
        b = shipped["vectors"].astype(np.float32) * shipped["scale"]
        cosine = np.sum(a * b, axis=1) / (
            np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-9
        )
        print(f"rebuild vs checked-in: lowest token cosine {cosine.min():.4f}")
        return 0 if cosine.min() > 0.99 else 1
    write(table, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
