"""The vendored evaluation corpora are what their manifest says (source, licence, checksum)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

CORPORA = Path(__file__).resolve().parent.parent / "eval" / "corpora"


def test_every_corpus_file_matches_its_manifest_entry() -> None:
    manifest = json.loads((CORPORA / "manifest.json").read_text())["files"]
    present = {p.name for p in CORPORA.iterdir() if p.name not in ("manifest.json", "README.md")}
    assert present == set(manifest)
    for name, entry in manifest.items():
        data = (CORPORA / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], name
        assert entry["source"] and entry["licence"], name
        assert name in (CORPORA / "README.md").read_text() or name.endswith(".manifest.json")
