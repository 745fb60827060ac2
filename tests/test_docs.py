"""The README and docs/ stay short and name only what exists: every `manage.py <command>`,
`make <target>`, `bench/<file>`, `python -m <module>` and repository path they show, and every
page and heading they link to. docs/performance.md holds one section per benchmark, each with its
command, the date it was recorded and a table of figures against their targets."""

from __future__ import annotations

import importlib.util
import io
import re
from pathlib import Path

import pytest
from django.core.management import get_commands

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PAGES = [*DOCS, ROOT / "CHANGELOG.md"]
TOP_LEVEL = ("rabs", "brainframe", "broker", "dashboard", "agents_vm", "tests", "bench", "eval")

# Lines a page may have. The README is an entry point; docs/performance.md holds current figures
# only (history goes to CHANGELOG.md); any other page past 400 lines covers more than one concern
# and is split by concept. CHANGELOG.md has no budget.
LINE_BUDGETS = {"README.md": 200, "performance.md": 250}
DEFAULT_LINE_BUDGET = 400


def _code(page: Path) -> list[str]:
    """The page's code: inline spans and fenced blocks."""
    text = page.read_text()
    fenced = re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.DOTALL)
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.DOTALL))
    return fenced + inline


def _make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][a-z-]*):", makefile, flags=re.MULTILINE))


def _runnable(module: str) -> bool:
    """`python -m module` would run: a module or a package with `__main__` in the repository, or
    an installed one."""
    path = ROOT.joinpath(*module.split("."))
    if path.with_suffix(".py").is_file() or (path / "__main__.py").is_file():
        return True
    if (ROOT / module.split(".")[0]).is_dir():
        return False
    try:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.submodule_search_locations is not None:
            spec = importlib.util.find_spec(f"{module}.__main__")
    except ModuleNotFoundError:
        return False
    return spec is not None


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings (lower case, punctuation dropped, spaces as
    hyphens, a repeated heading numbered)."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    anchors: set[str] = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", text, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchor, n = slug, 0
        while anchor in anchors:
            n += 1
            anchor = f"{slug}-{n}"
        anchors.add(anchor)
    return anchors


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_pages_stay_within_their_line_budget(page: Path) -> None:
    budget = LINE_BUDGETS.get(page.name, DEFAULT_LINE_BUDGET)
    lines = len(page.read_text().splitlines())
    assert lines <= budget, f"{page.name} has {lines} lines, its budget is {budget}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_named_commands_exist(page: Path) -> None:
    """Commands in prose count as well as in code, except `make`, which prose uses as a verb."""
    commands, targets, text = set(get_commands()), _make_targets(), page.read_text()
    missing = [
        f"manage.py {c}"
        for c in re.findall(r"manage\.py ([a-z_][a-z0-9_]*)", text)
        if c not in commands
    ]
    missing += [
        f"bench/{b}"
        for b in re.findall(r"\bbench/([\w.]+\.py)", text)
        if not (ROOT / "bench" / b).exists()
    ]
    missing += [
        f"python -m {m}"
        for m in re.findall(r"python3? -m ([A-Za-z_][\w.]*\w)", text)
        if not _runnable(m)
    ]
    for code in _code(page):
        missing += [
            f"make {t}" for t in re.findall(r"\bmake ([a-z][a-z-]*)", code) if t not in targets
        ]
    assert missing == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_named_paths_and_links_exist(page: Path) -> None:
    missing = []
    for code in _code(page):
        for token in re.findall(r"[\w./-]+", code):
            path = token.split("::")[0].rstrip(".,")
            parts = path.split("/")
            named = len(parts) > 1 and parts[0] in TOP_LEVEL and "." in parts[-1]
            if named and not (ROOT / path).exists():
                missing.append(path)
    for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", page.read_text()):
        if target.startswith(("http://", "https://")):
            continue
        linked = page.parent / target if target else page
        if not linked.exists():
            missing.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            missing.append(f"{target}#{anchor}")
    assert missing == []


def test_performance_holds_one_table_of_current_figures_per_benchmark() -> None:
    """Each `##` section of docs/performance.md names its benchmark's command, says when it was
    recorded and sets its figures against targets in a table."""
    text = (ROOT / "docs" / "performance.md").read_text()
    sections = re.split(r"^## ", text, flags=re.MULTILINE)[1:]
    assert len(sections) >= 10
    incomplete = [
        section.splitlines()[0]
        for section in sections
        if not (
            re.search(r"\bbench/\w+\.py", section)
            and re.search(r"\b20\d\d-\d\d-\d\d\b", section)
            and re.search(r"^\|.*\|\n\|[-| ]+\|$", section, flags=re.MULTILINE)
            and "target" in section
        )
    ]
    assert incomplete == []


def test_the_event_reference_is_generated_from_the_definitions() -> None:
    """docs/events.md lists every event with its payload as defined (manage.py events_doc)."""
    from django.core.management import call_command

    from brainframe.events import EVENT_TYPES

    call_command("events_doc", "--check", stdout=io.StringIO())
    page = (ROOT / "docs" / "events.md").read_text()
    assert all(f"`{name}`" in page for name in EVENT_TYPES)
