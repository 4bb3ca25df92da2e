"""The first thing a visitor tends to type is a greeting with a name and something about them. Until
2026-11-29 "Hi, I'm Dana. I just adopted a corgi named Biscuit." kept nothing and was answered from the
coffee knowledge base; then "what's my dog's name?" found nothing. The end-to-end test runs the real agent,
the real embedded database and the real embedding model."""

from __future__ import annotations

import asyncio
import json

import pytest

from agent.brain.intents import classify
from agent.brain.knowledge import KEPT_IN_THE_CONVERSATION_REPLY
from agent.brain.replies import compose_reply
from core import memories, profiles
from tests.support.agent_run import agent_session, reply_text


@pytest.mark.parametrize(
    ("text", "name", "also"),
    [
        ("Hi, I'm Dana. I just adopted a corgi named Biscuit.", "Dana", ("pet", "a corgi named Biscuit")),
        ("I'm Dana, I work at Globex", "Dana", ("employer", "Globex")),
        ("hey I'm Dana and I live in Lisbon", "Dana", ("home_city", "Lisbon")),
        ("Hello! I'm Dana.", "Dana", None),
    ],
)
def test_a_greeting_with_a_name_and_a_fact_keeps_both(text, name, also):
    intent = classify(text)
    assert intent.calls[0] == ("update_profile", {"field": "name", "value": name})
    remembered = [args for tool, args in intent.calls if tool == "remember_detail"]
    assert {"memory_type": "name", "content": name} in remembered
    if also:
        assert {"memory_type": also[0], "content": also[1]} in remembered
    else:
        assert len(remembered) == 1


@pytest.mark.parametrize(
    "text", ["I'm Sorry, I meant Tuesday", "I'm Back!", "I'm Italian, by the way", "I'm Fine. And you?"]
)
def test_a_capitalised_word_about_the_user_is_not_taken_for_a_name(text):
    assert ("update_profile", {"field": "name", "value": text.split()[1].strip(",.!")}) not in classify(text).calls


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("I just adopted a beagle named Max", "a beagle named Max"),
        ("we rescued a kitten called Miso", "a kitten called Miso"),
        ("I got a new puppy called Mochi", "a new puppy called Mochi"),
        ("I have a dog named Rex", "a dog named Rex"),
    ],
)
def test_a_pet_adopted_got_or_had_is_kept_as_the_pet(text, content):
    assert classify(text).calls == [("remember_detail", {"memory_type": "pet", "content": content})]


def test_a_relative_with_a_name_is_not_a_pet():
    assert all(args.get("memory_type") != "pet" for _, args in classify("I have a daughter named Mia").calls)


def test_the_first_message_is_kept_and_answered_from_later(new_user):
    user = new_user()

    async def talk() -> list[str]:
        async with agent_session(user.user_id, recall_budget_ms=30_000) as run:
            replies = []
            for said in ("Hi, I'm Dana. I just adopted a corgi named Biscuit.", "what's my dog's name?", "who am I?"):
                replies.append(reply_text(await run.session.run(user_input=said)))
            return replies

    greeting, dog, name = asyncio.run(talk())
    stored = {m.memory_type: m.content for m in memories.list_memories(user.scope)}
    assert stored.get("name") == "Dana" and stored.get("pet") == "a corgi named Biscuit"
    assert profiles.get_profile(user.scope).name == "Dana"
    assert "Dana" in greeting and "Biscuit" in greeting and "knowledge base" not in greeting
    assert "Biscuit" in dog
    assert "Dana" in name


def test_a_statement_no_rule_keeps_is_acknowledged_not_looked_up_in_the_shop():
    """Until 2026-11-29 "Booked my flights to Lisbon for May!" was answered "I couldn't find anything about that
    in the Kestrel Coffee knowledge base". Every turn is stored, so the reply says it can be asked about later;
    a question the knowledge base cannot answer still says so."""
    nothing = [("search_knowledge", {"query": "q"}, json.dumps({"query": "q", "hits": []}), False)]
    far = [("search_knowledge", {"query": "q"}, json.dumps({"query": "q", "hits": [{"similarity": 0.1}]}), False)]
    for results in (nothing, far):
        assert compose_reply("Booked my flights to Lisbon for May! TAP, flight TP 1357.", results) == (
            KEPT_IN_THE_CONVERSATION_REPLY
        )
        assert compose_reply("Had a rough day at work today", results) == KEPT_IN_THE_CONVERSATION_REPLY
        for question in ("do you sell decaf?", "Which beans suit a moka pot"):
            assert "couldn't find anything" in compose_reply(question, results)
