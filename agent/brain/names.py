"""The user's name in what they say (used by agent/brain/facts.py and intents.py)."""

from __future__ import annotations

import re

from agent.brain.patterns import AFTER_A_NAME
from agent.brain.text import TITLE, clean, split_sentences, strip_end

_AFTER_A_NAME = re.compile(r"(?:,?\s+" + AFTER_A_NAME + r")+$", re.I)
# a full stop inside a name: a title's ("Dr. Ada Lovelace") or an initial's ("J. R. Smith")
_IN_A_NAME = re.compile(r"(?i:" + TITLE.pattern + r")|\b[A-Z]\.")


def name_only(said: str) -> str:
    """The name `said` starts with (what follows "my name is"): up to the end of its sentence and before "and",
    "but" or a comma, without what people say after a name ("by the way"). Until 2026-12-07 it ran on: "My name
    is Ada. Nice to meet you!" saved the name "Ada. Nice To Meet You"."""
    sentences = split_sentences(clean(said), _IN_A_NAME)
    before_the_rest = re.split(r"\b(?:and|but|because|so)\b|[,;]", sentences[0] if sentences else "")[0]
    return strip_end(_AFTER_A_NAME.sub("", strip_end(before_the_rest)))
