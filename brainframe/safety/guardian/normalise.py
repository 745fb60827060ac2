"""What the Guardian reads: a text with its disguises taken off, and every hidden part brought out.

``normalise(text)`` returns the text's readings and the steps that produced them (recorded in the
assessment, ``normalisation``):

- ``invisible``: zero-width, bidirectional-control and other format characters were removed
  (only counted when they stood inside words or in numbers: an emoji's joiner is not a disguise);
- ``unicode_tags``: characters of the Unicode tag block (U+E0020–U+E007E, invisible when
  displayed) carried ASCII text: it is read as such;
- ``nfkc``: compatibility forms (full-width letters, mathematical alphabets, ligatures) folded;
- ``confusables``: letters of another script that look Latin (Cyrillic "о", Greek "Ρ") inside
  Latin words were read as Latin, ``mixed_script`` says how many words mixed scripts;
- ``hidden_html``: text a browser would not show (CSS ``display:none``, ``visibility:hidden``,
  zero font size or opacity, white text, the ``hidden`` attribute, comments) and text in
  ``alt``, ``title`` and ``aria-label`` attributes, read as a reading of its own;
- ``html``: the visible text of an HTML document, without its markup;
- ``reversed`` / ``rot13``: the text read backwards or in ROT13, kept when that reading looks
  more like English than the text does (the whole text, else the lines that do);
- ``url`` / ``entities`` / ``base64`` / ``hex``: percent-encoding, HTML entities, base64 runs and
  bytes written in hexadecimal decoded.

Folding for matching (case, diacritics, look-alikes) is ``fold``; the patterns read folded views.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import re
import unicodedata
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import unquote

#: Letters of other scripts that look like Latin ones (Unicode's confusables for the Latin
#: alphabet, the ones seen in practice: Cyrillic, Greek, Armenian, Cherokee, Latin small caps).
CONFUSABLES = {
    **dict(zip("аеёкмнорстухіїјѕԁԛԝɡһӏԍ", "aeekmhopctyxiijsdqwghlg", strict=True)),
    **dict(zip("вгпдлзбщьъ", "brndnzbwbb", strict=True)),
    **dict(zip("АВЕКМНОРСТХІЈЅЗ", "abekmhopctxijs3", strict=True)),
    **dict(zip("αβεικνορτυχΑΒΕΙΚΜΝΟΡΤΧΥΖ", "abeiknoptuxabeikmnoptxyz", strict=True)),
    **dict(zip("օսոհզ", "ounhq", strict=True)),
    **dict(zip("ᎪᏴᏟᎬᎻᏆᎫᏦᏞᎷᏁᎾᏢᏚᎢᏙᏔᎩᏃ", "abcehijklmnopstvwyz", strict=True)),
    **dict(zip("ᴀʙᴄᴅᴇғɢʜɪᴊᴋʟᴍɴᴏᴘʀsᴛᴜᴠᴡʏᴢ", "abcdefghijklmnoprstuvwyz", strict=True)),
}
_CONFUSABLE_TABLE = str.maketrans(CONFUSABLES)
#: Letters with no decomposition to a base letter, read as their base for matching.
_BASE_LETTERS = str.maketrans({"đ": "d", "Đ": "d", "ł": "l", "Ł": "l", "ø": "o", "ı": "i"})
#: Zero-width, bidirectional controls, soft hyphen, word joiners, BOM, C0 controls but tab and
#: newline, variation selectors.
INVISIBLE = re.compile(
    r"[\u200b-\u200f\u2028-\u202f\u2060-\u206f\ufeff\u00ad\u180e\ufe00-\ufe0f"
    r"\x00-\x08\x0b-\x1f\x7f]"
)
_INSIDE_WORD = re.compile(
    r"(?<=[^\W_])[\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\u00ad\u180e]+(?=[^\W_])"
)
_TAGS = re.compile(r"[\U000e0000-\U000e007f]+")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{24,}={0,2}")
#: Bytes written in hexadecimal ("72 65 76 …", "0x72,0x65", "\\x72\\x65", "7265…", over lines):
#: twelve bytes or more.
_HEX_RUN = re.compile(r"(?<![0-9a-zA-Z])(?:(?:0x|\\x)?[0-9a-fA-F]{2}[\s:,-]{0,2}){12,}")
_HEX_NOISE = re.compile(r"0x|\\x|[\s:,-]")
_LATIN = re.compile(r"[a-zA-Z]")
_WORDS = re.compile(r"[^\W\d_]+")
_ASCII_WORDS = re.compile(r"[a-z]+")  # _WORDS on lower-cased ASCII text, faster
_ROT13 = str.maketrans(
    "abcdefghijklmnopqrstuvwxyz", "nopqrstuvwxyzabcdefghijklm"
)  # lower case: the words are read lower-cased

#: Common English words: a reading (reversed, ROT13) that has many more of them than the text
#: itself is what the text was hiding.
_COMMON = frozenset(
    [
        "the",
        "and",
        "to",
        "of",
        "a",
        "in",
        "is",
        "you",
        "that",
        "it",
        "for",
        "on",
        "with",
        "as",
        "be",
        "this",
        "are",
        "your",
        "all",
        "or",
        "by",
        "from",
        "at",
        "not",
        "have",
        "an",
        "we",
        "will",
        "can",
        "me",
        "my",
        "our",
        "please",
        "send",
        "now",
        "any",
        "do",
        "if",
        "what",
        "about",
        "them",
        "their",
        "these",
        "instructions",
        "ignore",
        "previous",
        "system",
        "prompt",
        "password",
        "reveal",
        "data",
        "email",
        "list",
        "give",
        "tell",
        "us",
        "into",
        "new",
        "out",
        "no",
        "only",
        "then",
        "when",
        "they",
        "there",
        "is",
        "was",
    ]
)
#: The words whose reversal, or ROT13, is a common word (reading a word backwards or in ROT13
#: and looking it up is looking it up here).
_COMMON_REVERSED = frozenset(w[::-1] for w in _COMMON)
_COMMON_ROT13 = frozenset(w.translate(_ROT13) for w in _COMMON)


@dataclass(frozen=True)
class Normalised:
    #: (how, text): "" for the text itself (NFKC, invisible characters removed, look-alikes
    #: folded where they sat inside Latin words), then the other readings.
    readings: tuple[tuple[str, str], ...]
    steps: tuple[str, ...]
    #: Words that mixed a Latin letter with a look-alike of another script.
    mixed_script: int = 0
    #: Text a reader would not see (hidden HTML parts, Unicode tag characters).
    hidden: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return self.readings[0][1]


def fold(text: str) -> str:
    """Lower case, NFKC, look-alikes read as Latin, diacritics and invisible characters gone:
    the form the patterns match."""
    if text.isascii():
        return INVISIBLE.sub("", text).lower()
    text = unicodedata.normalize("NFKC", text).translate(_CONFUSABLE_TABLE)
    text = text.translate(_BASE_LETTERS)
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return INVISIBLE.sub("", text).lower()


def _mixed_words(text: str) -> tuple[str, int]:
    """Fold look-alikes inside words that also hold Latin letters; how many words did."""
    count = 0

    def word(match: re.Match[str]) -> str:
        nonlocal count
        token = match.group()
        if token.isascii() or not _LATIN.search(token):
            return token
        folded = token.translate(_CONFUSABLE_TABLE)
        if folded != token and all(
            c.isascii() or unicodedata.name(c, "").startswith("LATIN") for c in folded
        ):
            count += 1
            return folded
        return token

    return _WORDS.sub(word, text), count


class _HtmlReader(HTMLParser):
    """Splits an HTML document into what a browser shows and what it hides."""

    _HIDDEN_STYLE = re.compile(
        r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?![.\d]*[1-9])|"
        r"opacity\s*:\s*0(?:\.0+)?\s*(?:;|$)|color\s*:\s*(?:#fff(?:fff)?\b|white\b|"
        r"transparent\b|rgba?\(\s*255\s*,\s*255\s*,\s*255)|(?:height|width)\s*:\s*0(?:px)?\s*;"
        r"[^\"']*overflow\s*:\s*hidden|left\s*:\s*-\d{3,}px",
        re.I,
    )
    _VOID = frozenset(
        [
            "area",
            "base",
            "br",
            "col",
            "embed",
            "hr",
            "img",
            "input",
            "link",
            "meta",
            "param",
            "source",
            "track",
            "wbr",
        ]
    )
    _ATTRIBUTES = ("alt", "title", "aria-label", "aria-description", "placeholder")

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.visible: list[str] = []
        self.hidden: list[str] = []
        self._stack: list[tuple[str, bool]] = []  # (tag, hides its content)
        self._skip = 0  # inside <script>/<style>

    def _hiding(self) -> bool:
        return any(h for _, h in self._stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name in self._ATTRIBUTES:
            if values.get(name):
                self.hidden.append(str(values[name]))
        if tag in ("script", "style"):
            self._skip += 1
            return
        if tag in self._VOID:
            return
        hides = (
            "hidden" in values
            or bool(self._HIDDEN_STYLE.search(values.get("style") or ""))
            or values.get("aria-hidden") == "true"
            or bool(re.search(r"\b(?:hidden|sr-only|visually-hidden)\b", values.get("class") or ""))
        )
        self._stack.append((tag, hides))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip = max(0, self._skip - 1)
            return
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i][0] == tag:
                del self._stack[i:]
                break

    def handle_data(self, data: str) -> None:
        if self._skip or not data.strip():
            return
        (self.hidden if self._hiding() else self.visible).append(data.strip())

    def handle_comment(self, data: str) -> None:
        if data.strip():
            self.hidden.append(data.strip())


_HTML_TAG = re.compile(r"<(?:[a-zA-Z][a-zA-Z0-9-]*[\s/>]|!--)")


def _html(text: str) -> tuple[str, str] | None:
    """(visible text, hidden text) of an HTML document or fragment; None for plain text."""
    if len(_HTML_TAG.findall(text)) < 1:
        return None
    reader = _HtmlReader()
    try:
        reader.feed(text)
        reader.close()
    except (AssertionError, ValueError):  # malformed beyond what the parser tolerates
        return None
    return " ".join(reader.visible), "\n".join(reader.hidden)


def decodings(text: str) -> list[tuple[str, str]]:
    """Other readings of the raw text: URL, HTML entity, base64 and hexadecimal decodings."""
    found = []
    if "%" in text:
        decoded = unquote(text)
        if decoded != text:
            found.append(("url", decoded))
    if "&" in text:
        decoded = html.unescape(text)
        if decoded != text:
            found.append(("entities", decoded))
    for run in _BASE64_RUN.findall(text) if len(text) >= 24 else ():
        try:
            raw = base64.b64decode(run + "=" * (-len(run) % 4), validate=False)
            decoded = raw.decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        printable = sum(ch.isprintable() for ch in decoded) / max(1, len(decoded))
        if printable > 0.95 and re.search(r"[a-zA-Z]{3,} [a-zA-Z]{2,}", decoded):
            found.append(("base64", decoded))
    for run in _HEX_RUN.findall(text):
        try:
            decoded = bytes.fromhex(_HEX_NOISE.sub("", run)).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            continue
        printable = all(ch.isprintable() or ch in "\n\r\t" for ch in decoded)
        if printable and re.search(r"[a-zA-Z]{3,} [a-zA-Z]{2,}", decoded):
            found.append(("hex", decoded))
    return found


def _backwards(text: str) -> str:
    return text[::-1]


def _rot13(text: str) -> str:
    return codecs.decode(text, "rot13")


def _lines_reading(head: str, disguised: frozenset[str]) -> list[str]:
    """The lines of ``head`` (lower-cased) that read more like English disguised than as they
    are: at least three disguised common words, twice the plain ones and one more."""
    found = []
    for line in head.splitlines():
        words = _WORDS.findall(line)
        english = sum(map(_COMMON.__contains__, words))
        if sum(map(disguised.__contains__, words)) >= max(3, 2 * english + 1):
            found.append(line)
    return found


def normalise(text: str) -> Normalised:
    steps: list[str] = []
    hidden: list[str] = []
    readings: list[tuple[str, str]] = []
    plain = text.isascii()  # no tag characters, look-alikes or invisible joiners to find
    tags = () if plain else _TAGS.findall(text)
    if tags:
        carried = "".join(chr(ord(c) - 0xE0000) for run in tags for c in run).strip()
        if carried:
            steps.append("unicode_tags")
            hidden.append(carried)
        text = _TAGS.sub("", text)
    if not plain and _INSIDE_WORD.search(text):
        steps.append("invisible")
    base = INVISIBLE.sub("", text) if not text.isascii() or INVISIBLE.search(text) else text
    base = base.replace("\u2028", "\n")
    mixed = 0
    if not base.isascii():
        nfkc = unicodedata.normalize("NFKC", base)
        if nfkc != base:
            steps.append("nfkc")
            base = nfkc
        base, mixed = _mixed_words(base)
        if mixed:
            steps.append("confusables")
    readings.append(("", base))
    parts = _html(base) if "<" in base else None
    if parts is not None:
        visible, concealed = parts
        steps.append("html")
        readings.append(("html", visible))
        if concealed.strip():
            steps.append("hidden_html")
            hidden.append(concealed)
    readings += [("hidden", h) for h in hidden]
    # Whether the text reads better backwards or in ROT13: judged on its first 2 KB, its words
    # found once (reversing or rotating a text reverses or rotates each of its words).
    head = base[:2048].lower()
    ascii_text = base.isascii()
    words = (_ASCII_WORDS if ascii_text else _WORDS).findall(head)
    english = sum(map(_COMMON.__contains__, words))
    needed = max(3, 2 * english + 1)
    disguises = [("reversed", _COMMON_REVERSED, _backwards, len(words) >= needed)]
    if ascii_text:
        disguises.append(("rot13", _COMMON_ROT13, _rot13, len(words) >= needed and len(base) >= 12))
    for how, table, undo, whole in disguises:
        count = sum(map(table.__contains__, words))
        if whole and count >= needed:
            reading = (how, undo(base))
        elif count >= 3 and (lines := _lines_reading(head, table)):  # one line, in plain text
            # (the whole text's ROT13 is a view of its own in the Guardian; one line's is not)
            reading = ("rot13_lines" if how == "rot13" else how, "\n".join(map(undo, lines)))
        else:
            continue
        steps.append(how)
        readings.append(reading)
    for how, decoded in decodings(base):
        steps.append(how)
        readings.append((how, decoded))
    return Normalised(tuple(readings), tuple(dict.fromkeys(steps)), mixed, tuple(hidden))
