"""People's names the English model misses: names of many origins, in any case, after a cue.

The spaCy model finds names mostly by their capitals and by English context, so it misses names
written in lower case ("client mehmet yılmaz") and many names of non-English origin. This adds:

- **a cue and known names**: after a word that introduces a person ("client", "participant",
  "Mr", "Mrs", "Dr", a greeting such as "Hi", "Dear", "Kia ora", "Malo e lelei", a relative
  such as "his sister"), one to four words that are all known first or last names (case and
  diacritics ignored) are a name;
- **two capitalised known names** ("Grzegorz Dąbrowski", "Sione Fifita"): a known first name
  followed by a known last name, neither a common English word.

Known names: ``safety.namelist`` (``names.txt.gz``, from the ``names-dataset`` package, shared
with the Guardian). ``nameparser`` splits off titles and suffixes.

    python -m brainframe.safety.pii.names --build   # rebuild names.txt.gz (needs names-dataset)
"""

from __future__ import annotations

import argparse
import gzip
import re
from itertools import pairwise
from pathlib import Path

from brainframe.safety.namelist import (
    MAX_RANK,
    NAMES_PATH,
    known_name,
)
from brainframe.safety.namelist import common_words as _common_words
from brainframe.safety.namelist import plain as _plain
from brainframe.safety.namelist import rank as _rank

_CUE = re.compile(
    r"\b(?:client|participant|resident|customer|patient|carer|worker|nominee|guardian|"
    r"mr|mrs|ms|miss|mx|dr|prof|sir|madam|"
    r"hi|hello|hey|dear|morning|afternoon|evening|thanks|thank you|cheers|regards|"
    r"kia ora|tena koe|malo e lelei|bula|talofa|chao|xin chao|salam|salaam|as-?salamu alaikum|"
    r"namaste|sat sri akal|ni hao|annyeong|g'?day|hiya|"
    r"son|daughter|mum|mother|dad|father|sister|brother|wife|husband|partner|aunt|uncle|"
    r"grandmother|grandfather|nan|nana|cousin|aunty|auntie|named|called|"
    r"call|ring|text|phone|ask|tell|thank|remind|"
    r"surname|family name|last name|given names?|first names?|full name|preferred name|"
    r"name(?=\s*:))"
    r"\b\.?,?:?(?:\s*\(\s*|\s+)",
    re.IGNORECASE,
)
_TOKEN = re.compile(r"[^\W\d_]+(?:['’-](?!s\b)[^\W\d_]+)*")


#: Words of this business that are no English word and no name ("client ndis", "carer sil").
_DOMAIN_WORDS = frozenset(
    [
        "ndis",
        "ndia",
        "sil",
        "sda",
        "gp",
        "ot",
        "pt",
        "sms",
        "app",
        "apps",
        "rabs",
        "hiace",
        "covid",
        "centrelink",
        "medicare",
        "mygov",
        "carers",
        "roster",
        "rostering",
        "whatsapp",
        "zoom",
        "teams",
        "okay",
        "ok",
        "iban",
        "bsb",
        "abn",
        "tfn",
        "handover",
    ]
)


def only_common_words(span: str, *, any_rank: bool = False) -> bool:
    """A span the model took for a name that is only common English words: in a text in lower
    case, none of them a very common name ("she loved it" → "loved"); with capitals
    (``any_rank``), none of them a name anywhere in the list ("Guilty Pleasures", "Wisdom and
    Discipline"; but "Gary", "Reed" are names somewhere)."""
    words = _TOKEN.findall(span)
    if any_rank:
        if len(words) == 1 and _plural_word(words[0]):
            return True  # "Cautionary Tales": a plural noun ranked only rarely as a first name
        return bool(words) and all(
            w.lower() in _common_words() and not any(_rank(w)) for w in words
        )
    return bool(words) and all(w.lower() in _common_words() and not known_name(w) for w in words)


def _plural_word(word: str) -> bool:
    """A first name too rare to be taken alone (``LONE_RANK``) that is the plural of a common
    word ("Tales") is the word."""
    first, last = _rank(word)
    lower = word.lower()
    return (
        lower.endswith("s")
        and lower[:-1] in _common_words()
        and lower in _common_words()
        and not last
        and first > LONE_RANK
        and not known_name(word)
    )


def _unknown_word(word: str, lower_case: bool) -> bool:
    """After a cue, a word that is no English word nor one of this business's is taken for a
    name too ("participant mereana"): capitalised, unless the whole text is in lower case."""
    lower = word.lower()
    return (
        len(lower) >= 3
        and (lower_case or word[0].isupper())
        and lower not in _DOMAIN_WORDS
        and lower not in _common_words()
        and _plain(word) not in _common_words()
    )


def _known_token(word: str, *, within: bool) -> bool:
    """A known name; a hyphenated one ("Soo-ah", "Jean-Luc") when each part is a name."""
    if known_name(word, within=within):
        return True
    parts = word.split("-")
    return len(parts) > 1 and all(p and known_name(p, within=True) for p in parts)


