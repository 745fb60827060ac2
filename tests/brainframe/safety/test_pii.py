"""The outbound PII filter: Australian identifiers and the usual ones, redaction through the
broker, consent, and the redact_text command. Real presidio with a real spaCy model."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from brainframe.models import ToolCall
from brainframe.safety.pii.filter import pii_find, pii_redact
from tests import factories as f
from tests.signing import SignedClient


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Call Mary on 0412 345 678 tomorrow", "PHONE_NUMBER"),
        ("Her mobile is +61 412 345 678", "PHONE_NUMBER"),
        ("Write to jane.citizen@example.org please", "EMAIL_ADDRESS"),
        ("Card 4111 1111 1111 1111 was declined", "CREDIT_CARD"),
        ("IBAN GB82 WEST 1234 5698 7654 32 for the refund", "IBAN_CODE"),
        ("The request came from 203.0.113.42", "IP_ADDRESS"),
        ("Medicare number 2123 45670 1 on file", "AU_MEDICARE"),
        ("Her TFN is 123 456 782", "AU_TFN"),
        ("Supplier ABN 51 824 753 556", "AU_ABN"),
        ("NDIS participant number 430123456", "AU_NDIS_NUMBER"),
        ("Krisztián Szöllösy asked about Tuesday's outing", "PERSON"),
    ],
)
def test_detects(text: str, kind: str) -> None:
    assert kind in {finding.type for finding in pii_find(text)}, pii_find(text)


def _spans(text: str, kind: str) -> set[str]:
    return {text[x.start : x.end] for x in pii_find(text) if x.type == kind}


@pytest.mark.parametrize(
    ("text", "name"),
    [
        # all in lower case: read with capitals
        ("please ring back colleen mcgarrigle about the roster", "Mcgarrigle"),
        # a later mention of a name found earlier
        ("Bronwyn Tkachenko joined in May. Since then Tkachenko has led the group.", "Tkachenko"),
        # a relative's possessive
        ("The driver dropped off Oyelaran's daughter at three.", "Oyelaran"),
        # the answer to a question about a name
        ("Could you confirm your full name? Ngata-Whitehorse", "Ngata-Whitehorse"),
        # the subject of something only people do
        ("Ikaika Kealoha lives at 12 Ferry Road with her sister.", "Kealoha"),
        # the first line of an address block
        ("Tavita Leaupepe\nCommunity Transport Co-op\n14 Wharf Street\nCairns QLD", "Leaupepe"),
        # "change it to …", "add … as", "my partner's name …"
        ("The account name is wrong, please change it to Ruairi Ó Dálaigh", "Dálaigh"),
    ],
)
def test_names_the_small_model_misses(text: str, name: str) -> None:
    assert name.lower() in " ".join(_spans(text, "PERSON")).lower(), pii_find(text)


def test_phone_numbers_by_their_cues_and_not_other_numbers() -> None:
    assert _spans("Could you call me on 9381 2270 after lunch?", "PHONE_NUMBER") == {"9381 2270"}
    assert _spans("07 3040 1122 office, 07 3040 1199 fax", "PHONE_NUMBER") == {
        "07 3040 1122",
        "07 3040 1199",
    }
    assert not _spans("my driver's licence number is 0912-44-8830", "PHONE_NUMBER")
    assert not _spans("Deliver to 2210 48 Boundary Street, West End", "PHONE_NUMBER")


def test_a_cue_word_counts_only_near_the_number() -> None:
    # A bare grouped number is a phone number only with a phone word among the words before it.
    assert _spans("Her mobile number is 9381 2270.", "PHONE_NUMBER") == {"9381 2270"}
    assert _spans("Contact the depot: 9381 2270 before six.", "PHONE_NUMBER") == {"9381 2270"}
    assert not _spans("Please ring the office; booking reference 9381 2270.", "PHONE_NUMBER")


def test_phone_numbers_anywhere_in_a_long_text() -> None:
    filler = "The group outing to the botanic gardens went well and lunch was on time. " * 14
    text = f"Mobile +61 412 345 678. {filler}Call (02) 9876 5432 today. {filler}Fax 07 3040 1199"
    assert _spans(text, "PHONE_NUMBER") == {"+61 412 345 678", "(02) 9876 5432", "07 3040 1199"}


def test_a_second_number_of_another_region_in_the_same_stretch() -> None:
    # The regions are tried in order until every run of digits in a stretch is a number: an
    # Australian number read first does not stop a Canadian one beside it from being read.
    text = "Ring 0412 345 678 or 613-555-0199 after two."
    assert _spans(text, "PHONE_NUMBER") == {"0412 345 678", "613-555-0199"}


def test_no_warning_logged_per_number_or_date(caplog: pytest.LogCaptureFixture) -> None:
    # The model's other entities (numbers, dates, money) are not read, and not logged per call.
    with caplog.at_level("INFO"):
        pii_find("On 3 May we paid $120 for 2 tickets; call Mary Brown on 0412 345 678.")
    assert [r.getMessage() for r in caplog.records if r.levelname != "DEBUG"] == []


def test_a_name_coordinated_with_a_name_the_model_found() -> None:
    text = "Minutes taken by Sarah Jones and Tuilagi."
    assert _spans(text, "PERSON") == {"Sarah Jones", "Tuilagi"}
    text = "Thanks to Ahmed Khan, Okonkwo and the team for covering the weekend."
    assert {"Ahmed Khan", "Okonkwo"} <= _spans(text, "PERSON")


def test_every_name_in_a_list_with_one_the_model_found() -> None:
    text = "They had four grandchildren: Efimiya, Mary, Isabel and Jodi."
    assert _spans(text, "PERSON") == {"Efimiya", "Mary", "Isabel", "Jodi"}


def test_the_addressee_before_an_address_is_a_name() -> None:
    text = "Billing address: Sara Whitlock     28 Puruntie Road, Albury NSW 2640"
    assert _spans(text, "PERSON") == {"Sara Whitlock"}
    assert _spans(text, "AU_ADDRESS") == {"28 Puruntie Road, Albury NSW 2640"}
    # a street name after the cue is still part of the address, not a name
    assert not _spans("Address: Lachlan Street, 4 Hay NSW 2711", "PERSON")


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("hey its losa, running late for the 3pm pickup", "losa"),
        ("hi manpreet, gurdeep here. car wont start", "gurdeep"),
        ("Łukasz — can you swap your Friday PM with the late shift?", "Łukasz"),
        ("New referral: Võ Văn Hùng, 67, lives with his wife in Bankstown.", "Võ Văn Hùng"),
        ("salam khaled, the OT tomorrow is at 2", "khaled"),
    ],
)
def test_names_that_introduce_or_are_addressed(text: str, name: str) -> None:
    assert name in _spans(text, "PERSON"), pii_find(text)


def test_everyday_words_days_places_and_firms_are_not_names() -> None:
    text = (
        "Sat 20 April: Giorgos Karagiannis went to Harris Park with his Webster pack. The grace "
        "period ends soon; we had a frank discussion about the bill for the cleaner. Thanks, "
        "Brightpath Supports"
    )
    assert _spans(text, "PERSON") == {"Giorgos Karagiannis"}
    # a time, a dose or a date before a word is no house number that starts an address
    dose = "Endep 25 mg twice (0800 and 0830). GP Dr Ahmed Nasser at Mt Druitt called."
    assert "Ahmed Nasser" in _spans(dose, "PERSON")
    assert not _spans(dose, "AU_ADDRESS")


def test_a_date_of_birth_later_in_its_sentence() -> None:
    text = "The DOB we have on file for your mother is 08/04/1951, can you confirm?"
    assert _spans(text, "DATE_OF_BIRTH") == {"08/04/1951"}
    assert not _spans("The DOB field moved; the meeting is 08/04/2026.", "DATE_OF_BIRTH")


def test_a_well_known_name_alone_in_running_text() -> None:
    text = "Took Farida and Bashir to the pool. Tigist's walker is broken; Mehari rang."
    found = " ".join(_spans(text, "PERSON"))
    assert all(name in found for name in ("Farida", "Bashir", "Tigist", "Mehari")), found
    # a place is not one: after "in", before "office", on a street with its number
    places = "Drove to the church in Footscray, then the Wollongong office, then Stefana 28."
    assert not _spans(places, "PERSON")


def test_an_iban_in_lower_case() -> None:
    assert _spans("refund to gb82west12345698765432 please", "IBAN_CODE")


def test_redaction_keeps_the_rest() -> None:
    text, findings = pii_redact("Sam Carter can be reached on 0412 345 678 about the bus")
    assert text == "<PERSON> can be reached on <PHONE_NUMBER> about the bus"
    assert [f.type for f in findings] == ["PERSON", "PHONE_NUMBER"]
    assert pii_redact("The bus leaves at 9 from the depot")[1] == []


def test_redact_text_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "sys.stdin", StringIO(json.dumps({"id": 7, "text": "Email bob@example.com now"}) + "\n")
    )
    out = StringIO()
    call_command("redact_text", stdout=out)
    assert json.loads(out.getvalue()) == {
        "id": 7,
        "text": "Email <EMAIL_ADDRESS> now",
        "entities": [{"type": "EMAIL_ADDRESS", "start": 6, "end": 21}],
    }


@pytest.fixture
def sms_tool(seeded: None) -> Any:
    return f.ToolFactory(
        tool_id="test.sms.send",
        execution_mode="auto",
        validation_mode="monitor",
        external_channel=True,
        agent_access=["henry"],
        handler_config={"callable": "tests.echo"},
        input_schema={"type": "object"},
    )


@pytest.mark.django_db
def test_pii_never_reaches_an_external_handler_unredacted(
    henry: SignedClient, sms_tool: Any, executed: list[dict[str, Any]]
) -> None:
    message = "Hi, Sam Carter's ABN is 51 824 753 556, call 0412 345 678"
    body = henry.post(
        "/api/v1/tool-calls/",
        {
            "tool_id": "test.sms.send",
            "reason": "reminder",
            "arguments": {"to": "carer", "message": message},
        },
    )
    assert body.status_code == 200, body.json()
    sent = executed[-1]["message"]
    assert "824" not in sent and "0412" not in sent and "Carter" not in sent
    assert "<AU_ABN>" in sent and "<PHONE_NUMBER>" in sent
    call = ToolCall.objects.get(pk=body.json()["call_id"])
    assert call.input["message"] == message  # the audit keeps what the agent asked for
    assert call.executed_arguments["message"] == sent
    assert {f["type"] for f in call.outbound_findings} >= {"AU_ABN", "PHONE_NUMBER"}


@pytest.mark.django_db
def test_explicit_consent_lets_it_through(
    henry: SignedClient, sms_tool: Any, executed: list[dict[str, Any]]
) -> None:
    message = "Your NDIS number is 430123456"
    henry.post(
        "/api/v1/tool-calls/",
        {
            "tool_id": "test.sms.send",
            "reason": "participant asked",
            "arguments": {"to": "p", "message": message, "consent_pii": True},
        },
    )
    assert executed[-1]["message"] == message


@pytest.mark.parametrize(
    "text",
    ["Details: +1-202-555-0143x12, Melbourne", "+31 (0)20 123 4567", "001 541 754 3010"],
)
def test_an_international_number_is_a_phone_number_without_a_cue(text: str) -> None:
    assert [x.type for x in pii_find(text)] == ["PHONE_NUMBER"], pii_find(text)


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        (
            "We moved to Unit 3/118 Beach Road, Bondi NSW 2026 in March.",
            "AU_ADDRESS",
            "Unit 3/118 Beach Road, Bondi NSW 2026",
        ),
        ("Send it to PO Box 412, Toowoomba QLD 4350 please.", "AU_ADDRESS", "PO Box 412"),
        ("Her DOB is 14/02/1992 and she likes swimming.", "DATE_OF_BIRTH", "14/02/1992"),
        ("He was born on 3 April 2001 in Geelong.", "DATE_OF_BIRTH", "3 April 2001"),
        ("Refund to BSB 062-692 account 1049 5521.", "AU_BANK_ACCOUNT", "062-692"),
        ("Refund to BSB 062-692 account 1049 5521.", "AU_BANK_ACCOUNT", "1049 5521"),
        ("Worker check: driver licence 087654321 NSW.", "AU_DRIVER_LICENCE", "087654321"),
        ("His passport number: PA4419837.", "AU_PASSPORT", "PA4419837"),
        ("Reply to coordinator@rabs.local today.", "EMAIL_ADDRESS", "coordinator@rabs.local"),
    ],
)
def test_australian_details_and_any_email(text: str, kind: str, value: str) -> None:
    found = {(x.type, text[x.start : x.end]) for x in pii_find(text)}
    assert any(k == kind and value in v for k, v in found), found


def test_dates_numbers_and_street_names_that_are_not_personal_details() -> None:
    for text in (
        "The roster for 03/04/2026 has two open shifts; review by 5 April 2026.",
        "The licence for the roster software renews each July.",
        "Main Street is closed for the festival, so the bus takes another route.",
        "Invoice 2026-0412 covers 12 hours of support.",
    ):
        kinds = {x.type for x in pii_find(text)}
        assert not kinds & {
            "AU_ADDRESS",
            "DATE_OF_BIRTH",
            "AU_BANK_ACCOUNT",
            "AU_DRIVER_LICENCE",
            "AU_PASSPORT",
        }, (text, kinds)


def test_words_that_are_not_names_in_addresses_labels_and_firms() -> None:
    text = (
        "Tomomi is from Hawkins, Richardson and Santana. Personal Info: call after 5. "
        "She lives at 3247 Rua Igreja 25  Apt. 236  Ribeirão  Portugal 30971."
    )
    names = [text[x.start : x.end] for x in pii_find(text) if x.type == "PERSON"]
    assert names == ["Tomomi"], names
    # an address over several short lines, down to its postcode; a name under it is a name
    block = "Ship to 6750 Koskikatu 25 Apt. 864\nArtilleros\n, CO\n Uruguay 64677\nMaria Lopez"
    names = [block[x.start : x.end] for x in pii_find(block) if x.type == "PERSON"]
    assert "Artilleros" not in names and "Uruguay" not in names, names


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("client rawiri horomona wants his plan meeting on friday", "rawiri horomona"),
        ("Morning Huia, the van will be ten minutes late.", "Huia"),
        ("participant agnieszka wróblewska left her jacket in the van", "agnieszka wróblewska"),
        ("Sent the roster to Małgorzata Kowalczyk yesterday.", "Małgorzata Kowalczyk"),
        ("hi ayşe demir, your support worker changed", "ayşe demir"),
        ("Mr Viliami Havili asked about the pool session.", "Viliami Havili"),
        ("client pham thi lan asked for a female carer", "pham thi lan"),
        ("Dear Ms Hoàng Thị Mai, thank you for the form.", "Hoàng Thị Mai"),
    ],
)
def test_names_of_many_origins_in_any_case(text: str, name: str) -> None:
    start = text.index(name)
    people = [f for f in pii_find(text) if f.type == "PERSON"]
    assert any(f.start <= start and start + len(name) <= f.end for f in people), people


def test_a_common_word_after_a_cue_is_not_a_name() -> None:
    assert _spans("The client bus leaves at nine.", "PERSON") == set()
    assert _spans("Please call the office on Monday.", "PERSON") == set()


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("Her NDIS number is 431 998 204, plan-managed.", "431 998 204"),
        ("participant no. 437001122 (self-managed)", "437001122"),
        ("ndis: 430-555-019 for the claim", "430-555-019"),
    ],
)
def test_ndis_numbers_after_their_cue(text: str, number: str) -> None:
    assert number in _spans(text, "AU_NDIS_NUMBER"), pii_find(text)


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Feeling low? Lifeline is there on 13 11 14, day or night.", ["Lifeline", "13 11 14"]),
        ("The NDIA contact centre is 1800 800 110.", ["NDIA", "1800 800 110"]),
        ("Book an interpreter through TIS National on 131 450.", ["TIS National", "131 450"]),
        ("Ring our office on 1300 555 210 or MensLine on 1300 78 99 78.", ["1300 555 210"]),
        ("For family violence call 1800RESPECT; in an emergency dial 000.", ["1800RESPECT", "000"]),
        ("Give quetiapine 25 mg at night and Movicol 1 sachet daily.", ["25 mg", "1 sachet"]),
        ("Sertraline 50mg each morning with breakfast.", ["Sertraline", "50mg"]),
    ],
)
def test_public_numbers_agencies_and_doses_are_kept(text: str, kept: list[str]) -> None:
    redacted, _ = pii_redact(text)
    for value in kept:
        assert value in redacted, redacted


def test_a_personal_number_beside_a_service_number_is_still_redacted() -> None:
    text = "Call Healthdirect on 1800 022 222, then ring Tomasz on 0413 882 771."
    redacted, _ = pii_redact(text)
    assert (
        "1800 022 222" in redacted and "0413 882 771" not in redacted and "Tomasz" not in redacted
    )


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Participant record. Surname: OKONKWO. Given name: Chiamaka.", "OKONKWO"),
        ("Mrs Hye-jin Park declined her evening tablets.", "Hye-jin Park"),
        ("running late, be there by 6 - priyanka", "priyanka"),
        ("Hi, it's Marguerite from the plan manager's office.", "Marguerite"),
        ("Dad (Teodoro) will collect her at four.", "Teodoro"),
        # a service number is no house number: the name after it is still read
        ("Gave him Lifeline 13 11 14 again. His GP, Dr Wei Zhang, knows.", "Wei Zhang"),
    ],
)
def test_names_after_labels_titles_sign_offs_and_brackets(text: str, name: str) -> None:
    assert name in _spans(text, "PERSON"), pii_find(text)


def test_words_and_services_the_model_takes_for_names_are_kept() -> None:
    text = "Dear Accounts, the Quakers Hill SIL invoice is attached. See Guilty Pleasures, p. 4."
    assert not _spans(text, "PERSON"), pii_find(text)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        # a roster line: names that are also words, in any case
        ("Sat sleepover - Hope / Rose. Sun - Summer and Hunter.", "Hope"),
        ("mon - phuong le / tues - hung tran / wed - grace / thurs - still open", "grace"),
        ("mon - phuong le / tues - hung tran / wed - grace", "hung tran"),
        # a first name that is a word, before a surname that is none
        ("Hope Tuilagi has settled in well; we hope she joins the art group.", "Hope Tuilagi"),
        # a dose's count is no house number: the sentence after it is no address
        ("Offered Sustagen 1 serve. Daughter Joy Santos visiting at 5.", "Joy Santos"),
        ("Checked by RN Sunny Park before lunch.", "Sunny Park"),
        ("hey aunty pearl, its kirra. can u drive nan on tues?", "pearl"),
        ("Mr. Spears is a 61 year old man who grew up here.", "Spears"),
        # names ranked rarely, words ending like a firm's or a street's: still names
        ("Callie Bellamy called the office.", "Callie Bellamy"),
        ("Please ring Callie about Thursday.", "Callie"),
        ("Mary Chen is an app developer who uses our SIL service.", "Mary Chen"),
        ("Our participant David Lee is a small business owner.", "David Lee"),
        ("Summer Lane missed her physio.", "Summer Lane"),
    ],
)
def test_names_in_rosters_after_titles_and_words_that_are_names(text: str, name: str) -> None:
    start = text.index(name)
    found = pii_find(text)
    assert any(
        f.type == "PERSON" and f.start <= start and start + len(name) <= f.end for f in found
    ), found


def test_firms_and_words_are_not_names() -> None:
    for text in (
        "Coden is a design agency based in Newcastle.",
        "Verses from Emmie's Cautionary Tales are read at the start.",
        "Arjun from Mehta Allied Health sent the invoice.",
        "We'll take her to the Footscray markets on Sunday.",
        "mon - pool / tues - library / wed - still open",
        "Bank details are BSB 062-692 10384726 (NOT the old Westpac account).",
    ):
        found = _spans(text, "PERSON")
        assert not any(
            w in found for w in ("Coden", "Tales", "Mehta", "Footscray", "pool", "Westpac")
        ), (
            text,
            found,
        )


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("Bill payments for June are due by the 15th.", "Bill"),
        ("Grace periods don't apply to NDIS claims.", "Grace"),
        ("Dawn shift (6am) found the back door unlocked.", "Dawn"),
        ("Mark it as urgent please, the vendor is waiting.", "Mark"),
    ],
)
def test_names_used_as_words_are_kept(text: str, word: str) -> None:
    assert word not in _spans(text, "PERSON"), pii_find(text)


def test_the_same_names_as_names_are_still_found() -> None:
    for text, name in (
        ("Bill rang about his wheelchair repair.", "Bill"),
        ("Please ring Grace about Thursday.", "Grace"),
    ):
        assert name in _spans(text, "PERSON"), (text, pii_find(text))


@pytest.mark.parametrize(
    ("text", "name"),
    [
        # a sentence that starts with who did what: a name that is also a word
        ("Team leader reviewed the notes. Callum had a settled night.", "Callum"),
        ("Back door found unlocked. Eliza to check the lock tomorrow.", "Eliza"),
        # Australian given names the name list lacks
        ("Lachlan was very low today and talked about his brother.", "Lachlan"),
        ("Quote to be sent for approval. Tahlia is comfortable with the plan.", "Tahlia"),
    ],
)
def test_names_vouched_for_by_their_verb_and_australian_names(text: str, name: str) -> None:
    assert name in _spans(text, "PERSON"), pii_find(text)


def test_months_and_words_before_a_verb_are_not_names() -> None:
    for text, word in (
        ("June was busy with plan reviews.", "June"),
        ("Lunch was late because the van broke down.", "Lunch"),
        ("Transport is booked for 9am.", "Transport"),
    ):
        assert word not in _spans(text, "PERSON"), (text, pii_find(text))


@pytest.mark.parametrize(
    ("text", "place"),
    [
        # streets written before their number
        ("Parcel to ul. Jana Pawła 17, Gdańsk, for the family.", "Pawła"),
        ("Send it to Λεωφόρος Αλεξάνδρας 12 please.", "Αλεξάνδρας"),
    ],
)
def test_streets_written_before_their_number_are_not_names(text: str, place: str) -> None:
    assert not any(place in span for span in _spans(text, "PERSON")), pii_find(text)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Keys were returned to Sione after the late shift.", "Sione"),
        ("If the hoist jams again please go to Marama for help.", "Marama"),
        ("Rua Ngata, 45, starts with the Tuesday group next week.", "Rua Ngata"),
        ("Rue Jackson 12 years on the program, wants a review.", "Rue Jackson"),
        ("He travelled to see Anahera Walker in Rotorua.", "Anahera Walker"),
    ],
)
def test_the_same_words_beside_people_still_name_them(text: str, name: str) -> None:
    assert any(name in span for span in _spans(text, "PERSON")), pii_find(text)
