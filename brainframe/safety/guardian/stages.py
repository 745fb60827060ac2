"""The Guardian's model stages, asked where nothing named matched: the learned stage
(``learned``: public jailbreaks' style and words), the domain stage (``domain``: the same kind of
model trained on this business's own attacks and look-alikes) and the semantic stage
(``semantic``: what a text means, from the offline sentence model's token vectors).

They read every reading of the text (its visible text, hidden parts, decodings) and each keeps
its highest score. A known sender's document about attacks (training, research, a tutorial…)
that does not speak to a model is read as mention: it needs ``GENRE_FLOOR`` of a stage (an
unknown sender can add a genre's words to any request). Where the domain stage reads a text, the
learned and semantic stages count only when it scores at least ``AGREE``. The first stage at or
above its threshold names the verdict, in the order learned, domain, semantic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from brainframe.safety.guardian import mention, semantic
from brainframe.safety.guardian.domain import detector as own_detector
from brainframe.safety.guardian.learned import detector, features
from brainframe.safety.guardian.normalise import Normalised, fold
from brainframe.safety.guardian.patterns import ThreatPattern

NO_MATCH_RISK = 0.1
#: The stages run on texts from untrusted sources, and on any text at least this long (a short
#: argument that matched no pattern is rarely an attack; a long one may be a pasted jailbreak).
#: ``assess(…, learned=True/False)`` overrides.
LEARNED_MIN_CHARS = 256
#: …and on an untrusted source's text of at least this many words: fewer give the models nothing
#: to read that the patterns and the act rules do not ("UTC 2026-12-04T04:45 Friday", a status, a
#: number; "ignore previous instructions" and "approve all invoices" are the patterns' own).
LEARNED_MIN_WORDS = 4
_WORDS = re.compile(r"[^\W\d_]{2,}")
LEARNED_CATEGORY = "learned_injection"
LEARNED_PATTERN = "learned:injection"
DOMAIN_CATEGORY = "domain_injection"
DOMAIN_PATTERN = "domain:injection"
SEMANTIC_CATEGORY = "semantic_injection"
SEMANTIC_PATTERN = "semantic:injection"
#: Trust levels of a sender nobody knows: their word for what a text is, or that a quotation
#: is a report, is not taken.
UNKNOWN_SENDERS = ("untrusted", "hostile")
#: The score the stages need on a text that discusses attacks.
GENRE_FLOOR = 0.91
SEMANTIC_FLOOR = 0.97
#: The domain stage's base risk: a flag at standard and untrusted trust, a block only from a
#: hostile source. It was chosen on the business's own look-alikes; a reviewer decides.
DOMAIN_RISK = 0.5
#: The domain stage's score from which the learned and semantic stages' verdicts count.
AGREE = 0.5


@dataclass(frozen=True)
class Scores:
    learned: float
    semantic: float
    domain: float
    #: The base risk the stages give (``NO_MATCH_RISK`` when none counts) and the stage that
    #: gave it.
    base: float
    pattern: ThreatPattern | None


def learned_base(score: float, threshold: float) -> float:
    """A learned score as a base risk: below the model's threshold nothing (the no-match 0.1);
    from it 0.5 (a flag at standard and untrusted trust, a block only for hostile sources); from
    0.9, 0.6 (a flag at standard, a block from untrusted). The learned stage alone never blocks a
    standard source's text: it sends it to a reviewer."""
    if score < threshold:
        return NO_MATCH_RISK
    return 0.6 if score >= 0.9 else 0.5


def readings(norm: Normalised) -> list[str]:
    """What the stages read: the text (its visible text when it is HTML) and each other reading
    (hidden parts, decodings, a reversed or ROT13 text)."""
    found = dict(norm.readings)
    first = found.get("html") or found.get("entities") or found.get("url") or norm.text
    return [first, *(r for how, r in norm.readings[1:] if r is not first and r.strip())]


def applies(
    learned: bool | None, trust: str, text: str, source: str | None = None, entitled: bool = False
) -> str | None:
    """Which stages read the text: all of them ("all") on any long text and an unknown sender's
    of a few words; the domain stage alone ("domain") on a known person's short message arriving
    on a channel (``source``) that asks for an act they may not ask for or none (a compromised
    client's account writes short messages too; the public models were never tuned on a known
    sender's notes); none (None) otherwise."""
    if learned is not None:
        return "all" if learned else None
    if len(text) >= LEARNED_MIN_CHARS:
        return "all"
    if len(_WORDS.findall(text)) < LEARNED_MIN_WORDS:
        return None
    if trust in UNKNOWN_SENDERS:
        return "all"
    return "domain" if trust == "standard" and source is not None and not entitled else None


def scores(norm: Normalised, trust: str, *, domain: bool = True, public: bool = True) -> Scores:
    """The stages' scores and verdict. ``domain=False`` leaves the domain stage out (its score
    0): the text asks only for acts its sender may ask for, and the business's frauds are
    requests to act, so the sender's rights decide, not a model of their words.
    ``public=False`` leaves the learned and semantic stages out (scores 0)."""
    texts = readings(norm)
    model, meaning, own = detector(), semantic.detector(), own_detector()
    counted = [features(text) for text in texts]
    learned = round(max(model.score_features(f) for f in counted), 4) if public else 0.0
    sense = round(max(meaning.scores(texts)), 4) if public else 0.0
    ours = round(max(own.score_features(f) for f in counted), 4) if domain else 0.0
    # Where the domain stage read the text, the public models count only when it leans the
    # same way: what a tutorial or a vendor's notice shares with a jailbreak's style, the
    # business's own look-alikes have taught the domain stage to tell apart.
    agreed = not domain or ours >= AGREE
    floor = 0.0
    if (
        learned >= model.threshold or sense >= meaning.threshold or ours >= own.threshold
    ):  # only then is the genre worth reading
        # The genre is a known sender's word only: an unknown one can add "research" or
        # "training" to any request.
        folded = fold(texts[0])
        if (
            trust not in UNKNOWN_SENDERS
            and mention.genre(folded, known=True) is not None
            and not mention.addressed(folded)
        ):
            floor = GENRE_FLOOR
    if agreed and learned >= max(model.threshold, floor):
        base = learned_base(learned, model.threshold)
        name, category = LEARNED_PATTERN, LEARNED_CATEGORY
    elif ours >= max(own.threshold, floor):
        base, name, category = DOMAIN_RISK, DOMAIN_PATTERN, DOMAIN_CATEGORY
    else:
        # without the domain stage's agreement no score reaches the threshold (scores are <= 1)
        threshold = max(meaning.threshold, floor and SEMANTIC_FLOOR) if agreed else 2.0
        base, name, category = learned_base(sense, threshold), SEMANTIC_PATTERN, SEMANTIC_CATEGORY
    pattern = ThreatPattern(name, category, base, "") if base > NO_MATCH_RISK else None
    return Scores(learned, sense, ours, base, pattern)