def cued_names(text: str) -> list[tuple[int, int]]:
    """Spans of names after a cue, and of two capitalised known names in a row."""
    spans: list[tuple[int, int]] = []
    lower_case = not any(c.isupper() for c in text)
    for cue in _CUE.finditer(text):
        end, count, at = cue.end(), 0, cue.end()
        # a form's labelled field ("name: teuila sapolu") is a name in any case
        labelled = lower_case or cue.group().rstrip().endswith(":")
        while count < 4:
            token = _TOKEN.match(text, at)
            if token is None or not (
                _known_token(token.group(), within=count > 0)
                or _unknown_word(token.group(), labelled)
            ):
                break
            end, count = token.end(), count + 1
            gap = re.match(r"[ \t]+", text[token.end() :])
            if gap is None:
                break
            at = token.end() + gap.end()
        if count:
            spans.append((cue.end(), end))
    spans += _introduced(text)
    spans += _rostered(text)
    spans += _lone_names(text, lower_case)
    tokens = list(_TOKEN.finditer(text))
    for a, b in pairwise(tokens):
        if not (a.group()[0].isupper() and b.group()[0].isupper()):
            continue
        if text[a.end() : b.start()] != " ":
            continue
        first_rank, _ = _rank(a.group())
        _, last_rank = _rank(b.group())
        if re.match(r"\s*\d", text[b.end() : b.end() + 3]) or re.search(
            r"\d\s*$", text[max(0, a.start() - 3) : a.start()]
        ):
            continue  # a street or place beside a number: part of an address
        if not (first_rank and last_rank):
            continue
        # two known names; or a first name that is also a word before a surname that is none
        # ("Hope Tuilagi", not "Grace Park")
        if (known_name(a.group()) and known_name(b.group())) or (
            known_name(a.group(), within=True) and known_name(b.group(), strict=True)
        ):
            spans.append((a.start(), b.end()))
    return spans


#: "hey its losa, …", "this is Ana from …", "gurdeep here", "Łukasz — can you …", "Võ Văn Hùng,
#: 67, lives with …": a known name introducing the writer, addressed at the start, or with an age.
_SELF = re.compile(
    r"(?:^|[.!?,\n]\s*|(?:hi|hey|hello|morning)\b[ ,]*)(?:it'?s|its|this is|i'?m|im)\s+"
    r"([^\W\d_]+)\b(?!['’]s)",
    re.IGNORECASE,
)
_HERE = re.compile(r"(?:^|[.!?,\n]\s*)([^\W\d_]+)\s+here\b", re.IGNORECASE)
_VOCATIVE = re.compile(r"^\s*([^\W\d_]+)\s*[—–:,-]\s")
#: A sign-off: a dash and one word at the end of a message ("… 0487 320 916 - lakshmi").
_SIGNED = re.compile(r"(?:^|\s)[—–-]+\s*([^\W\d_]+)[\s.!]*$")
#: A sentence that starts with who did what, in a note's words ("Callum had a settled night",
#: "Eliza to check the lock"): a first name that is also a word, vouched for by its verb.
_DOES = re.compile(
    r"(?:^|[.!?\n]\s*)([A-Z][a-z]+)\s+(?:had|has|was|is|ate|slept|seemed|refused|declined|"
    r"enjoyed|went|needs|wants|asked|rang|called|said|to (?:check|call|ring|bring|collect|"
    r"follow up|book|arrange))\b"
)
_DOES_RANK = 300
_CALENDAR = frozenset(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december", "monday", "tuesday", "wednesday", "thursday", "friday",
     "saturday", "sunday")
)  # fmt: skip
_AGED = re.compile(r"\b([^\W\d_]+(?:\s+[^\W\d_]+){0,3}),\s*(?:aged\s+)?\d{1,3}\s*,")


def _introduced(text: str) -> list[tuple[int, int]]:
    spans = []
    lower_case = not any(c.isupper() for c in text)
    for expression in (_SELF, _HERE, _VOCATIVE, _SIGNED):
        for match in expression.finditer(text):
            word = match.group(1)
            # a capital in a text that has capitals vouches for a name that is also a word
            # ("it's Marguerite", "— Lakshmi"); in lower case only a name no word is
            capital = expression is _SELF and not lower_case and word[0].isupper()
            if (
                known_name(word, strict=True, within=capital)
                or _unknown_word(word, lower_case)
                or (expression is _SIGNED and known_name(word, within=True))
            ):
                spans.append(match.span(1))
    for match in _DOES.finditer(text):
        word = match.group(1)
        first, _ = _rank(word)
        if (
            0 < first <= _DOES_RANK
            and word.lower() not in _CALENDAR
            and known_name(word, within=True)
        ):
            spans.append(match.span(1))
    for match in _AGED.finditer(text):
        words = match.group(1).split()
        capitalised = [w for w in words if w[0].isupper()]
        if capitalised and all(known_name(w, within=True) for w in capitalised):
            start = match.start(1) + match.group(1).index(capitalised[0])
            spans.append((start, match.end(1)))
    return spans


