"""The offline brain answers from the knowledge base only with a document that answers the question:
close in meaning, or sharing a distinctive word. A question the shop's documents do not cover is said to be
not covered, naming the nearest document, rather than answered with it (agent/brain/knowledge.py)."""

from __future__ import annotations

import json

import pytest

from agent.brain.knowledge import CLOSE_IN_MEANING, DISTINCTIVE_WORDS, KEPT_IN_THE_CONVERSATION_REPLY
from tests.support.agent_run import agent_session


async def _ask(user_id, question: str) -> tuple[dict, str]:
    async with agent_session(user_id) as run:
        result = await run.session.run(user_input=question)
        result.expect.next_event().is_function_call(name="search_knowledge")
        output = json.loads(result.expect.next_event().is_function_call_output(is_error=False).event().item.output)
        reply = result.expect.next_event().is_message(role="assistant").event().item.text_content
        result.expect.no_more_events()
    return output, reply


@pytest.mark.parametrize(
    "question",
    ["Can you recommend a coffee for me?", "What's the best coffee for a beginner?"],
)
async def test_a_question_the_documents_do_not_cover_is_not_answered_with_the_nearest(new_user, question):
    """It was answered with "Accepted payment methods": "coffee" is in most of the shop's documents."""
    output, reply = await _ask(new_user().user_id, question)
    top = output["hits"][0]
    assert top["similarity"] < CLOSE_IN_MEANING and (top["text_score"] or 0) < DISTINCTIVE_WORDS
    assert reply == (
        f"The Kestrel Coffee knowledge base doesn't answer that: the closest it has is “{top['title']}”, "
        "which is about something else."
    )


@pytest.mark.parametrize(
    ("question", "title", "why"),
    [
        ("will it fit under the cabinets in a kitchen?", "Kestrel One colors and dimensions", "distinctive words"),
        ("my machine shows E03, what does it mean?", "Error code E03: no water flow", "either"),
        ("cancel my Kestrel Club membership", "Cancelling Kestrel Club", "close in meaning"),
    ],
)
async def test_a_document_that_answers_is_quoted(new_user, question, title, why):
    """The first is far in meaning (below 0.25) but shares "cabinets" with the document that answers it, and
    was refused as "not found" before."""
    output, reply = await _ask(new_user().user_id, question)
    top = output["hits"][0]
    assert top["title"] == title
    close, distinctive = top["similarity"] >= CLOSE_IN_MEANING, (top["text_score"] or 0) >= DISTINCTIVE_WORDS
    assert {"distinctive words": distinctive and not close, "close in meaning": close, "either": close or distinctive}[
        why
    ]
    assert reply.startswith(f"From the Kestrel Coffee knowledge base ({title}): ")


@pytest.mark.parametrize("statement", ["# not a heading", "message number 12: I walked 5 miles today"])
async def test_a_statement_sharing_a_word_with_a_document_is_not_answered_with_it(new_user, statement):
    """Found in a fresh-clone walkthrough: "# not a heading" was answered with the E03 article ("head"), and a
    run of "message number N: I walked N miles today" with the order-tracking one, 22 times."""
    output, reply = await _ask(new_user().user_id, statement)
    top = output["hits"][0]
    assert top["similarity"] < CLOSE_IN_MEANING
    assert not reply.startswith("From the Kestrel Coffee knowledge base"), reply
    assert reply == KEPT_IN_THE_CONVERSATION_REPLY


async def test_a_question_about_nothing_in_the_documents_says_nothing_was_found(new_user):
    output, reply = await _ask(new_user().user_id, "who won the football game last night?")
    assert output["hits"][0]["text_score"] is None  # no word shared
    assert reply == "I couldn't find anything about that in the Kestrel Coffee knowledge base."
