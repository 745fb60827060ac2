"""Whether an act found in a text is asked of its reader outright (which a document's genre,
the sender's own word, does not excuse), and whether a secret is kept only for a surprise."""

from __future__ import annotations

import re

#: An act asked of the reader outright ("please change …", "can you update …"; or with a link
#: to do it at).
_ASKED = re.compile(
    r"(?:^\s*|[,:;–—-]\s*|\b(?:so|and|then|now)\s+)(?:please|pls|plz|kindly|"
    r"(?:can|could|would|will) you(?: please)?|i need you to|we need you to|make sure(?: you)?|"
    r"you (?:must|need to|should))\b[,!]?\s+(?!not\b|never\b)"
)
#: A link to do something at, with or without its scheme ("secure-payee.com/update").
_LINK = re.compile(r"://|\bwww\.|\b[a-z0-9-]+\.(?:com|net|org|au|io|co|info|biz|xyz)\b/")
#: Where a clause starts, and the words that may stand before an imperative verb.
_CLAUSE_START = re.compile(r"[,;–—(]|\s-\s")
_KEY = re.compile(r"^\s*-?\s*[\w\" ]{1,40}:\s*$")
#: A request's verb, where an act's match starts with one.
_VERB_FIRST = re.compile(
    r"(?:change|update|swap|switch|replace|redirect|amend|move|pay|transfer|send|forward|e-?mail|"
    r"share|upload|approve|release|process|refund|deposit|skip|bypass|delete|remove|mark|wire|"
    r"export|leave|keep|don't|do not)\b"
)
_IMPERATIVE_LEAD = frozenset(("", "just", "also", "so", "and", "then", "now", "simply", "and then"))
#: Oversight named in a sentence: a surprise there does not excuse keeping it from them.
_OVERSEEN = re.compile(
    r"\b(?:coordinator|commission|incident|report|manager|finance|quality|register|log|"
    r"audit|supervisor|team leader|plan manager|police|doctor|nurse)"
)
#: A secret kept for a surprise (a party, a present): no concealment from oversight.
_SURPRISE = re.compile(
    r"\bsurprise (?:party|birthday|visit|present|gift|morning tea|afternoon tea|farewell|"
    r"send-?off|lunch|dinner|cake|card|celebration|baby shower|\d+(?:st|nd|rd|th))\b"
)


def asked(folded: str, sentence: str, sentence_start: int, start: int, *, known: bool) -> bool:
    """The act at ``start`` is asked outright ("please …", "can you …"), or with a link to do it
    at; from an unknown sender (not ``known``), also when its verb opens a clause (the
    imperative), unless inside a quotation or the value of a key ("name: update_vendor_bank")."""
    if _ASKED.search(sentence) or _LINK.search(sentence):
        return True
    if known or not _VERB_FIRST.match(folded, start):
        return False
    line = folded[folded.rfind("\n", 0, start) + 1 : start]
    clause = _CLAUSE_START.split(folded[sentence_start:start])[-1]
    return clause.strip() in _IMPERATIVE_LEAD and line.count('"') % 2 == 0 and not _KEY.search(line)


def kept_for_a_surprise(sentence: str) -> bool:
    """A secret kept, in this sentence, for a surprise, and from no one who oversees care."""
    return bool(_SURPRISE.search(sentence)) and not _OVERSEEN.search(sentence)
