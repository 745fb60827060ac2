"""The Guardian: deterministic threat assessment of untrusted text (seed 001 "Guardian").

``final_risk = base_risk × trust_multiplier`` (capped at 1.0); block at ≥ 0.8, flag at ≥ 0.5,
otherwise allow. With no pattern the base risk is 0.1. When several categories match, the base
is the highest category's risk plus 0.1 for each further category (capped at 1.0).

Text is normalised first: percent-encoding, HTML entities and base64 runs are decoded; Unicode
is folded (NFKC, diacritics, Cyrillic/Greek look-alikes, zero-width and control characters);
letter-spaced words are joined; and every view is also read in ROT13. Patterns match the
*compact* view (letters and digits only, digits read as the letters they imitate), which sees
through spacing, separators and leetspeak. Text inside quotation marks is content, not a
command ("content ≠ command"): a phrase that appears only inside quotes does not count — unless
the text outside the quotes hands them to a model to work on (translate, summarise, proofread…).

Matching runs on Hyperscan: every pattern is compiled into one multi-pattern database per kind
of view (approximately, as a prefilter), so a text is scanned once per view whatever the number
of patterns; each candidate it reports is then confirmed with Python's ``re`` on that view, so
the verdict is exactly the patterns' ``re`` semantics. The costlier normalisation steps
(letter-spacing, quotation removal, base64) run only when the same scan says they can apply.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

import hyperscan

from brainframe.safety.fastre import PREFILTER, UNICODE, database, scan, utf8
from brainframe.safety.learned import detector
from brainframe.safety.patterns import PATTERNS, ThreatPattern

BLOCK_AT = 0.8
FLAG_AT = 0.5
NO_MATCH_RISK = 0.1

#: Trust levels and their multipliers. The seed's examples fix standard (1.0), untrusted (1.5),
#: hostile (2.0) and operator (0.6); system content is the most trusted.
TRUST_MULTIPLIERS = {
    "system": 0.4,
    "operator": 0.6,
    "standard": 1.0,
    "untrusted": 1.5,
    "hostile": 2.0,
}

_CONFUSABLES = str.maketrans(
    {
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "e",
        "к": "k",
        "м": "m",
        "н": "h",
        "о": "o",
        "р": "p",
        "с": "c",
        "т": "t",
        "у": "y",
        "х": "x",
        "і": "i",
        "ї": "i",
        "ј": "j",
        "ѕ": "s",
        "ԁ": "d",
        "ԛ": "q",
        "ԝ": "w",
        "ɡ": "g",
        "А": "a",
        "В": "b",
        "Е": "e",
        "К": "k",
        "М": "m",
        "Н": "h",
        "О": "o",
        "Р": "p",
        "С": "c",
        "Т": "t",
        "Х": "x",
        "І": "i",
        "Ј": "j",
        "Ѕ": "s",
        "α": "a",
        "β": "b",
        "ε": "e",
        "ι": "i",
        "κ": "k",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "Α": "a",
        "Β": "b",
        "Ε": "e",
        "Ι": "i",
        "Κ": "k",
        "Μ": "m",
        "Ν": "n",
        "Ο": "o",
        "Ρ": "p",
        "Τ": "t",
        "Χ": "x",
        "Υ": "y",
        "Ζ": "z",
    }
)
_INVISIBLE = re.compile(
    r"[\u200b-\u200f\u2028-\u202f\u2060-\u206f\ufeff\u00ad\x00-\x08\x0b-\x1f\x7f]"
)
_QUOTED = re.compile(r"(?<![a-z0-9])(['\"‘’“”`])(?=\S)(.{2,200}?)(?<=\S)\1(?![a-z0-9])", re.S)
# A request that hands the quoted text to a model to work on ("translate: '…'", "summarise
# this email: \"…\"") makes the quotation something a model will read: it is not set aside.
_PROCESS_QUOTE = re.compile(
    r"\b(?:translate|summari[sz]e|proofread|paraphrase|rewrite|reword|forward|reply to|"
    r"respond to|analy[sz]e|classify|read out|to file|file this)\b"
)
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{24,}={0,2}")
_LETTER_SPACED = re.compile(r"(?:\b\w\b[ .\-_]){4,}\b\w\b")
_LEET = {
    "a": "[a4@]",
    "e": "[e3]",
    "i": "[i1l!]",
    "l": "[l1i]",
    "o": "[o0]",
    "s": "[s5$]",
    "t": "[t7+]",
    "g": "[g9]",
    "b": "[b8]",
}


@dataclass(frozen=True)
class Assessment:
    risk: float
    action: str  # allow / flag / block
    patterns: list[str]
    categories: list[str]
    base_risk: float
    trust: str
    multiplier: float
    decoded: list[str] = field(default_factory=list)
    #: The learned stage's score, when it ran (no pattern matched and the text called for it).
    learned: float | None = None

    def as_dict(self) -> dict[str, object]:
        answer: dict[str, object] = {
            "detector": "guardian",
            "risk": self.risk,
            "action": self.action,
            "patterns": self.patterns,
            "categories": self.categories,
            "base_risk": self.base_risk,
            "trust": self.trust,
            "multiplier": self.multiplier,
        }
        if self.learned is not None:
            answer["learned"] = self.learned
        return answer


def _leet_regex(expression: str) -> str:
    """Turn a pattern into a regex over the compact view (see safety.patterns)."""
    out, depth = [], 0
    for char in expression:
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        if depth == 0 and char in _LEET:
            out.append(_LEET[char])
        elif depth == 0 and char == "_":
            out.append("[a-z0-9]{0,8}?")
        elif depth == 0 and char == "~":
            out.append("[a-z0-9]{0,40}?")
        else:
            out.append(char)
    return "".join(out)


_ALNUM = b"abcdefghijklmnopqrstuvwxyz0123456789"
#: Deleting every other byte from a lower-cased ASCII view gives its compact form.
_NOT_ALNUM = bytes(b for b in range(256) if b not in _ALNUM)
_ROT13_BYTES = bytes.maketrans(b"abcdefghijklmnopqrstuvwxyz", b"nopqrstuvwxyzabcdefghijklm")

# Gates: whether a normalisation step can change anything in a folded text.
_GATE_LETTER_SPACED, _GATE_QUOTED = 0, 1


@dataclass(frozen=True)
class _Engine:
    compact: tuple[tuple[ThreatPattern, re.Pattern[str]], ...]  # ids = positions
    folded: tuple[tuple[ThreatPattern, re.Pattern[str]], ...]
    compact_db: hyperscan.Database  # over compact views (ASCII bytes)
    folded_db: hyperscan.Database  # over folded views (UTF-8)
    gate_db: hyperscan.Database  # letter spacing and quotations, over folded text (UTF-8)
    base64_db: hyperscan.Database  # base64 runs, over the raw text's bytes


@lru_cache(maxsize=1)
def _engine() -> _Engine:
    compact, folded = [], []
    for p in PATTERNS:
        if p.expression.startswith("re:"):
            folded.append((p, re.compile(p.expression[3:])))
        else:
            compact.append((p, re.compile(_leet_regex(p.expression))))
    return _Engine(
        compact=tuple(compact),
        folded=tuple(folded),
        compact_db=database([r.pattern for _, r in compact], [PREFILTER] * len(compact)),
        folded_db=database([r.pattern for _, r in folded], [PREFILTER | UNICODE] * len(folded)),
        gate_db=database(
            [_LETTER_SPACED.pattern, _QUOTED.pattern],
            [PREFILTER | UNICODE, PREFILTER | UNICODE | hyperscan.HS_FLAG_DOTALL],
        ),
        base64_db=database([_BASE64_RUN.pattern], [hyperscan.HS_FLAG_SINGLEMATCH]),
    )


def _fold(text: str) -> str:
    if text.isascii():  # nothing to fold but case and control characters
        return _INVISIBLE.sub("", text).lower()
    text = unicodedata.normalize("NFKC", text).translate(_CONFUSABLES)
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return _INVISIBLE.sub("", text).lower()


def _join_letter_spacing(text: str) -> str:
    # "i g n o r e  a l l" → "ignore all": letters separated by single spaces/dots form words.
    def join(match: re.Match[str]) -> str:
        return re.sub(r"(?<=\w)[ .\-_](?=\w)", "", match.group(0))

    text = re.sub(r"(?<=\w) {2,}(?=\w)", " \u2003 ", text)  # a double space separates words
    return _LETTER_SPACED.sub(join, text).replace("\u2003", "")


def _decodings(text: str) -> list[str]:
    """Other readings of the raw text: URL, HTML entity and base64 decodings."""
    found = []
    if "%" in text:
        decoded = unquote(text)
        if decoded != text:
            found.append(decoded)
    if "&" in text:
        decoded = html.unescape(text)
        if decoded != text:
            found.append(decoded)
    runs = (
        _BASE64_RUN.findall(text)
        if scan(_engine().base64_db, text.encode("utf-8", "surrogatepass"))
        else []
    )
    for run in runs:
        try:
            raw = base64.b64decode(run + "=" * (-len(run) % 4), validate=False)
            decoded = raw.decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        printable = sum(ch.isprintable() for ch in decoded) / max(1, len(decoded))
        if printable > 0.95 and re.search(r"[a-zA-Z]{3,} [a-zA-Z]{2,}", decoded):
            found.append(decoded)
    return found


def _views(text: str) -> tuple[list[str], list[bytes], list[str]]:
    """(folded views, compact views as ASCII bytes, names of decodings applied)."""
    engine = _engine()
    sources = [(text, "")]
    sources += [(d, "decoded") for d in _decodings(text)]
    folded_views: list[str] = []
    compact: list[bytes] = []
    applied: list[str] = []
    for source, how in sources:
        folded = _fold(source)
        gates = scan(engine.gate_db, utf8(folded))
        if _GATE_LETTER_SPACED in gates:
            folded = _join_letter_spacing(folded)
            gates = scan(engine.gate_db, utf8(folded))
        unquoted = _QUOTED.sub(" ", folded) if _GATE_QUOTED in gates else folded
        if unquoted is not folded and _PROCESS_QUOTE.search(unquoted):
            unquoted = folded  # the quotation is handed to a model: read it
        squeezed = unquoted.encode("ascii", "ignore").translate(None, _NOT_ALNUM)
        folded_views += [unquoted, codecs.decode(unquoted, "rot13")]
        compact += [squeezed, squeezed.translate(_ROT13_BYTES)]
        applied += [how, "rot13"] if how else ["rot13"]
    return folded_views, compact, sorted(set(applied))


_ALNUM_CHARS = frozenset(_ALNUM.decode())
# A negation shortly before a match, in the same sentence, with nothing that turns the
# sentence around in between: "the assistant must never reveal its system prompt, share
# credentials …" describes a rule; "don't worry about that, just ignore the rules" does not.
_NEGATION = re.compile(
    r"\b(?:never|not|cannot|can't|don't|doesn't|won't|mustn't|shouldn't|no longer|refuses?|"
    r"refused|prohibits?|prohibited|forbids?|forbidden|prevents?|prevented|blocks?|blocked|"
    r"denies|denied|disallows?|disallowed|"
    r"detects?|detected|against)\b(?!\s+(?:mind|hesitate|forget)\b)"
)
_TURN = re.compile(r"\b(?:but|just|instead|now|then|however|rather|so|anyway)\b")
_SENTENCE_END = re.compile(r"[.!?;:\n\]\[>|]")


def _negated(folded: str, start: int) -> bool:
    before = folded[max(0, start - 80) : start]
    ends = [m.end() for m in _SENTENCE_END.finditer(before)]
    if ends:
        before = before[ends[-1] :]
    before = " ".join(before.split()[-8:])
    negations = list(_NEGATION.finditer(before))
    return bool(negations) and not _TURN.search(before, negations[-1].end())


_WORD_AT = re.compile(r"[a-z]+")
_NARRATED = re.compile(r"(?:ed|es)$")
_BASE_FORMS = frozenset(("need", "feed", "seed", "speed", "bleed", "does", "goes", "yes", "uses"))


# Someone else being made to do it, reported in the third person or the past: "input that
# causes the model to ignore its instructions", "models asked to repeat their system prompt".
# Only inflected verbs: the imperative "tell the model to ignore …" is still an instruction.
_MODEL = r"(?:models?|llms?|assistants?|chatbots?|agents?|ai|systems?)"
_CAUSED = (
    r"(?:caus(?:es|ed|ing)|ask(?:s|ed|ing)|told|tell(?:s|ing)|trick(?:s|ed|ing)|"
    r"convinc(?:es|ed|ing)|persuad(?:es|ed|ing)|gets|got|getting|makes|made|making|leads|led|"
    r"leading|instruct(?:s|ed|ing)|prompt(?:s|ed|ing)|coax(?:es|ed|ing)|"
    r"manipulat(?:es|ed|ing)|forc(?:es|ed|ing))"
)
_REPORTED = re.compile(
    rf"(?:\b{_CAUSED}\s+(?:(?:the|a|an|its|their|target|victim)\s+){{0,2}}{_MODEL}|"
    rf"\b{_MODEL}\s+(?:(?:is|are|was|were|being|been|get|got)\s+)?{_CAUSED})"
    r"\s+(?:\w+\s+){0,2}?to\s+$"
)


def _reported(folded: str, start: int) -> bool:
    before = folded[max(0, start - 80) : start]
    ends = [m.end() for m in _SENTENCE_END.finditer(before)]
    if ends:
        before = before[ends[-1] :]
    return bool(_REPORTED.search(" ".join(before.split()[-8:]) + " "))


def _narrated(folded: str, start: int) -> bool:
    """The matched verb is in the past or third person ("removed", "ignores its rules"): a text
    that tells what happened or what something does, not an instruction."""
    word = _WORD_AT.match(folded, start)
    if word is None:
        return False
    text = word.group()
    return len(text) > 4 and bool(_NARRATED.search(text)) and text not in _BASE_FORMS


def argument_strings(value: Any) -> list[str]:
    """Every string in a JSON value (nested), in order: the free text of a tool call's
    arguments, which the Guardian reads as one text, one string per line."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in argument_strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in argument_strings(item)]
    return []


