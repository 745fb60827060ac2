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

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import hyperscan

from brainframe.safety.fastre import PREFILTER, UNICODE, database, scan, utf8
from brainframe.safety.guardian import acts, mention, stages
from brainframe.safety.guardian.normalise import Normalised, fold, normalise
from brainframe.safety.guardian.patterns import PATTERNS, ThreatPattern
from brainframe.safety.guardian.stages import NO_MATCH_RISK, UNKNOWN_SENDERS

BLOCK_AT = 0.8
FLAG_AT = 0.5

#: Trust levels and their multipliers. The seed's examples fix standard (1.0), untrusted (1.5),
#: hostile (2.0) and operator (0.6); system content is the most trusted.
TRUST_MULTIPLIERS = {
    "system": 0.4,
    "operator": 0.6,
    "standard": 1.0,
    "untrusted": 1.5,
    "hostile": 2.0,
}

# A request that hands the quoted text to a model to work on ("translate: '…'", "summarise
# this email: \"…\"", "… the text below") makes the quotation something a model will read: it
# is not set aside.
_HANDING = (
    r"\b(?:translate|summari[sz]e|proofread|paraphrase|rewrite|reword|forward|reply to|"
    r"respond to|analy[sz]e|classify|read out|to file|file this)\b"
)
#: From an untrusted source, any word of handing over reads the quotations.
_HANDED = re.compile(_HANDING)
#: From a known sender, only a quotation handed over ("summarise this: '…'").
_PROCESS_QUOTE = re.compile(
    _HANDING + r"(?:[^.!?\n]{0,60}?(?::|[\"“‘«]|\s')|[^.!?\n]{0,40}?\b(?:below|following)\b)|"
    r"\b(?:action|do|complete|follow|execute|process|carry out|apply|handle)\s+(?:this|it|these|"
    r"them|the above)\b"
)
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
    #: The normalisation steps that changed what was read (``safety.normalise``).
    decoded: list[str] = field(default_factory=list)
    #: The learned stage's score, when it ran (no pattern matched and the text called for it).
    learned: float | None = None
    #: The semantic and domain stages' scores, when they ran (with the learned stage).
    semantic: float | None = None
    domain: float | None = None

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
        if self.semantic is not None:
            answer["semantic"] = self.semantic
        if self.domain is not None:
            answer["domain"] = self.domain
        if self.decoded:
            answer["normalisation"] = self.decoded
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
_ALNUM_CHARS = frozenset(_ALNUM.decode())
_ROT13_STR = str.maketrans(  # codecs' "rot13", as a table
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "nopqrstuvwxyzabcdefghijklmNOPQRSTUVWXYZABCDEFGHIJKLM",
)
_ROT13_BYTES = bytes.maketrans(b"abcdefghijklmnopqrstuvwxyz", b"nopqrstuvwxyzabcdefghijklm")

# Gates: whether a normalisation step can change anything in a folded text.
_GATE_LETTER_SPACED, _GATE_QUOTED = 0, 1
#: The pattern databases read every view of a text in one scan, the views joined by newlines:
#: multi-line, so that "^" and "$" hold at each view's start and end (a prefilter may report
#: more, never less; re confirms each candidate on each view).
_JOINED = PREFILTER | hyperscan.HS_FLAG_MULTILINE


@dataclass(frozen=True)
class _Engine:
    compact: tuple[tuple[ThreatPattern, re.Pattern[str]], ...]  # ids = positions
    structure: tuple[tuple[ThreatPattern, re.Pattern[str]], ...]
    folded: tuple[tuple[ThreatPattern, re.Pattern[str]], ...]
    compact_db: hyperscan.Database  # over compact views (ASCII bytes), joined: see _matches
    folded_db: hyperscan.Database  # over folded views (UTF-8), joined
    gate_db: hyperscan.Database  # letter spacing and quotations, over folded text (UTF-8)


