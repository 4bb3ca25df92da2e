"""Respell what a speech recognizer heard with the words this user and deployment use.

A prompt makes Whisper expect rare words but it still writes near misses ("Fibault" for Thibault,
"decaling" for descaling, "order 108" for order 1008). Search and order lookups need the exact
spelling, so a transcript is corrected after decoding, conservatively:

- a heard word that is rare in English (wordfreq's table) and close in spelling (rapidfuzz) to a rare word
  of the vocabulary becomes that word; common words are never touched ("coffee" stays coffee
  even next to "Coffea");
- two heard words, neither a vocabulary word, that together spell a rare vocabulary word (nearly
  exactly) become it: Whisper splits a name it does not know into words it does ("Oka for");
- a number said right after "order" that is one edit from exactly one known order id becomes that
  id; other numbers (prices, counts) are left alone.

The thresholds were chosen on a development set of recordings that the word-error-rate bench does
not use (docs/VOICE.md, "Word error rate").
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import msgpack
from rapidfuzz import fuzz, process
from rapidfuzz.distance import DamerauLevenshtein

# zipf 3 is about once per million words: "kestrel" (2.5) is rare, "coffee" (4.9) is not
HEARD_MAX_ZIPF = 3.0
# vocabulary words worth correcting toward: long enough to match by spelling, and not everyday words
TARGET_MIN_LENGTH = 5
TARGET_MAX_ZIPF = 4.0
HEARD_MIN_LENGTH = 4
MIN_SIMILARITY = 75.0  # rapidfuzz ratio, 0-100
# two heard words that together spell a rare vocabulary word ("Oka for" -> Okafor, "hazel nuts" -> hazelnuts);
# nearly exact, since joining words is a bigger change than respelling one (development split: from 80 to
# 100 the same transcripts but one, where 85 swallowed a "The" into "Thibault"; without the rule that neither
# heard word is a vocabulary word, 90 joined "a cortado")
JOIN_MIN_SIMILARITY = 95.0
ORDER_WORDS = frozenset({"order", "orders", "number", "#"})

_TOKEN = re.compile(r"[A-Za-z][A-Za-z']*|\d+|#")  # a hyphen splits: "Oka-F-O-R" is letters spelled out
_UNIT = re.compile(r"\b\d+\s*(?:mm|ml|g|oz|kg|lb)\b", re.IGNORECASE)


@functools.cache
def english_zipf() -> dict[str, float]:
    """wordfreq's English table (its "small" list: every word said at least once per million, zipf >= 3),
    word -> zipf, read straight from the file the wheel ships. Not through wordfreq's API: it finds its
    data with `inspect.stack()`, which is not thread-safe beside Streamlit declaring a component on a
    page's thread (that then found "module is None")."""
    spec = importlib.util.find_spec("wordfreq")  # found, not imported: importing it runs inspect.stack()
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("wordfreq is not installed: run `make` (requirements.txt)")
    data = Path(spec.submodule_search_locations[0]) / "data" / "small_en.msgpack.gz"
    with gzip.open(data) as unpacked:
        header, *buckets = msgpack.unpack(unpacked, raw=False)
    if header.get("format") != "cB" or header.get("version") != 1:
        raise ValueError(f"unexpected word frequency file {data}: {header}")
    # bucket i holds the words of frequency 10 ** (-i / 100); zipf is log10 of the count per billion words
    return {word: round(9 - index / 100, 2) for index, bucket in enumerate(buckets) for word in bucket}


def load_word_frequencies() -> None:
    """The table is read on first use (about 0.1 s)."""
    english_zipf()


def zipf_frequency(word: str) -> float:
    return english_zipf().get(word.lower(), 0.0)


def is_rare(word: str, max_zipf: float) -> bool:
    return zipf_frequency(word) < max_zipf


@dataclass(frozen=True)
class Correction:
    heard: str
    corrected: str