#: The learned stage runs on texts from untrusted sources, and on any text at least this long
#: (a short argument that matched no pattern is rarely an attack; a long one may be a pasted
#: jailbreak). ``assess(…, learned=True/False)`` overrides.
LEARNED_MIN_CHARS = 256
LEARNED_CATEGORY = "learned_injection"
LEARNED_PATTERN = "learned:injection"


def learned_base(score: float, threshold: float) -> float:
    """A learned score as a base risk: below the model's threshold nothing (the no-match 0.1);
    from it 0.5 (a flag at standard and untrusted trust, a block only for hostile sources); from
    0.9, 0.6 (a flag at standard, a block from untrusted). The learned stage alone never blocks a
    standard source's text: it sends it to a reviewer."""
    if score < threshold:
        return NO_MATCH_RISK
    return 0.6 if score >= 0.9 else 0.5


def _learned_readings(text: str) -> list[str]:
    """What the learned stage reads: the text with its percent-encoding and HTML entities
    decoded, and each base64 run in it decoded."""
    whole = html.unescape(unquote(text)) if ("%" in text or "&" in text) else text
    return [whole, *(d for d in _decodings(text) if d not in (unquote(text), html.unescape(text)))]


def _learned_applies(learned: bool | None, trust: str, text: str) -> bool:
    if learned is not None:
        return learned
    return trust in ("untrusted", "hostile") or len(text) >= LEARNED_MIN_CHARS


