"""What a channel carries, enforced (docs/channels.md): SMS segments counted as a phone counts
them, cut with the marker; Markdown out of plain-text channels; chat's Markdown rendered with raw
HTML escaped."""

from __future__ import annotations

from typing import Any

import pytest

from brainframe.services.ledger.formatting import (
    compose,
    markdown_html,
    markdown_plain,
    sms_compose,
    sms_segments,
)


@pytest.fixture(autouse=True)
def sms_rules(settings: Any) -> None:
    settings.RABS_SMS_MAX_SEGMENTS = 3
    settings.RABS_SMS_TRUNCATION_MARKER = " (cut short)"


def test_segments_are_counted_as_a_phone_counts_them() -> None:
    assert sms_segments("a" * 160) == 1 and sms_segments("a" * 161) == 2
    assert sms_segments("a" * 306) == 2 and sms_segments("a" * 307) == 3
    # An extension character (€, [, ]) takes two septets.
    assert sms_segments("€" * 80) == 1 and sms_segments("€" * 81) == 2
    # One character outside GSM-7 makes the whole message UCS-2: 70 alone, 67 a part.
    assert sms_segments("ü" * 70 + "") == 1  # ü is GSM-7
    assert sms_segments("ł" * 70) == 1 and sms_segments("ł" * 71) == 2
    assert sms_segments("🙂" * 35) == 1 and sms_segments("🙂" * 36) == 2  # surrogate pairs


def test_an_sms_is_plain_gsm_text_cut_at_a_word_with_the_marker() -> None:
    text = "**Hi** Linh — it’s “on”… " + "The bus leaves at nine thirty sharp. " * 20
    sent = sms_compose(text)
    assert sent.body.startswith('Hi Linh - it\'s "on"... The bus')
    assert sent.truncated and sent.body.endswith(" (cut short)") and sent.segments == 3
    assert len(sent.body) <= 3 * 153
    # Cut between words: what is kept is followed by a space in the full text.
    kept = sent.body.removesuffix(" (cut short)")
    full = markdown_plain(text).translate(str.maketrans({"—": "-", "’": "'", "“": '"', "”": '"'}))
    full = full.replace("…", "...")
    assert full.startswith(kept) and full[len(kept)] == " "
    short = sms_compose("See you *Friday*.")
    assert (short.body, short.segments, short.truncated) == ("See you Friday.", 1, False)


def test_an_adapters_longest_answer_caps_an_sms_too() -> None:
    sent = sms_compose("word " * 100, max_length=60)
    assert len(sent.body) <= 60 and sent.body.endswith(" (cut short)") and sent.truncated


def test_markdown_becomes_plain_text_for_sms_and_email() -> None:
    text = (
        "# Friday\n\nBring **a hat** and `sunscreen`.\n\n- water\n- lunch\n\n"
        "1. meet\n2. go\n\nSee [the plan](https://rabs.example/plan).\n\n> quoted"
    )
    assert markdown_plain(text) == (
        "Friday\n\nBring a hat and sunscreen.\n\n- water\n- lunch\n\n1. meet\n2. go\n\n"
        "See the plan (https://rabs.example/plan).\n\nquoted"
    )
    assert compose("email", text).body == markdown_plain(text)


def test_chat_keeps_markdown_and_renders_it_with_raw_html_escaped() -> None:
    sent = compose("chat", "**Yes** <script>alert(1)</script> [x](javascript:alert(1))")
    assert sent.body.startswith("**Yes**")
    assert "<strong>Yes</strong>" in sent.html and "<script>" not in sent.html
    assert "&lt;script&gt;" in sent.html and 'href="javascript' not in sent.html
    assert markdown_html("*a*") == "<p><em>a</em></p>"
