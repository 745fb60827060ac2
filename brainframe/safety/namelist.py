"""Known first and last names (shared by the PII filter, which finds names, and the Guardian,
which asks whether an address's local part names a person).

``names.txt.gz`` (checked in) is derived from the ``names-dataset`` package: first and last names
from 105 countries, by frequency rank, those ranked within ``MAX_RANK`` somewhere, folded to
lower case (``python -m brainframe.safety.pii.names --build`` rebuilds it); ``EXTRA_NAMES`` adds
Māori and Tongan names the package lacks, ``AUSTRALIAN_NAMES`` Australian given names. A name
that is also a common English word (a whole word in the sentence model's vocabulary: "bus",
"day", "grace") counts only when it is among the most common names somewhere (rank ≤
``TOP_RANK``), and never when it is an English stop word.
"""

from __future__ import annotations

import gzip
import unicodedata
from functools import lru_cache
from pathlib import Path

NAMES_PATH = Path(__file__).with_name("names.txt.gz")
MAX_RANK = 2000
TOP_RANK = 150

#: Māori and Tongan given names and surnames (the package has no New Zealand or Tonga lists).
EXTRA_NAMES = [
    "aroha",
    "wiremu",
    "hemi",
    "tama",
    "tamati",
    "ngaire",
    "kiri",
    "rangi",
    "mere",
    "hine",
    "tane",
    "manaia",
    "nikau",
    "anahera",
    "ariana",
    "awhina",
    "hana",
    "huia",
    "kahu",
    "kauri",
    "mana",
    "marama",
    "moana",
    "ngaio",
    "pania",
    "rawiri",
    "reweti",
    "tui",
    "waimarie",
    "wikitoria",
    "hohepa",
    "mikaere",
    "pita",
    "ruihi",
    "matiu",
    "hirini",
    "aperahama",
    "teina",
    "tipene",
    "rewi",
    "tamahau",
    "hemaima",
    "ngata",
    "tamihana",
    "parata",
    "waititi",
    "horomona",
    "tuhiwai",
    "paewai",
    "ruatapu",
    "rangihau",
    "poutama",
    "hohaia",
    "pomare",
    "kereama",
    "ihaka",
    "nikora",
    "tawhiri",
    "whaanga",
    "tawhai",
    "ngapuhi",
    "katene",
    "rikihana",
    "tuhaka",
    "sione",
    "mele",
    "losaline",
    "vaipulu",
    "fifita",
    "taufa",
    "tupou",
    "havili",
    "moala",
    "latu",
    "vake",
    "fonua",
    "lolohea",
    "mahe",
    "pulu",
    "kaufusi",
    "piutau",
    "taumalolo",
    "vainikolo",
    "funaki",
    "kioa",
    "siaosi",
    "viliami",
    "salote",
    "lupe",
    "seini",
    "tevita",
    "semisi",
    "sitani",
    "saia",
    "filipe",
    "ofa",
    "kalolaine",
    "taniela",
    "feleti",
    "mosese",
    "vili",
    "ana",
]

#: Given names common in Australia that the package lacks (it has no Australian list), as first
#: names of a high rank.
AUSTRALIAN_NAMES = [
    "lachlan",
    "lochlan",
    "tahlia",
    "kirra",
    "kirrah",
    "indi",
    "tahnee",
    "narelle",
    "jedda",
    "kirrily",
    "bindi",
    "allira",
    "alira",
    "kaiya",
    "tarni",
    "yindi",
    "marlee",
    "bodhi",
    "jarryd",
    "jarred",
    "tiarne",
    "taylah",
    "jorja",
    "jaxon",
    "kiarna",
    "shontelle",
    "kailee",
    "jaydn",
    "shannyn",
    "kyah",
    "kalinda",
    "mirrin",
    "arkie",
]
AUSTRALIAN_RANK = 100


def plain(word: str) -> str:
    word = word.lower().replace("ı", "i").replace("ł", "l").replace("đ", "d")
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


@lru_cache(maxsize=1)
def known() -> tuple[dict[str, int], dict[str, int]]:
    """(first names, last names): plain lower-case name → best rank."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    with gzip.open(NAMES_PATH, "rt", encoding="utf-8") as f:
        for line in f:
            kind, rank, name = line.rstrip("\n").split("\t")
            target = first if kind == "f" else last
            target[name] = min(int(rank), target.get(name, MAX_RANK))
    for name in EXTRA_NAMES:
        first.setdefault(name, 1)
        last.setdefault(name, 1)
    for name in AUSTRALIAN_NAMES:
        first.setdefault(name, AUSTRALIAN_RANK)
    return first, last


@lru_cache(maxsize=1)
def common_words() -> frozenset[str]:
    """English stop words, and the whole words of the sentence model's vocabulary."""
    # spaCy and the static table load slowly: only when the PII filter first needs them.
    import json

    from spacy.lang.en.stop_words import STOP_WORDS

    from brainframe.embeddings.static import TABLE, read

    vocabulary = json.loads(read(TABLE)["tokenizer"])["model"]["vocab"]
    words = {w for w in vocabulary if w.isalpha() and not w.startswith("##")}
    return frozenset(words | set(STOP_WORDS))


def rank(word: str) -> tuple[int, int]:
    first, last = known()
    folded = plain(word)
    return first.get(folded, 0), last.get(folded, 0)


def known_name(word: str, *, strict: bool = False, within: bool = False) -> bool:
    """A known first or last name that is not an English word, or, when it is one, is also a
    very common name (``strict``: never; ``within`` a name already begun: any known name that
    is not a stop word, as "Văn" in "Lê Văn Thành")."""
    from spacy.lang.en.stop_words import STOP_WORDS  # spaCy loads slowly: only when first used

    lower = word.lower()
    if lower in STOP_WORDS or len(lower) < 2:
        return False
    first, last = rank(word)
    ranks = [r for r in (first, last) if r]
    if not ranks:
        return False
    if not within and (lower in common_words() or plain(word) in common_words()):
        return not strict and min(ranks) <= TOP_RANK
    return True
