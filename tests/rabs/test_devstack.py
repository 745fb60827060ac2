"""Where ``make run``'s beat keeps its schedule (the multi-process test covers ``launched``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rabs.stack.devstack import beat_command


def _schedule(argv: list[str]) -> str:
    return argv[argv.index("-s") + 1]


def test_beat_schedule_defaults_to_the_var_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RABS_VAR_DIR", str(tmp_path))
    assert _schedule(beat_command({})) == str(tmp_path.resolve() / "celerybeat-schedule")


def test_beat_schedule_can_be_named(tmp_path: Path) -> None:
    named = str(tmp_path / "elsewhere" / "schedule")
    assert _schedule(beat_command({"RABS_BEAT_SCHEDULE": named})) == named
