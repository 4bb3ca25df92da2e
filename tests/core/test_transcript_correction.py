"""Respelling a transcript toward the user's and the deployment's words (core.transcript_correction)."""

from __future__ import annotations

import subprocess
import sys

from core.config import PROJECT_ROOT
from core.transcript_correction import TranscriptCorrector, prefer_prompted

TERMS = [
    "Kestrel Grinder",
    "Descaling Kit",
    "Calibrated Tamper 58mm",
    "1001",
    "1008",
    "1010",
    "cortado",
    "Pretzel, a dachshund",
    "Thibault",
]


def test_the_vocabulary_keeps_rare_words_and_order_ids():
    corrector = TranscriptCorrector.from_terms(TERMS)
    assert {"kestrel", "descaling", "calibrated", "tamper", "cortado", "pretzel", "dachshund", "thibault"} <= set(
        corrector.words
    )
    assert corrector.words["thibault"] == "Thibault"
    # everyday or short words are not targets; a size is not an order id
    assert not {"kit", "a", "58mm", "58"} & set(corrector.words)
    assert corrector.order_ids == {"1001", "1008", "1010"}


def test_near_misses_of_rare_words_are_respelled_keeping_the_heard_capital():
    corrector = TranscriptCorrector.from_terms(TERMS)
    assert corrector.correct("My partner Fibault likes a cotado too.") == "My partner Thibault likes a cortado too."
    assert corrector.correct("Do I need the decaling kit every month?") == "Do I need the descaling kit every month?"
    assert corrector.correct("My nachshund chewed the knock box.") == "My dachshund chewed the knock box."


def test_common_words_and_correct_spellings_are_left_alone():
    corrector = TranscriptCorrector.from_terms([*TERMS, "Coffea Arabica", "Siobhan Okafor"])
    for heard in [
        "I would like some coffee today.",  # "coffee" is close to "Coffea" but an everyday word
        "Thibault drinks a cortado.",
        "The axolotl is asleep.",  # rare, but close to nothing in the vocabulary
        "Okafor is spelled Oka-F-O-R.",  # letters spelled out are not one misheard word
        "",
    ]:
        assert corrector.correct(heard) == heard


def test_a_number_after_order_becomes_the_one_order_id_an_edit_away():
    corrector = TranscriptCorrector.from_terms(TERMS)
    assert corrector.correct("Is order 108 still in Albuquerque?") == "Is order 1008 still in Albuquerque?"
    assert corrector.correct("Where is order number 1100?") == "Where is order number 1010?"  # two digits swapped
    assert corrector.correct("What about order #1088?") == "What about order #1008?"
    # a known id, a short number, and numbers not said as an order stay as heard
    for heard in ["Is order 1001 here?", "Order 10 please.", "I paid 108 dollars.", "Call 1018 tomorrow."]:
        assert corrector.correct(heard) == heard


def test_an_order_number_near_two_ids_is_not_guessed():
    corrector = TranscriptCorrector.from_terms(TERMS)
    assert corrector.correct("Cancel order 1080.") == "Cancel order 1080."  # 1008 (swapped) and 1010 (one digit)


def test_an_empty_vocabulary_changes_nothing():
    corrector = TranscriptCorrector.from_terms([])
    assert not corrector
    assert corrector.correct("Is order 108 with Fibault?") == "Is order 108 with Fibault?"


def test_the_english_table_is_read_without_importing_wordfreq():
    """wordfreq finds its data with inspect.stack(), which raced Streamlit declaring a component on a page's
    thread ("module is None"); the table is read straight from its file instead (a fresh interpreter)."""
    script = (
        "import sys; from core.transcript_correction import english_zipf, zipf_frequency; english_zipf(); "
        "assert 'wordfreq' not in sys.modules and 'locate' not in sys.modules, sorted(sys.modules); "
        "print(zipf_frequency('coffee'), zipf_frequency('Coffee'), zipf_frequency('thibault'))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=PROJECT_ROOT, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["4.86", "4.86", "0.0"]  # wordfreq's own zipf_frequency says 4.86 for coffee


def test_vocabulary_words_counts_the_rare_words_and_order_ids_a_text_holds():
    corrector = TranscriptCorrector.from_terms(TERMS)
    # Thibault, 1008, Kestrel and grinder: each word of a product name counts
    assert corrector.vocabulary_words("Thibault asked about order 1008 and the Kestrel grinder.") == 4
    assert corrector.vocabulary_words("Order 1009 is late, said the coffee kit.") == 0  # not ids, not rare


def test_the_decode_with_the_users_words_is_kept_only_when_it_holds_more_of_them():
    """`prefer_prompted`: the prompted decode wins when, respelled, it holds more of the vocabulary than
    the plain decode; otherwise (the prompt only pulled generic speech around) the surer of the two wins."""
    corrector = TranscriptCorrector.from_terms(TERMS)
    # the prompt brought a name the plain decode missed: kept even though it is less sure
    assert prefer_prompted(("My partner Tim bolt is here.", 0.9), ("My partner Thibault is here.", 0.7), corrector)
    # the plain decode respelled holds the same name ("Fibault" -> Thibault): a tie, the surer wins
    assert not prefer_prompted(("My partner Fibault is here.", 0.9), ("My partner Thibault is here.", 0.8), corrector)
    assert prefer_prompted(("My partner Fibault is here.", 0.7), ("My partner Thibault is here.", 0.8), corrector)
    # the prompt changed generic words but brought none of its own: the surer decode wins
    assert not prefer_prompted(("It is a lovely day.", 0.8), ("It is a lonely day.", 0.6), corrector)
    assert prefer_prompted(("It is a lovely day.", 0.6), ("It is a lonely day.", 0.8), corrector)
    # the price of the rule: a vocabulary word the prompt made up where none was said wins
    assert prefer_prompted(("It is a lovely day.", 0.8), ("It is a lovely tamper.", 0.6), corrector)


def test_two_heard_words_that_spell_a_vocabulary_word_together_are_joined():
    """Whisper splits a name it does not know into words it does ("Oka for"); joined only when the two
    nearly exactly spell a rare vocabulary word and neither is one itself."""
    corrector = TranscriptCorrector.from_terms(["Siobhan Okafor", "hazelnuts", "cortado"])
    assert corrector.correct("Siobhan Oka for speaking, is my order ready?") == (
        "Siobhan Okafor speaking, is my order ready?"
    )
    assert corrector.correct("No hazel nuts in my cortado.") == "No hazelnuts in my cortado."
    assert corrector.correct("I want a cortado.") == "I want a cortado."  # "acortado" is close, but cortado is known
    assert corrector.correct("I found a hazel nut.") == "I found a hazel nut."  # one letter short: not nearly exact
    assert corrector.correct("Thanks for speaking.") == "Thanks for speaking."
