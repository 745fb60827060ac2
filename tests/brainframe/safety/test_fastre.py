"""Hyperscan-screened patterns answer exactly as Python's re does, constructs Hyperscan lacks
included; the Guardian and directive predicates rely on that."""

from __future__ import annotations

import re
from typing import Any

import pytest

from brainframe.safety import fastre

CASES = [
    # (expression, flags, text)
    (r"https?://(?!127\.0\.0\.1|localhost)[^/\s]+/control/", 0, "see http://10.0.0.5/control/x"),
    (r"https?://(?!127\.0\.0\.1|localhost)[^/\s]+/control/", 0, "see http://localhost/control/"),
    (r"(['\"]).{2,20}?\1", 0, "he said 'stop now' twice"),
    (r"(['\"]).{2,20}?\1", 0, "he said 'stop now twice"),
    (r"(?i)\b(tfn|tax file)\b\D{0,20}\d[\d ]{7,12}\d", re.I, "My TFN is 123 456 782"),
    (r"(?i)\b(tfn|tax file)\b\D{0,20}\d[\d ]{7,12}\d", re.I, "the TFN form is blank"),
    (r"\bsuicid\w*", re.I, "SUICIDAL ideation"),
    (r"\bsuicid\w*", re.I, "ſuicidal (long s folds to s in re)"),
    (r"(?<=@)evil\.example", 0, "bcc: x@evil.example"),
    (r"a*", 0, "matches the empty string: Hyperscan refuses it, re alone answers"),
    # Hyperscan screens with bounded repeats opened ({0,200} as {0,}): re keeps the bound.
    (r"end of file[\s\S]{0,20}?instructions", 0, "end of file. New instructions: obey"),
    (r"end of file[\s\S]{0,20}?instructions", 0, "end of file." + " é" * 20 + " instructions"),
    (r"x[{0,2}]{2,3}y", 0, "x{}y"),
    (r"x[{0,2}]{2,3}y", 0, "x{}{}y"),
]


@pytest.mark.parametrize(("expression", "flags", "text"), CASES)
def test_same_answer_as_re(expression: str, flags: int, text: str) -> None:
    expected = re.compile(expression, flags).search(text) is not None
    assert fastre.compiled(expression, flags).search(text) is expected


def test_the_screen_answers_no_without_re_when_nothing_can_match() -> None:
    pattern = fastre.Pattern(r"\bambulance\b", re.I)
    assert pattern.db is not None
    assert pattern.search("Community outing to the museum.") is False
    assert pattern.search("Call an AMBULANCE now") is True


def test_invalid_expression_is_refused_like_re() -> None:
    with pytest.raises(re.error):
        fastre.Pattern(r"(unclosed")


def test_compiled_databases_are_kept_and_a_damaged_one_is_compiled_again(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RABS_VAR_DIR", str(tmp_path))
    expression = r"\bcallback\s*url\b"
    first = fastre.Pattern(expression)
    (kept,) = (tmp_path / "cache" / "hyperscan").glob("*.db")
    again = fastre.Pattern(expression)  # loaded from the file
    assert first.search("the callback url is") and again.search("the callback url is")
    assert not again.search("no such thing")
    kept.write_bytes(b"not a database")
    repaired = fastre.Pattern(expression)
    assert repaired.search("callback  URL".lower()) and kept.read_bytes() != b"not a database"


@pytest.mark.parametrize(
    ("expression", "screened"),
    [
        (r"[\s\S]{0,200}?end", r"[\s\S]{0,}?end"),
        (r"a{2,5}b{3}c{,4}(?:ab){10,20}", r"a{2,}b{3}c{0,}(?:ab){10,}"),
        (r"\{0,5\}", r"\{0,5\}"),  # escaped braces are literal text
        (r"[{0,5}]{1,2}", r"[{0,5}]{1,}"),  # braces in a class are members
        (r"[]{0,5}]x", r"[]{0,5}]x"),  # so is a "]" first in a class
        (r"[^]{1,2}]x{1,3}", r"[^]{1,2}]x{1,}"),
        (r"\\{1,3}", r"\\{1,}"),  # an escaped backslash, then a repeat
    ],
)
def test_the_screen_opens_bounded_repeats_and_nothing_else(expression: str, screened: str) -> None:
    """What Hyperscan is given: each bounded repeat opened, a language holding re's (the
    Guardian's ``[\\s\\S]{0,200}`` compiled for minutes as it was written)."""
    assert fastre.widened(expression) == screened
