"""The suite's order: the longest modules first (``tests/conftest.py``'s ``LONGEST_FIRST``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import LONGEST_FIRST

ROOT = Path(__file__).resolve().parents[1]


def test_the_longest_modules_named_exist() -> None:
    assert [path for path in LONGEST_FIRST if not (ROOT / path).is_file()] == []


def test_the_longest_modules_are_collected_first() -> None:
    collected = subprocess.run(
        # Named in another order, with a short module first: collected longest first all the same.
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "tests/test_docs.py", *reversed(LONGEST_FIRST)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    ids = [line for line in collected.splitlines() if "::" in line]
    files = list(dict.fromkeys(nodeid.split("::")[0] for nodeid in ids))
    assert files == [*LONGEST_FIRST, "tests/test_docs.py"]