@lru_cache(maxsize=1)
def _engine() -> _Engine:
    compact, folded = [], []
    structure = []
    for p in PATTERNS:
        if p.category == STRUCTURE_CATEGORY:  # read with its quotation marks: see _structure
            structure.append((p, re.compile(p.expression[3:])))
        elif p.expression.startswith("re:"):
            folded.append((p, re.compile(p.expression[3:])))
        else:
            compact.append((p, re.compile(_leet_regex(p.expression))))
    return _Engine(
        compact=tuple(compact),
        structure=tuple(structure),
        folded=tuple(folded),
        compact_db=database([r.pattern for _, r in compact], [_JOINED] * len(compact)),
        folded_db=database([r.pattern for _, r in folded], [_JOINED | UNICODE] * len(folded)),
        gate_db=database(
            [_LETTER_SPACED.pattern, mention.QUOTED.pattern],
            [PREFILTER | UNICODE, PREFILTER | UNICODE | hyperscan.HS_FLAG_DOTALL],
        ),
    )


def _join_letter_spacing(text: str) -> str:
    # "i g n o r e  a l l" → "ignore all": letters separated by single spaces/dots form words.
    def join(match: re.Match[str]) -> str:
        return re.sub(r"(?<=\w)[ .\-_](?=\w)", "", match.group(0))

    text = re.sub(r"(?<=\w) {2,}(?=\w)", " \u2003 ", text)  # a double space separates words
    return _LETTER_SPACED.sub(join, text).replace("\u2003", "")


def _views(
    text: str, norm: Normalised, trust: str, source: str | None = None
) -> tuple[list[str], list[bytes], list[str], list[str]]:
    """(folded views, compact views as ASCII bytes, the reading each came from, the folded
    sources with their quotations). Each source (the text, then its hidden, reversed and
    decoded readings) gives a view and its ROT13."""
    engine = _engine()
    sources = [(text, "")]
    sources += [(r, how) for how, r in norm.readings[1:] if how not in ("html", "rot13")]
    # A known sender's report of a suspect message quotes it ("> …"): that is not their request
    # (a sender known on a channel nobody can forge: not e-mail or SMS).
    known = trust not in UNKNOWN_SENDERS
    reports = known and source not in acts.SPOOFABLE_SOURCES
    folded_views: list[str] = []
    compact: list[bytes] = []
    names: list[str] = []
    whole: list[str] = []
    for source, how in sources:
        folded = fold(source)
        whole.append(folded)
        gates = scan(engine.gate_db, utf8(folded))
        if _GATE_LETTER_SPACED in gates:
            folded = _join_letter_spacing(folded)
            gates = scan(engine.gate_db, utf8(folded))
        if reports and ">" in folded:
            folded = mention.suspect_message_aside(folded)
        unquoted = mention.set_aside(folded, strict=not known) if _GATE_QUOTED in gates else folded
        if unquoted is not folded and (
            _PROCESS_QUOTE.search(folded) if known else _HANDED.search(unquoted)
        ):
            unquoted = folded  # the quotation is handed to a model: read it
        squeezed = unquoted.encode("ascii", "ignore").translate(None, _NOT_ALNUM)
        folded_views += [unquoted, unquoted.translate(_ROT13_STR)]
        compact += [squeezed, squeezed.translate(_ROT13_BYTES)]
        names += [how, "rot13"]
    return folded_views, compact, names, whole


_STRUCTURE_GATE = re.compile(r"[{<\[#]|^\s*\w+\s*:|\n\s*\w+\s*:")


def _structure(whole: list[str]) -> dict[str, ThreatPattern]:
    """Fake structure (tool calls, tool results, conversation turns) needs the quotation marks
    the other views set aside (JSON keys are quoted): these patterns read the folded sources as
    they are, with Python's ``re`` (few texts pass the gate, and those are short work)."""
    found: dict[str, ThreatPattern] = {}
    for folded in whole:
        if not _STRUCTURE_GATE.search(folded):
            continue
        shown: bool | None = None  # a tutorial's or a README's listing, worked out when needed
        for pattern, regex in _engine().structure:
            if pattern.name in found:
                continue
            starts = [m.start() for m in regex.finditer(folded)]
            if not starts:
                continue
            if shown is None:
                shown = mention.shows(folded)
            if shown and all(mention.in_code_listing(folded, at) for at in starts):
                continue
            found[pattern.name] = pattern
    return found


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


