"""The PII filter's tenth round: numbers after their cue whatever their check digit, an address
after "address:" in any case, house numbers that are no house numbers, and the business's words
the model took for names. Texts written for the tests (not from eval/)."""

from __future__ import annotations

import pytest

from brainframe.safety.pii.filter import pii_find


def _found(text: str) -> list[tuple[str, str]]:
    return [(f.type, text[f.start : f.end]) for f in pii_find(text)]


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        # a mistyped number is still the person's: the cue decides, not the check digit
        ("Your TFN (for your own claim) is 457892316, please check it.", "AU_TFN", "457892316"),
        ("The form shows the wrong TFN, it should be 321 654 987.", "AU_TFN", "321 654 987"),
        ("Medicare: 2953 71824 1-3\nPhone: (02) 5550 1234", "AU_MEDICARE", "2953 71824 1-3"),
        ("Re: Mr Caruso, Medicare 3081 45927 2, IRN 4", "AU_MEDICARE", "3081 45927 2, IRN 4"),
        # a form in lower case, but for one word
        (
            "address: 12a grace st, lakemba nsw 2195\nhow did you hear about us: my OT",
            "AU_ADDRESS",
            "12a grace st, lakemba nsw 2195",
        ),
        # the last group of a BSB is no emergency number
        ("Please pay to BSB 062-000, Acc 1034 5578.", "AU_BANK_ACCOUNT", "062-000"),
    ],
)
def test_a_detail_after_its_cue_is_redacted(text: str, kind: str, value: str) -> None:
    assert (kind, value) in _found(text), _found(text)


def test_a_number_ending_a_line_or_a_phone_number_starts_no_address() -> None:
    """A name read as part of an address is no name: "Priority 1\\nResident: …" and a phone
    number's last group before "… at 7 kauri cres" made the name part of one."""
    incident = "Incident - SIRS Priority 1\nResident: Ayşe Demir, Room 14, Wattle Wing"
    assert ("PERSON", "Ayşe Demir") in _found(incident), _found(incident)
    sms = "ring 0491 570 157 or txt. client is mr tavita faleolo at 7 kauri cres mt druitt"
    assert ("PERSON", "tavita faleolo") in _found(sms), _found(sms)


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Gave Endone 5 mg at 8:15am. Used the Hoyer lift for transfer to shower.", "Hoyer"),
        ("Walked with his Zimmer frame to the garden.", "Zimmer"),
        ("Son contacted by phone.\nReported by: Enrolled Nurse", "Enrolled Nurse"),
        ("Thanks,\nRosalinda\nSupport Worker, Merrylands team", "Merrylands"),
        ("She starts in the Eastwood day program on Monday.", "Eastwood"),
        ("Dr Romano\nFairfield Family Medical\nRe: referral", "Fairfield"),
        ("In an emergency call 000.", "000"),
    ],
)
def test_the_businesss_words_are_kept(text: str, kept: str) -> None:
    at = text.index(kept)
    assert not any(f.start < at + len(kept) and at < f.end for f in pii_find(text)), _found(text)


# From a reviewer's probes of the round's first rules: each was wrong, and is right now.
@pytest.mark.parametrize(
    "text",
    [
        "Her visits moved to 3 days a week from July.",
        "Actions to address: 2 concerns raised at the family meeting.",
        "Do not send your TFN by email. Your claim reference is 100 245 873.",
        "Medicare rebate for invoice 1000234567 has been paid.",
    ],
)
def test_a_number_that_is_no_detail_is_kept(text: str) -> None:
    assert pii_find(text) == [], _found(text)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Thanks,\nMelissa Grant\nTeam Leader\nParramatta office", "Melissa Grant"),
        ("Msg from Sarah team leader: the van is back.", "Sarah"),
    ],
)
def test_a_name_beside_a_title_or_a_place_is_still_redacted(text: str, name: str) -> None:
    at = text.index(name)
    assert any(f.type == "PERSON" and f.start <= at < f.end for f in pii_find(text)), _found(text)


def test_an_address_after_its_cue_ends_where_the_address_does() -> None:
    text = "He lives at 5 Rosebery Ave, Penrith with his brother and attends on Tuesdays."
    assert ("AU_ADDRESS", "5 Rosebery Ave, Penrith") in _found(text), _found(text)
