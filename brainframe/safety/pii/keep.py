"""What the PII filter must leave alone, and the cued forms it must catch.

Kept (a finding that overlaps one is dropped):

- **public service numbers**: 1800 and 1300 numbers (ten digits, however grouped, or a word
  number such as 1800RESPECT), 13 numbers (six digits: "13 11 14", "131 450") and 000: they
  are organisations' numbers, not a person's;
- **named public helplines and agencies** (``AGENCIES``: Lifeline, Beyond Blue, the National
  Disability Insurance Agency, Centrelink…): a name the model reads as a person's is theirs;
- **medication doses** ("500 mg", "0.5 mg", "10 units", "2 tablets"), and a drug's name right
  before its dose ("risperidone 0.5 mg"), which the model sometimes reads as a name.

Caught: an NDIS participant number (nine digits beginning 43, however grouped) after its cue
("NDIS number", "participant number", "NDIS no."), which wins over a number's other readings.
"""

from __future__ import annotations

import re

#: Australian public helplines, services and agencies (names a text may give with their
#: numbers); matched case-insensitively as whole words.
AGENCIES = (
    "National Disability Insurance Agency",
    "NDIS Quality and Safeguards Commission",
    "NDIS Commission",
    "NDIA",
    "NDIS",
    "Lifeline",
    "Beyond Blue",
    "Kids Helpline",
    "Healthdirect",
    "Centrelink",
    "Services Australia",
    "Medicare",
    "TIS National",
    "Translating and Interpreting Service",
    "1800RESPECT",
    "Poisons Information Centre",
    "MensLine",
    "QLife",
    "13YARN",
    "headspace",
    "Suicide Call Back Service",
    "Carer Gateway",
    "Disability Gateway",
    "National Relay Service",
    "Australian Taxation Office",
    "ATO",
    "Fair Work Ombudsman",
    "Disability Advocacy Network",
    "Elder Abuse Helpline",
    "Nurse-on-Call",
    "NURSE-ON-CALL",
    "Blue Knot",
    "SANE Australia",
    "Butterfly Foundation",
    "Gambling Help",
    "DirectLine",
    "Crime Stoppers",
    "Police Assistance Line",
    "Triple Zero",
)
_AGENCY = re.compile(
    r"\b(?:" + "|".join(re.escape(a) for a in sorted(AGENCIES, key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)
_SERVICE = re.compile(
    # 000, not the last group of a longer number ("BSB 062-000")
    r"(?<![\d+])(?:1[38]00(?:[ -]?\d){6}|13(?:[ -]?\d){4}|1[38]00[ -]?[A-Z]{4,}|"
    r"(?<!\d[ -])000)(?![\d])"
)
_DOSE = re.compile(
    r"\b\d+(?:[.,]\d+)?\s?(?:mg|mcg|µg|ug|g|ml|mL|units?|iu|IU|tablets?|tabs?|capsules?|caps|"
    r"puffs?|drops?|sachets?|patch(?:es)?)\b",
    re.IGNORECASE,
)
_DRUG_BEFORE_DOSE = re.compile(
    r"\b([A-Za-z][a-z]{3,})\s+(?=\d+(?:[.,]\d+)?\s?(?:mg|mcg|µg|ug|ml|units?|iu)\b)", re.I
)
#: NDIS participant number after its cue: the group is the number.
NDIS_NUMBER = (
    r"(?i:\b(?:ndis|participant)\s*(?:participant\s*)?(?:number|no\.?|num|#|id)\s*"
    r"(?:is|:|#|-|for the participant:)?\s*(?:is\s*)?)(43\d(?:[ -]?\d{3}){2})(?!\d)"
    r"|(?i:\b(?:participant|ndis)\s+(?:number|no\.?)\b[^.\n\d]{0,40}?)(43\d(?:[ -]?\d{3}){2})(?!\d)"
    r"|(?i:\bndis\b[^.\n\d]{0,30}?)(43\d(?:[ -]?\d{3}){2})(?!\d)"
)
_NDIS = re.compile(NDIS_NUMBER)


#: Words that are also names, used as words in this business's writing: "grace period", a
#: "frank discussion", "the bill for the cleaner", a Webster pack (a medication blister pack),
#: Manual Handling (a training course), the Kia Carnival or the Hiace (the vans).
_WORDS_NOT_NAMES = re.compile(
    r"\b(?:grace period|frank (?:discussion|feedback|conversation|talk|chat|comments?|exchange)|"
    r"(?:the|a|this|that|your|his|her|their|our) bill|bill (?:for|of|is due|was paid)|"
    r"webster[- ]?(?:pack|pak)s?|manual handling|kia carnival|(?:toyota )?hiace|"
    r"(?:joy|hope) and (?:joy|hope)|(?:reset )?mfa)\b",
    re.IGNORECASE,
)
#: Equipment named after its maker, invoices and job titles ("Reported by: Enrolled Nurse"):
#: no person's name, though the model reads them so.
_NOT_PEOPLE = re.compile(
    r"\b(?:hoyer (?:lift|sling|hoist)s?|zimmer frames?|oxford (?:lift|hoist)s?|sara stedy|"
    r"invoices?|(?:enrolled|registered|clinical|community|practice) nurses?|"
    r"support (?:workers?|coordinators?)|team leaders?|(?:occupational|speech) therapists?|"
    r"physiotherapists?|(?:care|service|house|site|rostering) managers?)\b",
    re.IGNORECASE,
)
#: A place that names a team, an office or a practice ("the Merrylands team", "into the Eastwood
#: day program", "Fairfield Family Medical"), which the model reads as a surname.
_PLACES = re.compile(
    r"(?:(?<=\bthe )|(?<=, )|(?<=\bat )|(?<=\bin )|(?<=\bfrom )|(?<=\bour ))[A-Z][a-z]+"
    r"(?= (?:team(?! leaders?\b)|office|day program(?:me)?|day centre|hub|branch|depot|site|"
    r"campus)\b)|"
    r"\b(?:[A-Z][a-z]+ ){1,2}(?:Family )?(?:Medical(?: Centre| Practice| Clinic| Group)?|"
    r"Health(?:care)?(?: Centre| Service)?|Clinic|Hospital|Pharmacy|Physiotherapy|Allied Health|"
    r"Dental)\b(?! [A-Z])"
)


def kept_spans(text: str) -> list[tuple[int, int]]:
    """Spans no finding may overlap: service numbers, agency names, doses and drugs before
    their dose, and words that are names only by coincidence ("grace period")."""
    spans = [m.span() for m in _SERVICE.finditer(text)]
    spans += [m.span() for m in _WORDS_NOT_NAMES.finditer(text)]
    spans += [m.span() for m in _AGENCY.finditer(text)]
    spans += [m.span() for m in _DOSE.finditer(text)]
    spans += [m.span(1) for m in _DRUG_BEFORE_DOSE.finditer(text)]
    return spans


def not_people(text: str) -> list[tuple[int, int]]:
    """Spans no name may overlap (other findings may: "12 Clinic Lane" is an address):
    equipment, invoices, job titles, and places that name a team or a practice."""
    spans = [m.span() for m in _NOT_PEOPLE.finditer(text)]
    return spans + [m.span() for m in _PLACES.finditer(text)]


def name_end(text: str, start: int, end: int, people: list[tuple[int, int]]) -> int | None:
    """Where a name found at ``start:end`` ends: cut back to where a word that names no one
    starts ("Melissa Grant\nTeam Leader", a signature the model read as one name); None when
    the name starts inside one."""
    hits = [a for a, b in people if start < b and a < end]
    if not hits:
        return end
    cut = start + len(text[start : min(hits)].rstrip(" \t\n,|-"))
    return cut if cut - start >= 2 else None


def ndis_numbers(text: str) -> list[tuple[int, int]]:
    spans = []
    for match in _NDIS.finditer(text):
        group = next(g for g in range(1, 4) if match.group(g))
        spans.append(match.span(group))
    return spans