#: A request to act that the source may not make (``safety.acts``): a flag from standard and
#: untrusted sources, a block from hostile ones; 0.1 more for each further kind of act.
ACT_CATEGORY = "untrusted_act"
STRUCTURE_CATEGORY = "fake_structure"
ACT_RISK = 0.5


def _matches(views: list[str], compact_views: list[bytes]) -> dict[str, ThreatPattern]:
    """The patterns that match some view and are used there, not mentioned."""
    engine = _engine()
    matched: dict[str, ThreatPattern] = {}
    # Hyperscan names the candidates, in one scan of all the views joined by newlines (its
    # databases read "^" and "$" at each line, so a match anchored to a view's start or end is
    # still a candidate); Python's re decides on each view, and a match counts unless every
    # occurrence of it is negated ("must never reveal …").
    positions: list[list[int] | None] = [None] * len(views)
    for i in sorted(scan(engine.compact_db, b"\n".join(compact_views))):
        pattern, regex = engine.compact[i]
        if pattern.name in matched:
            continue
        for k, (view, folded) in enumerate(zip(compact_views, views, strict=True)):
            if _used(pattern, regex, view, folded, positions, k):
                matched[pattern.name] = pattern
                break
    for i in sorted(scan(engine.folded_db, utf8("\n".join(views)))):
        pattern, regex = engine.folded[i]
        if pattern.name in matched:
            continue
        confirm = _CONFIRM.get(pattern.name)
        listed = pattern.category in _LISTED  # a command in a code listing is shown, not run
        if any(
            not mention.negated(text_view, m.start())
            and not (listed and mention.in_code_listing(text_view, m.start()))
            and (confirm is None or confirm(m.group(), text_view))
            for text_view in views
            for m in regex.finditer(text_view)
        ):
            matched[pattern.name] = pattern
    return matched


def _used(
    pattern: ThreatPattern,
    regex: re.Pattern[str],
    view: bytes,
    folded: str,
    positions: list[list[int] | None],
    k: int,
) -> bool:
    """Whether a compact pattern matches the compact ``view`` somewhere it is used, not
    mentioned, in the folded text it came from (``positions[k]``: compact index → folded index,
    built when first needed)."""
    for match in regex.finditer(view.decode("ascii")):
        where = positions[k]
        if where is None:
            where = positions[k] = [n for n, c in enumerate(folded) if c in _ALNUM_CHARS]
        at, end = where[match.start()], where[match.end() - 1] + 1
        if not (
            mention.negated(folded, at)
            or mention.narrated(folded, at)
            or mention.reported(folded, at)
            or mention.NEGATION.search(folded, at, end)  # "must never reveal …"
            or (pattern.category in _LISTED and mention.in_code_listing(folded, at))
            or _as_noun(folded, at)
            or (
                mention.strict_example(folded, at)
                and mention.genre(folded) is not None
                and not mention.addressed(folded)
            )
            or (
                pattern.category in mention.SHOWN
                and mention.in_code_listing(folded, at)
                and mention.shows(folded)
            )
        ):
            return True
    return False


#: Commands in a code listing (a README's fenced block, a shell prompt's line) are listed, not
#: run: these categories do not count there.
_LISTED = frozenset(("destructive_command", "command_execution"))
#: A verb of sending used as a noun ("my email to …", "the post to …"): no instruction.
_NOUN_NOT_VERB = re.compile(
    r"\b(?:my|your|our|his|her|their|the|an?|new|this|that|each|every|any|business|work|"
    r"phishing|suspicious|fake|incoming) (?:e-?mail|mail|post|copy|transfer)\b"
)


