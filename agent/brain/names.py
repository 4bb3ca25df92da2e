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


# the name the user asks to be called, said as a clause of its own ("my name is Joanna but call me Jo", "I'm
# Joanna, but everyone calls me Jo", "My name is Joanna. I go by Jo."); not "my mom will call me tomorrow"
_CALLED = re.compile(
    r"(?:^|[,.;:!?]\s*|\b(?:but|and|so)\s+)(?:please |just |you can |from now on,? )?(?:call me|i go by|"
    r"(?:everyone|everybody|people|they|(?:my |all my )?friends|most people|my family) calls? me) (?P<v>[\w'. -]+)",
    re.I,
)
# what follows "call me" that is no name: "call me back", "call me if anything changes", "call me a taxi"
_NOT_CALLED = {"if", "when", "whenever", "anytime", "any", "back", "later", "tomorrow", "tonight", "sometime",
               "at", "on", "a", "an", "the", "crazy", "maybe", "old-fashioned"}  # fmt: skip


def a_name(said: str) -> bool:
    """False for what follows "call me" and is no name ("back", "a taxi", "old-fashioned")."""
    return bool(said.split()) and said.split()[0].lower() not in _NOT_CALLED


def called(said: str, *, capitalised_only: bool = False) -> str | None:
    """The name `said` asks the agent to call the user by ("... but call me Jo" -> "Jo"), or None. With
    `capitalised_only` (for a message that gives no other name), only a capitalised one: "My parents are great,
    they call me every day" names no one."""
    return _called(said, capitalised_only)[0]


def without_called(said: str) -> str:
    """`said` without its "call me …", for the other facts it tells: "I'm a nurse, call me Jo" -> "I'm a nurse"."""
    return _called(said, False)[1]


def _called(said: str, capitalised_only: bool) -> tuple[str | None, str]:
    said = clean(said)
    match = _CALLED.search(said)
    name = name_only(match.group("v")) if match else ""
    if not match or not a_name(name) or (capitalised_only and not name[:1].isupper()):
        return None, said
    at = said.find(name, match.start("v"))
    return name, said[: match.start()] + said[at + len(name) if at >= 0 else match.end("v") :]


def capitalised(name: str) -> str:
    return " ".join(part[:1].upper() + part[1:] for part in name.split())


def called_and_full_name(name: str, said: str, names_said: list[str]) -> tuple[str, str | None]:
    """(the name to call the user by, the other name they gave, if any), from `name` (the name the rules found
    first in `said`) and `names_said` (every "my name is …" in it). "my name is Joanna but call me Jo" and "I'm
    Joanna, but everyone calls me Jo" -> ("Jo", "Joanna"): the name asked for is the profile's `name`, the one the
    agent calls them and greets them with, and the other is kept as their `full_name`. Until 2026-12-07 the first
    name said was the name, and "call me Jo" after it was dropped."""
    call = called(said)
    if not call:
        return capitalised(name), None
    other = next((given for given in (name, *names_said) if given.casefold() != call.casefold()), None)
    return capitalised(call), capitalised(other) if other else None
