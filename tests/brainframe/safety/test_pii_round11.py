"""The PII filter's eleventh round: an address ends at its postcode's full stop, "address
change for …" names a person, and a form's "name:" field is a name in any case. Texts written
for the tests (not from eval/)."""

from __future__ import annotations

import pytest

from brainframe.safety.pii.filter import pii_find


def _found(text: str) -> list[tuple[str, str]]:
    return [(f.type, text[f.start : f.end]) for f in pii_find(text)]


@pytest.mark.parametrize(
    ("text", "name"),
    [
        # the address ends at its postcode: the next sentence's name is not part of it
        (
            "She lives at 14 Banksia Rd, Dandenong VIC 3175. Sister Achol Deng (0491 570 110) "
            "visits on weekends.",
            "Achol Deng",
        ),
        # whose address changed, not an address
        ("Address change for Sione Havili: now at Unit 2, 8 Ocean St.", "Sione Havili"),
        # a form's labelled field, in lower case in a text that has a capital elsewhere
        ("name: mele tupou\nphone: 0491 570 156\nreferred by: my GP", "mele tupou"),
    ],
)
def test_a_name_next_to_an_address_or_a_label_is_redacted(text: str, name: str) -> None:
    assert ("PERSON", name) in _found(text), _found(text)


def test_an_address_still_ends_at_its_postcode_and_a_street_is_still_an_address() -> None:
    text = "Client lives at 14 Banksia Rd, Dandenong VIC 3175. Please ring before visiting."
    found = _found(text)
    assert ("AU_ADDRESS", "14 Banksia Rd, Dandenong VIC 3175") in found, found
    assert not any(kind == "PERSON" for kind, _ in found), found


@pytest.mark.parametrize(
    "text",
    [
        "name: wheelchair maintenance log\ndate: 12/03 (OT)",  # a form's field naming no person
        "Address update: please use the Penrith office for all mail.",
    ],
)
def test_a_label_or_an_address_update_with_no_person_redacts_no_name(text: str) -> None:
    found = _found(text)
    assert not any(kind == "PERSON" for kind, _ in found), found
