"""Two questions in one message ("What is my name and where do I live?"). Read whole, such a message is one
of them (intents.classify takes the first rule that matches: it was answered with the city alone); the brain
answers each in turn, each with its own follow-up searches, and says both answers (agent/brain/llm.py)."""

from __future__ import annotations

import re
from datetime import date

from agent.brain.intents import Intent, classify
from agent.brain.text import clean
from agent.brain.told_then_asked import POINTS_BACK

_QUESTION_WORD = r"(?:where|what|what's|whats|when|who|who's|which|how|do|did|does|is|are|can|could)\b"
_ASKS = re.compile(_QUESTION_WORD, re.I)  # matched at the start: "I live in Denver and what's my name?" tells first
# where a second question starts: "and" (or "&") before a question word
_AND_ASKS = re.compile(r",?\s+(?:and|&)\s+(?=" + _QUESTION_WORD + ")", re.I)
# "what's my name and my email?": the second one asks with the first one's words
_AND_MY = re.compile(r",?\s+(?:and|&)\s+(?=my\b)", re.I)
_ASKS_WITH = re.compile(
    r"^(?:what|what's|whats|who|who's|where|where's|when|when's|which)(?: is| are| was)?\s+(?=my\b)", re.I
)
_ANSWERED = ("recall", "lookup_order")  # questions answered from the tools: a memory, an order


def two_questions(text: str, today: date | None = None) -> tuple[str, Intent, str, Intent] | None:
    """(the first question, its intent, the second, its intent) for "What is my name and where do I live?" or
    "what's my name and my email?", each about a memory or an order. None for one question ("what do you know
    about me and my family?"), a second one that points back at the first ("Where is order 1001 and when will
    it arrive?"), or the same question twice."""
    said = clean(text).strip()
    if not _ASKS.match(said):
        return None
    if split := _AND_ASKS.search(said):
        first, second = said[: split.start()], said[split.end() :]
    elif (split := _AND_MY.search(said)) and (asks := _ASKS_WITH.match(said)):
        first, second = said[: split.start()], asks.group(0) + said[split.end() :]
    else:
        return None
    first, second = f"{first.rstrip(' ,?')}?", f"{second.rstrip(' ,?')}?"
    if POINTS_BACK.search(second):
        return None
    first_intent, second_intent = classify(first, today), classify(second, today)
    if first_intent.name not in _ANSWERED or second_intent.name not in _ANSWERED:
        return None
    if not first_intent.calls or not second_intent.calls or first_intent.calls == second_intent.calls:
        return None
    return first, first_intent, second, second_intent
