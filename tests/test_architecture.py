"""The shape of the code: layers that point one way, no import cycles, events and queued tasks
defined in one place, imports at the top of modules unless there is a stated reason."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("rabs", "brainframe", "broker", "dashboard", "agents_vm")


def _sources() -> list[Path]:
    return [
        path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
    ]


def test_the_import_contract_holds() -> None:
    """`lint-imports` (pyproject.toml): rabs → dashboard → broker → brainframe, the services'
    concepts in their layers, safety's, the agent side's, the board's and rabs's parts in theirs,
    agents_vm on its own, no import cycle at any depth."""
    result = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "8 kept, 0 broken" in result.stdout
    assert "Services by concept" in result.stdout


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    return [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]


def test_brainframe_names_neither_broker_nor_dashboard() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in _sources()
        if path.relative_to(ROOT).parts[0] == "brainframe"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in _imported(node)
        if name.split(".")[0] in ("broker", "dashboard")
    ]
    assert offenders == []


def _nested_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found += [
                inner for inner in ast.walk(node) if isinstance(inner, ast.Import | ast.ImportFrom)
            ]
    return found


def _block_above(lines: list[str], lineno: int) -> list[str]:
    """The import's line, the imports and blank lines right above it, and the line above them."""
    first = lineno - 1
    while first > 0 and (
        not lines[first - 1].strip()
        or lines[first - 1].strip().startswith(("import ", "from ", "#", ")"))
        or lines[first - 1].startswith("        ")
    ):
        first -= 1
    return lines[max(0, first - 1) : lineno]


def test_imports_inside_functions_say_why() -> None:
    """An import inside a function (a slow optional library, an app registry not ready yet) has
    its reason in a comment on its line or just above its block of imports, in its function's
    docstring, or (for a whole module of them) in the module's docstring."""
    unexplained = []
    for path in _sources():
        text = path.read_text()
        lines = text.splitlines()
        tree = ast.parse(text)
        if "imported inside" in (ast.get_docstring(tree) or ""):
            continue
        functions = [
            n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        ]
        for node in _nested_imports(tree):
            if any("#" in line for line in _block_above(lines, node.lineno)):
                continue
            owner = min(
                (f for f in functions if f.lineno <= node.lineno <= (f.end_lineno or 0)),
                key=lambda f: (f.end_lineno or 0) - f.lineno,
            )
            docstring = ast.get_docstring(owner) or ""
            if "import" in docstring:
                continue
            unexplained.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert unexplained == []


def test_every_event_type_is_in_the_one_list() -> None:
    from brainframe import events

    defined = {
        value
        for value in vars(events).values()
        if isinstance(value, type) and issubclass(value, events.Event) and "NAME" in vars(value)
    }
    assert set(events.EVENT_TYPES.values()) == defined
    names = {
        value
        for key, value in vars(events).items()
        if key.isupper() and isinstance(value, str) and ":" in value
    }
    assert names <= set(events.EVENT_TYPES)  # seed 001's names are all typed


@pytest.mark.parametrize(
    "name",
    [
        "brainframe.queue.RUN_SCHEDULED_JOB",
        "brainframe.queue.EMBED_ROWS",
        "brainframe.queue.CLASSIFY_ORIGIN",
        "brainframe.queue.RECORD_OBSERVATION",
        "broker.queue.EXECUTE_APPROVED_CALL",
        "broker.queue.NOTIFY_APPROVAL",
    ],
)
def test_every_queued_task_name_is_a_registered_task(name: str) -> None:
    import importlib

    from brainframe.queue import task

    module, constant = name.rsplit(".", 1)
    registered = getattr(importlib.import_module(module), constant)
    assert task(registered).name == registered


def test_no_module_is_over_500_lines_but_data_and_migrations() -> None:
    data = {"brainframe/demo_data.py", "brainframe/bucket_hints.py"}
    long = {
        str(path.relative_to(ROOT)): n
        for path in _sources()
        if (n := len(path.read_text().splitlines())) > 520
        and str(path.relative_to(ROOT)) not in data
    }
    assert long == {}
