"""Regular expressions on Hyperscan, with Python's ``re`` keeping the last word.

Hyperscan scans a text for many expressions at once, at memory speed, but lacks some of
``re``'s constructs (lookarounds, back-references). Expressions are therefore compiled with
``HS_FLAG_PREFILTER``: Hyperscan accepts them all and may report a superset of the matches,
and every candidate it reports is confirmed with ``re`` on the same text. The answer is always
exactly ``re``'s; the time is Hyperscan's when, as usual, nothing matches.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from functools import lru_cache
from pathlib import Path

import hyperscan

UNICODE = hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_UCP
PREFILTER = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_SINGLEMATCH

_scratch = threading.local()
_HS_VERSION = getattr(hyperscan, "__version__", "")


def database(expressions: list[str], flags: list[int]) -> hyperscan.Database:
    """One block-mode database; expression ``i`` reports id ``i``.

    Compiling takes up to a few seconds for the Guardian's patterns, loading a compiled one a
    fraction of a millisecond: compiled databases are kept under ``var/cache/hyperscan`` (keyed
    by the expressions, their flags and the library version; a database that will not load on
    this CPU is compiled again), so only the first process on a machine pays.
    """
    expressions = [
        widened(e) if f & hyperscan.HS_FLAG_PREFILTER else e
        for e, f in zip(expressions, flags, strict=True)
    ]
    key = hashlib.sha256(json.dumps([_HS_VERSION, expressions, flags]).encode()).hexdigest()
    path = _cache_dir() / f"{key}.db"
    try:
        return hyperscan.loadb(path.read_bytes(), hyperscan.HS_MODE_BLOCK)
    except (OSError, hyperscan.error):
        pass
    db = hyperscan.Database()
    db.compile(
        expressions=[e.encode() for e in expressions],
        ids=list(range(len(expressions))),
        elements=len(expressions),
        flags=flags,
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(hyperscan.dumpb(db))
        partial.replace(path)  # atomic: a reader never sees half a database
    except OSError:  # a read-only checkout still works, compiling each time
        pass
    return db


_BOUNDED = re.compile(r"\{(\d*),(\d+)\}")


def widened(expression: str) -> str:
    """``expression`` with every bounded repeat ``{m,n}`` opened to ``{m,}``: a language that
    holds the original's, which is all a prefilter must report. Hyperscan unrolls a bounded
    repeat of "any character" in UTF-8 into an automaton per count, and compiling the
    Guardian's ``[\\s\\S]{0,200}`` took minutes; opened, its whole set compiles in about a
    second. Escaped braces and braces inside a character class are left as they are."""
    out: list[str] = []
    i, first = 0, -1  # in a character class: where its first member is (a "]" there is one)
    while i < len(expression):
        c = expression[i]
        if c == "\\":
            out.append(expression[i : i + 2])
            i += 2
            continue
        if first >= 0:
            if c == "]" and i > first:
                first = -1
        elif c == "[":
            first = i + (2 if expression[i + 1 : i + 2] == "^" else 1)
        elif c == "{" and (bounded := _BOUNDED.match(expression, i)):
            out.append(f"{{{bounded[1] or 0},}}")
            i = bounded.end()
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _cache_dir() -> Path:
    configured = os.environ.get("RABS_VAR_DIR")
    root = Path(configured) if configured else Path(__file__).resolve().parents[2] / "var"
    return root / "cache" / "hyperscan"


def utf8(text: str) -> bytes:
    return text.encode("utf-8", "replace")  # lone surrogates: Hyperscan needs valid UTF-8


_SCRATCHES_PER_THREAD = 128


def scan(db: hyperscan.Database, data: bytes) -> set[int]:
    """The ids of the expressions of ``db`` that (may) match somewhere in ``data``."""
    # Scratch space is per thread and per database. The entry holds the database too: while it
    # is cached no other database can be given its id (a scratch used with a database it was
    # not made for is refused: "error code -1"). Bounded: databases come and go with the
    # patterns' cache.
    try:
        scratches: dict[int, tuple[hyperscan.Database, hyperscan.Scratch]] = _scratch.by_db
    except AttributeError:
        scratches = _scratch.by_db = {}
    entry = scratches.get(id(db))
    if entry is None:
        if len(scratches) >= _SCRATCHES_PER_THREAD:
            scratches.clear()
        entry = scratches[id(db)] = (db, hyperscan.Scratch(db))
    found: set[int] = set()
    db.scan(data, match_event_handler=_found, scratch=entry[1], context=found)
    return found


def _found(i: int, _start: int, _end: int, _flags: int, found: object) -> None:
    found.add(i)  # type: ignore[attr-defined]  # the set scan passed as context


class Pattern:
    """One ``re`` pattern whose ``search`` is screened by Hyperscan first."""

    def __init__(self, expression: str, flags: int = 0) -> None:
        self.regex = re.compile(expression, flags)
        # re's case-insensitive matching knows folds Hyperscan may not (ſ/s, K/k): for such
        # patterns only ASCII texts are screened.
        self.caseless = bool(flags & re.IGNORECASE) or expression.startswith("(?i)")
        hs_flags = PREFILTER | UNICODE
        if flags & re.IGNORECASE:
            hs_flags |= hyperscan.HS_FLAG_CASELESS
        if flags & re.DOTALL:
            hs_flags |= hyperscan.HS_FLAG_DOTALL
        if flags & re.MULTILINE:
            hs_flags |= hyperscan.HS_FLAG_MULTILINE
        try:
            self.db: hyperscan.Database | None = database([expression], [hs_flags])
        except hyperscan.error:  # a construct even the prefilter cannot take: re alone
            self.db = None

    def search(self, text: str) -> bool:
        screened = self.db is not None and (text.isascii() or not self.caseless)
        if screened and not scan(self.db, utf8(text)):  # type: ignore[arg-type]
            return False
        return self.regex.search(text) is not None


@lru_cache(maxsize=512)
def compiled(expression: str, flags: int = 0) -> Pattern:
    return Pattern(expression, flags)
