"""The offline brain's answers from the Kestrel Coffee knowledge base: the top document when it answers
the question, and a plain "not covered" (naming the nearest document) when it does not."""

from __future__ import annotations

from typing import Any

from agent.brain.facts import describe_fact
from agent.brain.patterns import is_question
from agent.brain.text import best_sentences
from agent.sensitive import withheld

# a statement the rules did not keep as a memory: every turn is stored, so it can still be found later...
KEPT_IN_THE_CONVERSATION_REPLY = (
    "Noted. I haven't saved that as a memory, but our conversation is kept, so you can ask me about it later."
)
# ...but for one that may hold a secret: it is stored without its words (agent/turn_log.py); the first sentence
# of the refusal of a secret fact (replies.SECRET_REPLY)
SECRET_NOT_SAVED = "I'd rather not keep passwords, PINs, card or ID numbers, so I haven't saved that."
# Below this a document is not near the question at all: not named as the closest one.
UNRELATED_BELOW = 0.25
# A document answers when it is close in meaning, or shares a distinctive word with the question: a text
# score of 2 is one word in at most about a tenth of the documents (IDF ln(1 + (N - df + 0.5) / (df + 0.5))).
# "Can you recommend a coffee for me?" shares only "coffee" with the shop's documents (1.4, in most of them)
# and is 0.34 from "Accepted payment methods", which it was answered with; the top document of each of the
# 40 labelled questions the knowledge base covers is 0.40 or closer, or shares a distinctive word ("PayPal").
CLOSE_IN_MEANING = 0.40
DISTINCTIVE_WORDS = 2.0


def answers(hit: dict[str, Any], *, asked: bool = True) -> bool:
    """Whether a knowledge hit (agent/tool_outputs.knowledge_found) answers the message it was found for. A
    distinctive word makes it an answer to a question only: "# not a heading" shares "head" with the E03
    article, "message number 12: I walked 5 miles" a word of the order-tracking one, and both statements
    were answered with them (a fresh-clone walkthrough)."""
    similarity = hit.get("similarity") or 0.0
    return similarity >= CLOSE_IN_MEANING or (asked and (hit.get("text_score") or 0.0) >= DISTINCTIVE_WORDS)


def knowledge_found(data: dict[str, Any], user_text: str, recalled: list[tuple[str, str]]) -> str:
    hits = data.get("hits") or []
    if hits and answers(hits[0], asked=is_question(user_text)):
        top = hits[0]
        return f"From the Kestrel Coffee knowledge base ({top['title']}): {best_sentences(user_text, top['content'])}"
    if not is_question(user_text):
        # a statement no rule kept ("Booked my flights to Lisbon!"): not a question for the shop's documents
        return SECRET_NOT_SAVED if withheld(user_text) else KEPT_IN_THE_CONVERSATION_REPLY
    if recalled:  # the panel shows a memory in context: say it rather than "nothing found"
        return f"The Kestrel Coffee knowledge base doesn't cover that, but you told me {describe_fact(*recalled[0])}."
    if hits and (hits[0].get("similarity") or 0.0) >= UNRELATED_BELOW:
        return (
            "The Kestrel Coffee knowledge base doesn't answer that: the closest it has is "
            f"“{hits[0]['title']}”, which is about something else."
        )
    return "I couldn't find anything about that in the Kestrel Coffee knowledge base."
