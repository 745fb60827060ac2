"""What a channel carries, enforced (docs/channels.md): the rules an answer is sent under, whatever
the model wrote.

- **SMS**: plain text (Markdown taken out: emphasis, headings, code; a link as ``text (url)``),
  typographic punctuation turned into its GSM-7 equivalent (one curly quote would switch the
  whole message to UCS-2 and halve what a segment holds), counted in segments as a phone counts
  them (GSM-7: 160 septets alone, 153 per part; UCS-2: 70 / 67), capped at
  ``RABS_SMS_MAX_SEGMENTS`` and at the adapter's longest answer, cut at a word with a clear
  marker (``RABS_SMS_TRUNCATION_MARKER``).
- **E-mail**: plain text (Markdown taken out), capped at the adapter's longest answer if it has
  one; the subject and the threading headers are the sender's business (``replies``).
- **Chat**: Markdown as written, and its rendering as HTML (raw HTML in the text is escaped,
  never passed through), capped at the adapter's longest answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from markdown_it import MarkdownIt
from markdown_it.token import Token

from brainframe.models import Channel

#: GSM 03.38's default alphabet (one septet each) and its extension table (two: ESC + char).
GSM7_BASIC = frozenset(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    "ÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
)
GSM7_EXTENDED = frozenset("^{}\\[~]|€\f")

#: Typography a model likes and GSM-7 lacks, with what a phone shows instead.
_TO_GSM = str.maketrans(
    {
        "‘": "'",
        "’": "'",
        "‚": "'",
        "“": '"',
        "”": '"',
        "„": '"',
        "–": "-",
        "—": "-",
        "‑": "-",
        "…": "...",
        "\u00a0": " ",
        "•": "-",
        "\t": " ",
    }
)


@dataclass(frozen=True)
class Composed:
    """An answer as the channel will carry it."""

    body: str
    html: str = ""
    segments: int = 1
    truncated: bool = False


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    # js-default: no raw HTML (escaped), no linkify; tables and strikethrough on.
    return MarkdownIt("js-default")


def markdown_html(text: str) -> str:
    return _markdown().render(text).strip()


def _inline_text(token: Token) -> str:
    out: list[str] = []
    href: list[str] = []
    link_text: list[int] = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            out.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            out.append("\n")
        elif child.type == "image":
            out.append(child.content or "")
        elif child.type == "link_open":
            href.append(str(child.attrs.get("href", "")))
            link_text.append(len(out))
        elif child.type == "link_close" and href:
            url, start = href.pop(), link_text.pop()
            shown = "".join(out[start:])
            if url and url not in (shown, f"mailto:{shown}"):
                out.append(f" ({url})")
    return "".join(out)


def markdown_plain(text: str) -> str:
    """Markdown as plain text: paragraphs kept, list items as ``- item`` (numbered ones
    numbered), quotes and code as their text, emphasis and headings as plain words."""
    tokens = _markdown().parse(text)
    blocks: list[tuple[str, int]] = []  # (text, the list it is an item of; 0: none)
    lists: list[list[int]] = []  # per open list: [its number, ordered, next item number]
    made = 0
    prefix, item_of = "", 0
    for token in tokens:
        if token.type in ("bullet_list_open", "ordered_list_open"):
            made += 1
            is_ordered = int(token.type == "ordered_list_open")
            lists.append([made, is_ordered, int(token.attrs.get("start", 1) or 1)])
        elif token.type in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif token.type == "list_item_open" and lists:
            number, ordered, next_item = lists[-1]
            indent = "  " * (len(lists) - 1)
            prefix = f"{indent}{next_item}. " if ordered else f"{indent}- "
            item_of = number
            lists[-1][2] += 1
        elif token.type == "inline":
            blocks.append((prefix + _inline_text(token), item_of))
            prefix, item_of = "", 0
        elif token.type in ("fence", "code_block"):
            blocks.append((token.content.rstrip("\n"), 0))
        elif token.type == "hr":
            blocks.append(("---", 0))
    out = ""
    for n, (block, item_of) in enumerate(blocks):  # a list's items a line each
        if n:
            out += "\n" if item_of and blocks[n - 1][1] == item_of else "\n\n"
        out += block
    return out.strip()


def gsm7(text: str) -> bool:
    return all(c in GSM7_BASIC or c in GSM7_EXTENDED for c in text)


def _units(text: str, is_gsm: bool) -> int:
    if is_gsm:
        return sum(2 if c in GSM7_EXTENDED else 1 for c in text)
    return len(text.encode("utf-16-le")) // 2


def sms_segments(text: str) -> int:
    """How many segments a phone sends ``text`` in (concatenated SMS)."""
    is_gsm = gsm7(text)
    units = _units(text, is_gsm)
    single, part = (160, 153) if is_gsm else (70, 67)
    if units <= single:
        return 1
    return math.ceil(units / part)


def _cut(text: str, room: int, is_gsm: bool) -> str:
    """The longest prefix of ``text`` within ``room`` units, ending at a word if one ends in the
    last fifth of it."""
    kept, used = [], 0
    for c in text:
        cost = _units(c, is_gsm)
        if used + cost > room:
            break
        kept.append(c)
        used += cost
    cut = "".join(kept)
    space = cut.rfind(" ")
    if space > len(cut) * 0.8:
        cut = cut[:space]
    return cut.rstrip(" ,;:-")


def sms_compose(text: str, *, max_length: int = 0) -> Composed:
    """SMS rules: plain text, GSM-7 where it can be, at most ``RABS_SMS_MAX_SEGMENTS`` segments
    and ``max_length`` characters, cut with the truncation marker."""
    plain = markdown_plain(text).translate(_TO_GSM)
    limit = max(1, int(settings.RABS_SMS_MAX_SEGMENTS))
    marker = str(settings.RABS_SMS_TRUNCATION_MARKER)
    is_gsm = gsm7(plain + marker)
    part = 153 if is_gsm else 67
    room = (160 if is_gsm else 70) if limit == 1 else part * limit
    over_length = bool(max_length) and len(plain) > max_length
    if sms_segments(plain) <= limit and not over_length:
        return Composed(body=plain, segments=sms_segments(plain))
    room -= _units(marker, is_gsm)
    if max_length:
        room = min(room, max_length - len(marker))
    body = _cut(plain, max(0, room), is_gsm) + marker
    return Composed(body=body, segments=sms_segments(body), truncated=True)


def _capped(text: str, max_length: int, marker: str) -> tuple[str, bool]:
    if not max_length or len(text) <= max_length:
        return text, False
    return _cut(text, max_length - len(marker), False) + marker, True


def compose(channel: str, text: str, *, max_length: int = 0) -> Composed:
    """``text`` (the agent's answer, Markdown or not) as ``channel`` carries it."""
    if channel == Channel.SMS:
        return sms_compose(text, max_length=max_length)
    marker = str(settings.RABS_SMS_TRUNCATION_MARKER)
    if channel == Channel.EMAIL:
        body, cut = _capped(markdown_plain(text), max_length, marker)
        return Composed(body=body, truncated=cut)
    body, cut = _capped(text.strip(), max_length, marker)
    return Composed(body=body, html=markdown_html(body), truncated=cut)
