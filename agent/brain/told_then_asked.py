"""Messages in two parts: facts told, then a question ("My favorite color is green. What is my favorite color?").
Read whole, such a message is its question alone (intents.classify); the brain remembers what is told first,
then answers the question (agent/brain/llm.py)."""

from __future__ import annotations

import re
from datetime import date

from agent.brain.intents import Intent, classify, reports_a_problem
from agent.brain.patterns import ASKS_FOR_HELP, PRODUCT
from agent.brain.text import TITLE, clean, split_sentences

# intents of a last sentence that stays with the facts before it: statements are remembered together
# (`parse_facts`), and "what did we talk about today?" is answered from the whole conversation
_NOT_SPLIT = ("remember", "update_profile", "today", "this_conversation")


def told_then_asked(text: str, today: date | None = None) -> tuple[str, Intent, str, Intent] | None:
    """(what is told, its intent, the question after it, its intent) for "My favorite color is green. What is my
    favorite color?", which as a whole is read as its question alone: the fact was then answered with what was
    kept before it and kept only when the session ended. Also for a question of its own read otherwise as a whole:
    "I'm vegetarian. What do you recommend?" searched the knowledge base with the whole message and kept nothing,
    "call me Jo. What's the weather like?" searched the memories (for "me"). The brain remembers what is told
    first, then answers (agent/brain/llm.py). None when the message is not facts followed by a question, or when
    the question is about what was told ("My grinder is making a weird noise. What should I do?" is one problem
    for the knowledge base)."""
    sentences = split_sentences(clean(text), TITLE)
    if len(sentences) < 2:
        return None
    told, asked = " ".join(sentences[:-1]), sentences[-1]
    told_intent, asked_intent = classify(told, today), classify(asked, today)
    tells = told_intent.name in ("remember", "update_profile") and told_intent.calls
    if not tells or asked_intent.name in _NOT_SPLIT:
        return None
    whole_intent = classify(text, today)
    if whole_intent == asked_intent or _asks_on_its_own(told, asked, text):
        return told, told_intent, asked, asked_intent
    return None


# words of a question that point back at what was said before it ("Do you ship there?", "How do I descale it?")
POINTS_BACK = re.compile(r"\b(?:it|its|that|this|these|those|them|they|there|he|him|his|she|her|their|one)\b", re.I)
# an "it" that stands for nothing said before: "What time is it?" after "My time zone is Europe/Paris." (the time
# zone was kept and the question dropped, until 2026-12-07)
_NO_ONES_IT = re.compile(r"\b(?:what|which) (?:time|day|date|month|year) is it\b|\bhow (?:late|early) is it\b", re.I)
# a sentence about one of the shop's products ("My machine leaks water."): a problem to report, not a fact
# about the user
_ABOUT_A_PRODUCT = re.compile(r"^(?:my|our|the) (?:[\w-]+ )?" + PRODUCT + r"\b", re.I)


def _asks_on_its_own(told: str, asked: str, whole: str) -> bool:
    """Whether `asked`, the question after what was told, is one of its own ("Is shipping free?"), to be answered as
    if asked alone: not one about what was told ("Do you ship there?", "Why?"), nor one about a product the told
    part reports on ("My machine leaks water. Do you offer repairs?"), nor the question of a problem the whole
    message reports ("My grinder is making a weird noise. What should I do?"): searched alone, it would lose its
    subject, and the problem would be kept as a memory."""
    return (
        asked.rstrip().endswith("?")
        and not POINTS_BACK.search(_NO_ONES_IT.sub("", asked))
        and not ASKS_FOR_HELP.search(asked)
        and not any(_ABOUT_A_PRODUCT.match(sentence) for sentence in split_sentences(told, TITLE))
        and not reports_a_problem(whole)
    )
