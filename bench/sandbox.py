"""Benchmark: what the OS sandbox adds to a script call (bubblewrap, setpriv, prlimit, Landlock,
the seccomp filter).

    .venv/bin/python bench/sandbox.py [--calls 300] [--rounds 3] [--no-landlock]

The same trivial script (read the JSON arguments on stdin, print them back as JSON) run as a
plain subprocess of the same interpreter, in the sandbox without its seccomp filter, and in the
sandbox exactly as a ``script`` tool runs (``broker.handlers.sandbox.run_sandboxed``: stdin,
stdout and stderr through files, the default limits, the filter), interleaved call by call so
that all three see the same machine. Prints p50 and p99 wall time of each, what the sandbox adds
and what the seccomp filter adds, per round. No database: only the sandbox's settings are loaded.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import django  # noqa: E402
from django.conf import settings  # noqa: E402

settings.configure(
    RABS_SANDBOX={
        "bwrap": "/usr/bin/bwrap",
        "setpriv": "/usr/bin/setpriv",
        "prlimit": "/usr/bin/prlimit",
        "uid": 65534,
        "gid": 65534,
        "landlock": ""
        if "--no-landlock" in sys.argv
        else str(ROOT / "var" / "bin" / "rabs-landlock"),
    },
    RABS_SANDBOX_PYTHON=os.environ.get("RABS_SANDBOX_PYTHON", ""),
    RABS_SANDBOX_SECCOMP=str(ROOT / "var" / "bin" / "rabs-seccomp.bpf"),
)
django.setup()

# The sandbox's modules alone: the packages' __init__ would load the models (a database).
for _name in ("broker", "broker.handlers"):
    _package = sys.modules[_name] = types.ModuleType(_name)
    _package.__path__ = [str(ROOT.joinpath(*_name.split(".")))]
sandbox = importlib.import_module("broker.handlers.sandbox")

SCRIPT = "import json, sys\nprint(json.dumps({'echo': json.load(sys.stdin)}))\n"
ARGUMENTS = json.dumps({"shift": "SH-1", "hours": 8}).encode()
ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


def _bare(tool_dir: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [str(sandbox.interpreter()), "echo.py"],
        input=ARGUMENTS,
        capture_output=True,
        cwd=tool_dir,
        env=ENV,
        check=False,
    )
    elapsed = time.perf_counter() - started
    assert done.returncode == 0 and b"SH-1" in done.stdout, done.stderr
    return elapsed


def _sandboxed(tool_dir: Path, seccomp: bool = True) -> float:
    started = time.perf_counter()
    outcome = sandbox.run_sandboxed(
        command=["python", "echo.py"],
        stdin=ARGUMENTS,
        tool_dir=tool_dir,
        limits=sandbox.LIMIT_DEFAULTS,
        env=ENV,
        timeout=10,
        seccomp=seccomp,
    )
    elapsed = time.perf_counter() - started
    assert outcome.returncode == 0 and "SH-1" in outcome.stdout, outcome.stderr
    return elapsed


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-landlock", action="store_true", help="without the Landlock layer")
    options = parser.parse_args()
    problem = sandbox.sandbox_status()
    if problem:
        sys.exit(f"the sandbox cannot run here: {problem}")
    with tempfile.TemporaryDirectory() as scratch:
        tool_dir = Path(scratch)
        tool_dir.chmod(0o755)
        (tool_dir / "echo.py").write_text(SCRIPT)
        for _ in range(20):  # warm the page cache for all three
            _bare(tool_dir), _sandboxed(tool_dir, False), _sandboxed(tool_dir)
        layer = sandbox.landlock_status() or "on"
        print(f"{options.calls} calls each, interleaved; wall time in ms; Landlock: {layer}")
        print(
            "round   bare p50  p99   no-seccomp p50  p99   sandbox p50  p99"
            "   sandbox adds p50  p99   seccomp adds p50"
        )
        for number in range(1, options.rounds + 1):
            bare, plain, boxed = [], [], []
            for _ in range(options.calls):
                bare.append(_bare(tool_dir))
                plain.append(_sandboxed(tool_dir, False))
                boxed.append(_sandboxed(tool_dir))
            b50, b99 = _pct(bare, 0.5), _pct(bare, 0.99)
            p50, p99 = _pct(plain, 0.5), _pct(plain, 0.99)
            s50, s99 = _pct(boxed, 0.5), _pct(boxed, 0.99)
            print(
                f"{number:>5}   {b50:8.1f} {b99:5.1f}   {p50:14.1f} {p99:5.1f}   {s50:11.1f}"
                f" {s99:5.1f}   {s50 - b50:16.1f} {s99 - b99:5.1f}   {s50 - p50:16.1f}"
            )
        print(
            f"(mean of the last round: bare {statistics.mean(bare) * 1000:.1f}, without seccomp "
            f"{statistics.mean(plain) * 1000:.1f}, sandboxed {statistics.mean(boxed) * 1000:.1f})"
        )


if __name__ == "__main__":
    main()