def _as_noun(folded: str, at: int) -> bool:
    noun = _NOUN_NOT_VERB.search(folded, max(0, at - 12), at + 12)
    return noun is not None and noun.start() < at < noun.end()


#: Patterns whose matches are confirmed by a function of (match, view): sending to an address
#: counts only when it sends outside the business (``acts.outward``).
_CONFIRM = {
    "forward_copy_to_address": acts.sends_outward,
    "extra_recipient": acts.sends_outward,
}


def _signals(
    norm: Normalised,
    views: list[str],
    names: list[str],
    trust: str,
    source: str | None,
    rights: Collection[str] | None,
) -> tuple[dict[str, ThreatPattern], bool]:
    """Findings beyond the named patterns: requests to act that the source may not make, and
    disguises that are a finding in themselves (look-alike letters mixed into words, text in
    invisible Unicode tags, hidden HTML that speaks to a model); and whether the text asks for
    acts that its sender may all ask for (then they are the sender's to ask, whatever a model
    of the business's frauds makes of the words)."""
    found: dict[str, ThreatPattern] = {}
    known = trust not in UNKNOWN_SENDERS
    strict = not known or source in acts.CONTENT_SOURCES
    requested = [
        act
        for view, how in zip(views, names, strict=True)
        if how != "rot13" or "rot13" in norm.steps  # a ROT13 view only of a ROT13 text
        for act in acts.found(view, strict=strict, known=known)
    ]
    kinds = acts.unentitled(requested, trust, source, rights)
    if kinds:
        base = min(0.7, ACT_RISK + 0.1 * (len(kinds) - 1))
        for kind in kinds:
            found[f"act:{kind}"] = ThreatPattern(f"act:{kind}", ACT_CATEGORY, base, "")
    if "unicode_tags" in norm.steps:
        found["unicode_tags"] = ThreatPattern("unicode_tags", "obfuscation", 0.6, "")
    if any(mention.addressed(fold(hidden)) for hidden in norm.hidden):
        found["hidden_instruction"] = ThreatPattern("hidden_instruction", "obfuscation", 0.6, "")
    return found, bool(requested) and not kinds


def assess(
    text: str,
    trust: str = "standard",
    *,
    learned: bool | None = None,
    source: str | None = None,
    rights: Collection[str] | None = None,
) -> Assessment:
    """Assess one text from a source of the given trust level: the named patterns, requests to
    act (``safety.acts``: what ``rights`` — the acts the sender may request, by default what
    ``trust`` and ``source`` allow — does not cover), disguises; then, where none of these found
    anything and ``stages.applies``, the learned, domain and semantic stages (``stages``)."""
    if trust not in TRUST_MULTIPLIERS:
        raise ValueError(f"unknown trust level {trust!r}; one of {sorted(TRUST_MULTIPLIERS)}")
    text = text[:65536]
    norm = normalise(text)
    views, compact_views, names, whole = _views(text, norm, trust, source)
    matched = _matches(views, compact_views)
    matched.update(_structure(whole))
    signals, entitled = _signals(norm, views, names, trust, source, rights)
    matched.update(signals)
    if matched:
        by_category: dict[str, float] = {}
        for pattern in matched.values():
            by_category[pattern.category] = max(
                by_category.get(pattern.category, 0.0), pattern.base_risk
            )
        base = min(1.0, max(by_category.values()) + 0.1 * (len(by_category) - 1))
    else:
        by_category, base = {}, NO_MATCH_RISK
    scored = None
    reading = None if matched else stages.applies(learned, trust, text, source, entitled)
    if reading is not None:
        scored = stages.scores(norm, trust, domain=not entitled, public=reading == "all")
        if scored.pattern is not None:
            base = scored.base
            by_category = {scored.pattern.category: base}
            matched = {scored.pattern.name: scored.pattern}
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
        decoded=list(norm.steps),
        learned=scored.learned if scored else None,
        semantic=scored.semantic if scored else None,
        domain=scored.domain if scored else None,
    )
