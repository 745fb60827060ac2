"""The README and docs/ name only what exists: every `manage.py <command>`, `make <target>`,
`bench/<file>` and repository path they show in code, and every page they link to."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from django.core.management import get_commands

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP_LEVEL = ("rabs", "brainframe", "broker", "dashboard", "agents_vm", "tests", "bench", "eval")


def _code(page: Path) -> list[str]:
    """The page's code: inline spans and fenced blocks."""
    text = page.read_text()
    fenced = re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.DOTALL)
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.DOTALL))
    return fenced + inline


def _make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][a-z-]*):", makefile, flags=re.MULTILINE))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_named_commands_exist(page: Path) -> None:
    commands, targets = set(get_commands()), _make_targets()
    missing = []
    for code in _code(page):
        missing += [
            f"manage.py {c}" for c in re.findall(r"manage\.py ([a-z_]+)", code) if c not in commands
        ]
        missing += [
            f"make {t}" for t in re.findall(r"\bmake ([a-z][a-z-]*)", code) if t not in targets
        ]
        missing += [
            f"bench/{b}"
            for b in re.findall(r"bench/([\w.]+\.py)", code)
            if not (ROOT / "bench" / b).exists()
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
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
        if not target.startswith(("http://", "https://")) and not (page.parent / target).exists():
            missing.append(target)
    assert missing == []


def test_the_readme_stays_short() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200


def test_the_event_reference_is_generated_from_the_definitions() -> None:
    """docs/events.md lists every event with its payload as defined (manage.py events_doc)."""
    from django.core.management import call_command

    from brainframe.events import EVENT_TYPES

    call_command("events_doc", "--check", stdout=io.StringIO())
    page = (ROOT / "docs" / "events.md").read_text()
    assert all(f"`{name}`" in page for name in EVENT_TYPES)