@dataclass
class TranscriptCorrector:
    """Built once per vocabulary change; `correct` is a few microseconds per word."""

    words: dict[str, str] = field(default_factory=dict)  # lowercased -> spelling in the vocabulary
    order_ids: frozenset[str] = frozenset()

    @classmethod
    def from_terms(cls, terms: Iterable[str]) -> TranscriptCorrector:
        """`terms` as `core.vocabulary.speech_terms` gives them: names, values, products, order ids."""
        words: dict[str, str] = {}
        order_ids: set[str] = set()
        for term in terms:
            for part in re.split(r",\s*", str(term)):
                part = _UNIT.sub("", part).strip()  # "58mm" is a size, not a word to respell toward
                if part.isdigit():
                    order_ids.add(part)
                    continue
                for token in _TOKEN.findall(part):
                    if not token[0].isalpha() or len(token) < TARGET_MIN_LENGTH:
                        continue
                    if is_rare(token, TARGET_MAX_ZIPF):
                        words.setdefault(token.lower(), token)
        return cls(words, frozenset(order_ids))

    def __bool__(self) -> bool:
        return bool(self.words or self.order_ids)

    def corrections(self, text: str) -> list[tuple[int, int, Correction]]:
        """(start, end, correction) for each span of `text` to replace, in order."""
        found = []
        previous = ""
        tokens = list(_TOKEN.finditer(text))
        joined_with_previous = False
        for index, token in enumerate(tokens):
            heard = token.group()
            if joined_with_previous:
                joined_with_previous = False
                previous = heard.lower()
                continue
            following = tokens[index + 1] if index + 1 < len(tokens) else None
            if following is not None and text[token.end() : following.start()] == " ":
                joined = self._joined(heard, following.group())
                if joined is not None:
                    found.append(
                        (token.start(), following.end(), Correction(text[token.start() : following.end()], joined))
                    )
                    joined_with_previous = True
                    continue
            replacement = self._order_id(heard) if previous in ORDER_WORDS else None
            if replacement is None and heard[0].isalpha():
                replacement = self._word(heard)
            if replacement is not None and replacement != heard:
                found.append((token.start(), token.end(), Correction(heard, replacement)))
            previous = heard.lower()
        return found

    def vocabulary_words(self, text: str) -> int:
        """How many of `text`'s words are the vocabulary's rare words or its order ids."""
        return sum(1 for token in _TOKEN.findall(text) if token.lower() in self.words or token in self.order_ids)

    def correct(self, text: str) -> str:
        pieces, position = [], 0
        for start, end, correction in self.corrections(text):
            pieces += [text[position:start], correction.corrected]
            position = end
        return "".join(pieces) + text[position:]

    def _word(self, heard: str) -> str | None:
        lowered = heard.lower()
        if len(lowered) < HEARD_MIN_LENGTH or lowered in self.words or not self.words:
            return None
        if not is_rare(lowered, HEARD_MAX_ZIPF):
            return None
        best = process.extractOne(lowered, self.words.keys(), scorer=fuzz.ratio, score_cutoff=MIN_SIMILARITY)
        if best is None:
            return None
        return _with_case_of(heard, self.words[best[0]])

    def _joined(self, first: str, second: str) -> str | None:
        """The vocabulary word two heard words spell together, if neither is a vocabulary word itself."""
        if not (first[0].isalpha() and second[0].isalpha()) or not self.words:
            return None
        if first.lower() in self.words or second.lower() in self.words:
            return None
        best = process.extractOne(
            (first + second).lower(), self.words.keys(), scorer=fuzz.ratio, score_cutoff=JOIN_MIN_SIMILARITY
        )
        if best is None:
            return None
        return _with_case_of(first, self.words[best[0]])

    def _order_id(self, heard: str) -> str | None:
        if not heard.isdigit() or heard in self.order_ids or len(heard) < 3:
            return None
        near = [order_id for order_id in self.order_ids if DamerauLevenshtein.distance(heard, order_id) == 1]
        return near[0] if len(near) == 1 else None


def _with_case_of(heard: str, spelling: str) -> str:
    """`spelling` with the heard capital or its absence: "decaling kit" -> "descaling kit", not "Descaling kit"."""
    return spelling[0].upper() + spelling[1:] if heard[0].isupper() else spelling[0].lower() + spelling[1:]


def prefer_prompted(plain: tuple[str, float], prompted: tuple[str, float], corrector: TranscriptCorrector) -> bool:
    """Whether to keep the decode prompted with the user's words over the one without them, each
    (text, confidence). The prompt makes Whisper expect those words, and also pulls speech that holds none
    of them toward them ("Hazelnuts make me sick" -> "Kestrel has made me sick"). So the prompted decode is
    kept when, respelled, it holds more of the vocabulary's words and order ids than the plain one; on a
    tie, the surer one is kept. Chosen on the development split of the speech set (docs/VOICE.md);
    agent/voice/local_stt.py makes the two decodes."""
    found_plain = corrector.vocabulary_words(corrector.correct(plain[0]))
    found_prompted = corrector.vocabulary_words(corrector.correct(prompted[0]))
    if found_prompted != found_plain:
        return found_prompted > found_plain
    return prompted[1] > plain[1]


_DIGIT_GROUPS = re.compile(r"\b\d{1,3}(?:,\d{3})+\b")


def normalize_transcript(text: str) -> str:
    """Whisper writes spoken numbers with thousands separators ("order 1,001");
    people mean the digits (order ids, years), so join the groups."""
    return _DIGIT_GROUPS.sub(lambda m: m.group(0).replace(",", ""), text)