#: A roster line: a day, a dash or colon, then who ("Sat - Hope / Rose / Will", "wed: grace").
_ROSTER = re.compile(
    r"\b(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day)?\b[^\n:–-]{0,30}?\s*[:–-]\s*"
    r"([^\n.;]+)",
    re.IGNORECASE,
)
_ROSTER_SPLIT = re.compile(r"\s*(?:/|,|&|\band\b|\s[–-]\s)\s*", re.IGNORECASE)


def _rostered(text: str) -> list[tuple[int, int]]:
    """The people of a roster line: each item of one to three words that are all names (a
    well-known first name first), whatever else they mean ("Hope", "grace", "hung tran")."""
    spans = []
    for line in _ROSTER.finditer(text):
        at = line.start(1)
        for item in _ROSTER_SPLIT.split(line.group(1)):
            words = item.split()
            start = text.index(item, at) if item else at
            at = start + len(item)
            if not 0 < len(words) <= 3 or not 0 < _rank(words[0])[0] <= LONE_RANK:
                continue  # a first name, and a common one ("pool" is a rare one)
            if all(known_name(w, within=True) for w in words):
                spans.append((start, start + len(item)))
    return spans


#: How high a name must rank (in some country's list) to be taken alone, without a cue.
LONE_RANK = 1000
_PLACE_NEXT = re.compile(r"\s*(?:\d|(?:u|ul|str|rkp|út|útja|utca)\.?\s)", re.IGNORECASE)
_PLACE_BEFORE = re.compile(r"(?:\d\s*|\b(?:de|da|do|del|della|di|la|ul\.|u\.|rua|calle|via)\s+)$")
_DETERMINER = re.compile(r"\b(?:the|a|an|this|that|these|those|our|your|their)\s+$", re.IGNORECASE)


def _lone_names(text: str, lower_case: bool) -> list[tuple[int, int]]:
    """A word that is a well-known name somewhere and no English word at all ("Took Farida and
    Bashir to the pool", "Tigist's walker"), capitalised (any word, in a text all in lower case);
    not after a determiner ("the Kia")."""
    spans = []
    for token in _TOKEN.finditer(text):
        word = token.group()
        if len(word) < 3 or not (lower_case or (word[0].isupper() and not word.isupper())):
            continue
        first, last = _rank(word)
        best = min(r for r in (first, last, MAX_RANK + 1) if r)
        if best > LONE_RANK or word.lower() in _DOMAIN_WORDS or not known_name(word, strict=True):
            continue
        if _DETERMINER.search(text, max(0, token.start() - 12), token.start()):
            continue
        if _PLACE_NEXT.match(text, token.end()) or _PLACE_BEFORE.search(
            text, max(0, token.start() - 12), token.start()
        ):
            continue  # "Stefana 28", "Király u. 15", "Quinta de São Tiago": a street or a place
        spans.append(token.span())
    return spans


_WORD = re.compile(r"\w+")


def capitalised(text: str) -> str:
    """``text`` with every word but the stop words capitalised (same length, same offsets): the
    model finds names by their capitals, so a text all in lower case is read this way."""
    from spacy.lang.en.stop_words import STOP_WORDS  # spaCy loads slowly: only when first used

    def capital(match: re.Match[str]) -> str:
        word = match.group()
        first = word[0].upper()
        if word in STOP_WORDS or len(first) != 1:
            return word
        return first + word[1:]

    return _WORD.sub(capital, text)


def build(out: Path = NAMES_PATH) -> int:
    """Write the known-names list from the names-dataset package (a development dependency)."""
    # Only when the list is rebuilt.
    import pickle
    from importlib.resources import files

    rows: set[tuple[str, int, str]] = set()
    for kind, filename in (("f", "first_names.pkl.gz"), ("l", "last_names.pkl.gz")):
        path = files("names_dataset") / "v3" / filename
        with gzip.open(str(path)) as f:
            data = pickle.load(f)
        for name, info in data.items():
            ranks = (info or {}).get("rank") or {}
            best = min(ranks.values(), default=0)
            if 0 < best <= MAX_RANK and _TOKEN.fullmatch(name):
                rows.add((kind, best, _plain(name)))
    lines = sorted(f"{kind}\t{rank}\t{name}\n" for kind, rank, name in rows)
    with gzip.GzipFile(filename="", mode="wb", fileobj=out.open("wb"), mtime=0) as f:
        f.write("".join(lines).encode())
    return len(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="store_true")
    args = parser.parse_args(argv)
    if args.build:
        print(f"wrote {NAMES_PATH.name}: {build()} names")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