def assess(text: str, trust: str = "standard", *, learned: bool | None = None) -> Assessment:
    """Assess one text from a source of the given trust level: the patterns, then — where no
    pattern matched and ``_learned_applies`` — the learned stage (``brainframe.safety.learned``)."""
    if trust not in TRUST_MULTIPLIERS:
        raise ValueError(f"unknown trust level {trust!r}; one of {sorted(TRUST_MULTIPLIERS)}")
    engine = _engine()
    folded_views, compact_views, applied = _views(text[:65536])
    matched: dict[str, ThreatPattern] = {}
    # Hyperscan names the candidates; Python's re decides on the view it was found in, and a
    # match counts unless every occurrence of it is negated ("must never reveal …").
    for view, folded in zip(compact_views, folded_views, strict=True):
        positions: list[int] | None = None
        for i in scan(engine.compact_db, view):
            pattern, regex = engine.compact[i]
            if pattern.name in matched:
                continue
            for match in regex.finditer(view.decode("ascii")):
                if positions is None:  # compact index → folded index, built when needed
                    positions = [k for k, c in enumerate(folded) if c in _ALNUM_CHARS]
                at, end = positions[match.start()], positions[match.end() - 1] + 1
                if not (
                    _negated(folded, at)
                    or _narrated(folded, at)
                    or _reported(folded, at)
                    or _NEGATION.search(folded, at, end)  # "the assistant must never reveal …"
                ):
                    matched[pattern.name] = pattern
                    break
    for text_view in folded_views:
        for i in scan(engine.folded_db, utf8(text_view)):
            pattern, regex = engine.folded[i]
            if pattern.name in matched:
                continue
            if any(not _negated(text_view, m.start()) for m in regex.finditer(text_view)):
                matched[pattern.name] = pattern
    if matched:
        by_category: dict[str, float] = {}
        for pattern in matched.values():
            by_category[pattern.category] = max(
                by_category.get(pattern.category, 0.0), pattern.base_risk
            )
        base = min(1.0, max(by_category.values()) + 0.1 * (len(by_category) - 1))
    else:
        by_category, base = {}, NO_MATCH_RISK
    score = None
    if not matched and _learned_applies(learned, trust, text):
        model = detector()
        score = round(max(model.scores(_learned_readings(text[:65536]))), 4)
        base = learned_base(score, model.threshold)
        if base > NO_MATCH_RISK:
            by_category = {LEARNED_CATEGORY: base}
            matched = {LEARNED_PATTERN: ThreatPattern(LEARNED_PATTERN, LEARNED_CATEGORY, base, "")}
    multiplier = TRUST_MULTIPLIERS[trust]
    risk = round(min(1.0, base * multiplier), 4)
    action = "block" if risk >= BLOCK_AT else "flag" if risk >= FLAG_AT else "allow"
    return Assessment(
        risk=risk,
        action=action,
        patterns=sorted(matched),
        categories=sorted(by_category),
        base_risk=round(base, 4),
        trust=trust,
        multiplier=multiplier,
        decoded=applied,
        learned=score,
    )
