"""Phrasings a visitor tried on 2026-11-29 that the offline brain got wrong: a name change, "how many memories",
a fact followed by "so please keep that in mind", a job said with its city, a question about the user's job
answered with their partner's, and "forget my dog" when the dog is kept as the `pet`."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from agent.brain.asked import about_what_was_asked
from agent.brain.facts import describe_fact, parse_facts, slot_phrase
from agent.brain.intents import classify
from agent.brain.knowledge import KEPT_IN_THE_CONVERSATION_REPLY
from agent.brain.replies import ASK_ORDER_NUMBER, ASK_WHAT_TO_REMEMBER, compose_reply
from agent.brain.told_then_asked import told_then_asked
from agent.brain.two_questions import two_questions
from agent.extraction import propose_with_rules
from agent.playground_agent import load_preload
from agent.prompts import greeting_instruction
from core import memories, profiles
from tests.support.agent_run import agent_session, reply_text


def _replies(user_id, said: list[str]) -> list[str]:
    """The agent's reply to each line, said in turn in one session (the user's real memories, recall on)."""

    async def talk() -> list[str]:
        async with agent_session(user_id, recall_budget_ms=30_000) as run:
            return [reply_text(await run.session.run(user_input=line)) for line in said]

    return asyncio.run(talk())


@pytest.mark.parametrize(
    ("text", "name"),
    [("Change my name to Lex", "Lex"), ("please update my name to Dee Dee", "Dee Dee"), ("my name is now Lex", "Lex")],
)
def test_a_name_change_updates_the_profile(text, name):
    assert classify(text).calls[0] == ("update_profile", {"field": "name", "value": name})


@pytest.mark.parametrize(
    "text",
    [
        "how many memories do you have about me?",
        "how many things do you know about me",
        "how much do you know about me?",
    ],
)
def test_how_many_memories_lists_them(text):
    assert classify(text).calls == [("list_user_memories", {})]


@pytest.mark.parametrize(
    ("text", "slot", "content"),
    [
        ("I'm allergic to shellfish, so please keep that in mind", "allergies", "shellfish"),
        ("I live in Denver, remember that", "home_city", "Denver"),
        ("my favorite color is teal, note that please", "favorite_color", "teal"),
    ],
)
def test_a_request_to_keep_the_fact_is_not_part_of_it(text, slot, content):
    assert classify(text).calls == [("remember_detail", {"memory_type": slot, "content": content})]


def test_a_job_said_with_its_city_or_employer_keeps_both():
    calls = classify("Hey there! My name is Alex and I'm a software engineer in Toronto.").calls
    assert calls[0] == ("update_profile", {"field": "name", "value": "Alex"})
    remembered = {args["memory_type"]: args["content"] for tool, args in calls if tool == "remember_detail"}
    assert remembered == {"name": "Alex", "job": "software engineer", "home_city": "Toronto"}
    assert classify("I'm a nurse at Mercy Hospital").calls == [
        ("remember_detail", {"memory_type": "job", "content": "nurse"}),
        ("remember_detail", {"memory_type": "employer", "content": "Mercy Hospital"}),
    ]


def _search(*hits: dict) -> str:
    return json.dumps({"query": "q", "mode": "hybrid", "hits": list(hits)})


def test_a_question_about_the_user_is_not_answered_with_a_relatives_fact():
    partner = {"memory_type": "partner", "content": "Sam works as a nurse", "rrf_score": 0.3, "vector_rank": 1,
               "text_rank": 1, "vector_distance": 0.5}  # fmt: skip
    results = [("search_memories", {"query": "what's my job"}, _search(partner), False)]
    assert "nurse" not in compose_reply("what's my job?", results)
    assert compose_reply("what does my partner do?", results) == "You told me your partner Sam works as a nurse."
    assert "nurse" in compose_reply("what do you know about my family?", results)
    son = {**partner, "memory_type": "son", "content": "Leo is studying to be a nurse"}
    results = [("search_memories", {"query": "kids"}, _search(son), False)]
    assert "Leo" in compose_reply("tell me about my kids", results)
    assert "Leo" not in compose_reply("what am I studying? tell me about my studies", results)


def test_forget_my_dog_forgets_the_pet_and_forget_my_brother_forgets_no_one_else(new_user):
    user = new_user()
    said = ["I have a golden retriever called Maple.", "My sister Ana lives in Porto."]
    _, _, dog, brother = _replies(user.user_id, [*said, "forget everything about my dog", "forget my brother"])
    assert dog == "Done, I've forgotten your pet (“a golden retriever called Maple”)."
    assert brother == "I didn't have anything saved as your brother, so there was nothing to forget."
    assert {m.memory_type: m.content for m in memories.list_memories(user.scope)} == {"sister": "Ana lives in Porto"}


@pytest.mark.parametrize(
    ("text", "city"),
    [
        ("I just moved to a new apartment in Brooklyn", "Brooklyn"),
        ("I moved into a house in Austin last month", "Austin"),
        ("I moved to Berlin in May", "Berlin"),
        ("I moved to Berlin in 2024", "Berlin"),
    ],
)
def test_a_move_keeps_the_place_not_the_home_or_the_time(text, city):
    assert classify(text).calls == [("remember_detail", {"memory_type": "home_city", "content": city})]


def test_mom_answers_a_question_about_the_mother():
    mom = {"memory_type": "mom_name", "content": "Linda", "rrf_score": 0.3, "vector_rank": 1, "text_rank": 1,
           "vector_distance": 0.4}  # fmt: skip
    results = [("search_memories", {"query": "mother"}, _search(mom), False)]
    assert compose_reply("what's my mother's name?", results) == "You told me your mom's name is Linda."


@pytest.mark.parametrize(
    ("text", "allergen"),
    [
        ("I have a peanut allergy", "peanut"),
        ("I have a severe shellfish allergy", "shellfish"),
        ("I have an allergy to cats", "cats"),
    ],
)
def test_an_allergy_said_as_a_noun_keeps_what_the_user_is_allergic_to(text, allergen):
    """ "I have a peanut allergy" was kept as "peanut allergy" and said back as "allergic to peanut allergy"."""
    assert classify(text).calls == [("remember_detail", {"memory_type": "allergies", "content": allergen})]


def test_where_the_user_is_from_is_the_hometown_not_where_they_live():
    calls = classify("I'm from Mumbai originally but I live in London now").calls
    assert {args["memory_type"]: args["content"] for _, args in calls} == {"hometown": "Mumbai", "home_city": "London"}
    for question in ("where am I from?", "where did I grow up?", "what's my hometown?"):
        assert classify(question).calls == [("recall_detail", {"memory_type": "hometown"})]


@pytest.mark.parametrize(
    ("text", "job"),
    [
        ("I just started a new job as a nurse at St. Mary's hospital.", "nurse at St. Mary's hospital"),
        ("I've started working as a barista", "barista"),
        ("I got a job as an electrician", "electrician"),
    ],
)
def test_a_new_job_is_the_job_and_an_abbreviation_does_not_end_the_sentence(text, job):
    """ "I just started a new job as a nurse at St. Mary's hospital." kept a note, cut at "St."."""
    assert classify(text).calls == [("remember_detail", {"memory_type": "job", "content": job})]
    assert classify(f"Hello! I'm Priya and {text[0].lower()}{text[1:]}").calls[-1] == (
        "remember_detail",
        {"memory_type": "job", "content": job},
    )


def test_a_relatives_move_said_by_name_replaces_where_they_live_and_nothing_else_does(new_user):
    """ "Actually Anika moved to Sydney last month." after "My sister Anika lives in Melbourne." was answered
    with the old city; an opinion about her must not replace it."""
    user = new_user()
    said = ["My sister Anika lives in Melbourne.", "Anika is great", "Actually Anika moved to Sydney last month."]
    _, opinion, moved = _replies(user.user_id, said)
    assert opinion == KEPT_IN_THE_CONVERSATION_REPLY  # a statement: not "the knowledge base doesn't cover that"
    assert moved == (
        "Updated: I'll remember that your sister Anika moved to Sydney last month (before, I had Anika lives in "
        "Melbourne)."
    )
    assert {m.memory_type: m.content for m in memories.list_memories(user.scope)} == {
        "sister": "Anika moved to Sydney last month"
    }


def test_a_forgotten_dislike_is_said_as_the_fact_and_a_relatives_slot_as_theirs(new_user):
    """ "Done, I've forgotten your dislikes olives" and "your daughter birthday is on March 3rd" before."""
    user = new_user()
    said = ["I don't like olives", "forget that I don't like olives", "My daughter's birthday is on March 3rd."]
    _, forgot, birthday = _replies(user.user_id, said)
    assert forgot.startswith("Done, I've forgotten that you don't like olives")
    assert birthday == "Got it, I'll remember that your daughter's birthday is on March 3rd."


def test_more_about_people_a_memory_names_is_kept_and_found_by_their_names(new_user):
    """ "Maya is 7 and Leo is 4." after "I have two kids, Maya and Leo." was answered with the kids' memory
    (kept nothing), and "what are my kids' names?" looked for "kid" and found nothing: "I don't remember your
    kids's names yet"."""
    user = new_user()
    said = ["I have two kids, Maya and Leo.", "Maya is 7 and Leo is 4.", "what are my kids' names?"]
    said.append("how old is Maya?")
    _, ages, names, maya = _replies(user.user_id, said)
    assert ages == "Got it, I'll remember that Maya is 7 and Leo is 4."
    assert names == "You told me you have two kids, Maya and Leo."
    assert maya.startswith("You told me Maya is 7 and Leo is 4.")
    assert sorted(m.content for m in memories.list_memories(user.scope)) == [
        "I have two kids, Maya and Leo",
        "Maya is 7 and Leo is 4",
    ]


@pytest.mark.parametrize(
    ("text", "slot", "content"),
    [
        ("I was born in Lagos", "birthplace", "Lagos"),
        ("I was born in March 1990", "birthday", "March 1990"),
        ("I was born on May 2", "birthday", "May 2"),
    ],
)
def test_born_in_a_place_is_the_birthplace_and_born_in_a_month_the_birthday(text, slot, content):
    """ "I was born in Lagos" was kept as the birthday and said back as "your birthday is Lagos"."""
    assert classify(text).calls == [("remember_detail", {"memory_type": slot, "content": content})]
    assert classify("where was I born?").calls == [("recall_detail", {"memory_type": "birthplace"})]


def test_an_email_saved_to_the_profile_is_recalled(new_user):
    """ "what's my email?" right after "my email is …" said "I don't remember your email yet": the profile
    was updated, but recall reads memories."""
    user = new_user()
    said = ["my email is priya@example.com", "what's my email?"]
    saved, recalled = _replies(user.user_id, said)
    assert saved == "Thanks, I've saved priya@example.com as your email address."  # said once, not twice
    assert recalled == "You told me your email is priya@example.com."
    assert {m.memory_type: m.content for m in memories.list_memories(user.scope)} == {"email": "priya@example.com"}


def test_what_we_talked_about_today_is_this_conversation(new_user):
    """ "what did we talk about today?" searched earlier conversations for those words and found nothing."""
    user = new_user()
    said = ["what did we talk about today?", "hi", "My favorite food is sushi", "is shipping free?"]
    said += ["I love playing tennis on weekends", "can you sum up this conversation?"]
    replies = _replies(user.user_id, said)
    assert replies[0] == "We've only just started: you haven't told me anything in this conversation yet."
    assert replies[-1] == (
        "So far in this conversation you told me: “My favorite food is sushi”; “I love playing tennis on weekends”."
    )


# Found by a visitor on 2026-12-06: a question about a detail never said was answered with another detail of
# the same kind, which a shared word ("favorite", "name", "birthday") had made a text match.


def test_a_detail_never_said_is_not_answered_with_another_of_its_kind(new_user):
    said = ["my favorite color is teal", "my cat is called Mochi", "my sister's birthday is May 2"]
    asked = [
        "what is my favorite food?",
        "what is my dog called?",
        "when is my birthday?",
        "what's my name?",
        "what's my son's name?",
    ]
    replies = _replies(new_user().user_id, [*said, *asked])[len(said) :]
    assert replies[0].startswith("I don't remember your favorite food yet.")
    assert replies[1].startswith("I don't remember your dog's name yet.")
    assert replies[2].startswith("I don't remember your birthday yet.")
    assert replies[3].startswith("I don't remember your name yet.")
    assert replies[4].startswith("I don't remember your son's name yet.")
    assert not any(word in reply for reply in replies for word in ("teal", "Mochi", "May 2"))


def test_the_detail_asked_for_is_found_under_the_words_it_was_said_with(new_user):
    said = ["my dog is called Biscuit", "my cat is called Mochi", "my daughter is called Ava", "I drive a blue Volvo"]
    asked = {
        "what is my cat called?": "You told me your cat's name is Mochi.",  # kept as `cat_name`, asked so too
        "what is my dog called?": "You told me your dog's name is Biscuit.",
        "what's my kid's name?": "You told me your daughter's name is Ava.",
        "what car do I have?": "You told me you drive a blue Volvo.",  # no shared kind: the search's answer stands
    }
    replies = _replies(new_user().user_id, [*said, *asked])[len(said) :]
    assert replies == list(asked.values())
    assert classify("what is my dog called?").calls == [("recall_detail", {"memory_type": "dog_name"})]


def test_a_pet_or_a_kid_asked_for_in_general_is_answered_by_the_one_kept():
    cat = {"memory_type": "cat_name", "content": "Mochi", "rrf_score": 0.3, "vector_rank": 1, "text_rank": 1,
           "vector_distance": 0.5}  # fmt: skip
    for question, slot in (("what's my pet's name?", "pet_name"), ("what's my dog's name?", "dog_name")):
        results = [
            ("recall_detail", {"memory_type": slot}, f"Nothing is remembered under '{slot}'.", True),
            ("search_memories", {"query": question}, _search(cat), False),
        ]
        reply = compose_reply(question, results)
        assert ("Mochi" in reply) == (slot == "pet_name"), reply
    # the per-turn recall's context is held to the same rule: the panel's star is not an answer to another question
    results = [("recall_detail", {"memory_type": "dog_name"}, "Nothing is remembered under 'dog_name'.", True)]
    assert "Mochi" not in compose_reply("what is my dog called?", results, recalled=[("cat_name", "Mochi")])
    results = [("recall_detail", {"memory_type": "pet_name"}, "Nothing is remembered under 'pet_name'.", True)]
    assert compose_reply("what is my pet called?", results, recalled=[("cat_name", "Mochi")]) == (
        "You told me your cat's name is Mochi."
    )


def test_a_missed_slot_is_no_warning_in_the_server_log(new_user, caplog):
    """livekit logged every ToolError ("Nothing is remembered under 'favorite_food'": an answer the model
    reads) as a bare warning naming nothing; a visitor's questions filled the server log with them."""
    caplog.set_level(logging.WARNING, logger="livekit.agents")
    [reply] = _replies(new_user().user_id, ["what is my favorite food?"])
    assert reply.startswith("I don't remember your favorite food yet.")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "ToolError" in r.getMessage()]
    caplog.set_level(logging.DEBUG, logger="livekit.agents")
    _replies(new_user().user_id, ["what is my favorite food?"])
    assert "tool recall_detail answered with a ToolError (the model reads why)" in [
        r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG
    ]


def test_a_pet_of_another_kind_is_not_the_answer_and_a_name_keeps_no_stray_bracket(new_user):
    """Tried on 2026-12-06: "what is my dog called?" was answered with the `pet` "a cat called Miso", and
    "my name is Robert'); DROP TABLE users;--" kept the name "Robert')"."""
    user = new_user()
    replies = _replies(
        user.user_id,
        [
            "my name is Robert'); DROP TABLE users;--",
            "I have a cat called Miso",
            "what is my dog called?",
            "what is my cat called?",
        ],
    )
    assert replies[0] == "Nice to meet you, Robert! I'll call you Robert from now on."  # the profile's name too
    assert profiles.get_profile(user.scope).name == "Robert"
    assert "Miso" not in replies[2] and replies[2].startswith("I don't remember your dog's name yet.")
    assert replies[3] == "You told me you have a cat called Miso."
    assert memories.recall(user.scope, "name").content == "Robert"
    # a breed is its animal: the corgi is the answer about the dog
    other = new_user()
    _, corgi = _replies(other.user_id, ["I have a corgi called Rex", "what is my dog called?"])
    assert "Rex" in corgi


def test_a_new_name_is_the_one_the_greeting_and_the_profile_use(new_user):
    """Found in a fresh-clone walkthrough on 2026-12-07: "my name is Ada", then a new name: the `name` memory
    changed but the profile kept Ada, so the next conversation greeted "Welcome back, Ada!" and the Memories
    page's profile said Ada. An edit on the Memories page changes both as well."""
    user = new_user()
    replies = _replies(user.user_id, ["my name is Ada", "my name is Robert"])
    assert "Robert" in replies[1]
    assert profiles.get_profile(user.scope).name == "Robert"
    (name,) = [m for m in memories.list_memories(user.scope) if m.memory_type == "name"]
    memories.update_memory(user.scope, name.id, "Bob")  # the Memories page's Edit, as the visitor
    assert profiles.get_profile(user.scope).name == "Bob"
    # what the next conversation greets with: the profile's name, in the preload
    assert load_preload(user.user_id).profile.name == "Bob"
    assert "Bob" in greeting_instruction(load_preload(user.user_id).profile.name)


# Found in a fresh-clone walkthrough on 2026-12-07: a fact and a question in one message ("My favorite color is
# green. What is my favorite color?", as speech-to-text writes it) were answered as the question alone, from
# what was kept before, and the fact was kept only when the session ended.


def test_a_fact_told_with_a_question_is_remembered_first_and_answers_it(new_user):
    user = new_user()
    said = ["My favorite color is green. What is my favorite color?"]
    said.append("My favorite food is ramen. What is my favorite food?")  # typed in the chat

    async def talk() -> list[str]:
        async with agent_session(user.user_id, recall_budget_ms=30_000) as run:
            color = reply_text(await run.session.run(user_input=said[0]))
            kept_in_the_turn = memories.recall(user.scope, "favorite_color").content  # not at the session's end
            food = reply_text(await run.session.run(user_input=said[1]))
            return [color, kept_in_the_turn, food]

    color, kept_in_the_turn, food = asyncio.run(talk())
    assert color == (
        "Got it, I'll remember that your favorite color is green. You told me your favorite color is green."
    )
    assert kept_in_the_turn == "green"
    assert food == "Got it, I'll remember that your favorite food is ramen. You told me your favorite food is ramen."


def test_a_fact_told_with_a_question_replaces_the_old_answer(new_user):
    user = new_user()
    said = ["my favorite color is magenta", "My favorite color is green. What is my favorite color?"]
    _, color = _replies(user.user_id, said)
    assert color == (
        "Updated: I'll remember that your favorite color is green (before, I had magenta). "
        "You told me your favorite color is green."
    )


def test_a_fact_told_with_another_question_is_remembered_and_the_question_answered(new_user):
    user = new_user()
    [reply] = _replies(user.user_id, ["My favorite color is green. Where is order 1001?"])
    assert reply.startswith("Got it, I'll remember that your favorite color is green. Order 1001 is delivered")
    assert memories.recall(user.scope, "favorite_color").content == "green"


@pytest.mark.parametrize(
    "text",
    [
        "My grinder is making a weird noise. What should I do?",  # one problem, for the knowledge base
        "I live in Denver. I work at Globex.",  # statements only: remembered together, as before
        "My favorite color is green. Thanks!",  # no question
        "What is my favorite color? It's green.",
        # a question that points back at what was told is one question in its context
        "My latte is too bitter. What should I do?",
        "My coffee tastes sour. Why?",
        "I live in Denver. Do you ship there?",
        "I have a Kestrel One. How do I descale it?",
        "My machine leaks water. Do you offer repairs?",  # a problem with a product: not kept as a memory
    ],
)
def test_a_message_is_split_only_when_it_tells_facts_and_then_asks(text):
    assert told_then_asked(text) is None


# Wording found in the same walkthrough: a fact said back mid-sentence kept the capital its sentence began with.


def test_a_fact_said_mid_sentence_starts_lower_case_unless_it_starts_with_a_name(new_user):
    said = ["My sister's name is Nora", "Last weekend I hiked the Sintra trail with Nora"]
    _, hiked = _replies(new_user().user_id, said)
    assert hiked == "Got it, I'll remember that last weekend you hiked the Sintra trail with Nora."
    assert describe_fact("note_yesterday", "Yesterday we adopted a cat") == "yesterday you adopted a cat"
    for kept in ("Maya is 7 and Leo is 4", "NASA hired me in May", "Monday is my day off"):  # a name, an acronym
        assert describe_fact("note_x", kept)[0] == kept[0]


@pytest.mark.parametrize(
    ("text", "car", "said_back"),
    [
        ("I drive a Subaru Outback", "a Subaru Outback", "you drive a Subaru Outback"),
        ("I drive an old Honda", "an old Honda", "you drive an old Honda"),
        ("I drive my dad's truck", "my dad's truck", "you drive your dad's truck"),
    ],
)
def test_the_car_keeps_the_article_it_was_said_with(text, car, said_back):
    """ "I drive a Subaru Outback" was said back as "you drive Subaru Outback"."""
    assert classify(text).calls == [("remember_detail", {"memory_type": "car", "content": car})]
    assert describe_fact("car", car) == said_back


@pytest.mark.parametrize(
    ("text", "drink"),
    [
        ('My favorite drink is "flat white" \\ with oat milk', '"flat white" \\ with oat milk'),
        ("my favorite drink is 'flat white' with oat milk", "'flat white' with oat milk"),
        ('my favorite drink is a flat white with "oat milk"', 'a flat white with "oat milk"'),
        ('my favorite drink is "flat white"', "flat white"),  # all of it quoted: the quotes are no part of it
        ('my favorite drink is "flat white', "flat white"),  # a quote that pairs with none
    ],
)
def test_a_fact_keeps_its_quotes_as_typed_and_is_said_back_under_its_slot(text, drink):
    """The first quote was dropped and the last kept ('flat white" \\ with oat milk'), and the reply said "your
    usual is …" of what it kept as the favorite drink."""
    assert classify(text).calls == [("remember_detail", {"memory_type": "favorite_drink", "content": drink})]
    assert describe_fact("favorite_drink", drink) == f"your favorite drink is {drink}"


@pytest.mark.parametrize(
    "text", ["Remember that", "Remember that.", "remember this:", "Can you remember something for me?", "remember"]
)
def test_remember_that_alone_asks_what_to_remember_and_keeps_nothing(text):
    """ "Remember that" on its own was kept as the memory `note`: "that"."""
    intent = classify(text)
    assert intent.calls == []
    assert intent.reply == ASK_WHAT_TO_REMEMBER


def test_a_name_whose_owner_ends_in_s_is_said_with_s(new_user):
    """ "My boss's name is Person0" was said back as "your boss' name"; "kids' names" stays."""
    [reply] = _replies(new_user().user_id, ["My boss's name is Person0"])
    assert reply == "Got it, I'll remember that your boss's name is Person0."
    assert slot_phrase("kids_name") == "kids' name"


# Found on 2026-12-07: "My name is Ada. Nice to meet you!" saved the name "Ada. Nice To Meet You": the name ran
# past the full stop (and past "by the way", "from now on").


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("My name is Ada. Nice to meet you!", "Ada"),
        ("I'm Ada, nice to meet you", "Ada"),
        ("My name's Ada by the way", "Ada"),
        ("I'm Ada by the way", "Ada"),  # it was kept as the note "I'm Ada by the way"
        ("By the way, my name is Ada", "Ada"),  # it was remembered, but the profile kept no name
        ("please call me Mia from now on", "Mia"),
        ("my name is Dr. Ada Lovelace", "Dr. Ada Lovelace"),  # a title's full stop is part of the name
        ("Hi, my name is Ada Lovelace. Nice to meet you.", "Ada Lovelace"),
    ],
)
def test_the_name_saved_is_only_the_name(text, name):
    assert classify(text).calls[:2] == [
        ("update_profile", {"field": "name", "value": name}),
        ("remember_detail", {"memory_type": "name", "content": name}),
    ]


def _tool_calls(result) -> list[tuple[str, dict]]:
    return [(ev.item.name, json.loads(ev.item.arguments)) for ev in result.events if ev.type == "function_call"]


def _said_alone(question: str, new_user) -> str:
    """The reply to `question` asked on its own, by a new user."""
    [reply] = _replies(new_user().user_id, [question])
    return reply


def test_a_name_then_more_keeps_the_name_alone_and_the_rest(new_user):
    """ "My name is Mary Ann. I live in Leeds." saved the name "Mary Ann. I Live In Leeds"."""
    cases = [
        ("My name is Mary Ann. I live in Leeds.", "Mary Ann", {"home_city": "Leeds"}, "Got it, I'll remember that "
         "you live in Leeds."),
        ("My name is Ada! How are you?", "Ada", {}, _said_alone("How are you?", new_user)),
    ]  # fmt: skip
    for said, name, other_facts, rest_of_the_reply in cases:
        user = new_user()
        [reply] = _replies(user.user_id, [said])
        assert reply == f"Nice to meet you, {name}! I'll call you {name} from now on. {rest_of_the_reply}"
        assert profiles.get_profile(user.scope).name == name
        assert {m.memory_type: m.content for m in memories.list_memories(user.scope)} == {"name": name} | other_facts


# Found on 2026-12-07: a fact told before a question for the knowledge base was dropped ("I'm vegetarian. What do
# you recommend?" searched the knowledge base with the whole message and kept nothing).


def _run(user_id, said: str):
    async def talk():
        async with agent_session(user_id, recall_budget_ms=30_000) as run:
            return await run.session.run(user_input=said)

    return asyncio.run(talk())


@pytest.mark.parametrize(
    ("said", "kept", "said_back", "question"),
    [
        ("I'm vegetarian. What do you recommend?", {"diet": "vegetarian"}, "Got it, I'll remember that you're "
         "vegetarian.", "What do you recommend?"),
        ("I have a dog. Is shipping free?", {"pet": "a dog"}, "Got it, I'll remember that you have a dog.",
         "Is shipping free?"),
        # the whole was searched in the memories (for "me"), and no name kept
        ("call me Jo. What's the weather like?", {"name": "Jo"}, "Nice to meet you, Jo! I'll call you Jo from now "
         "on.", "What's the weather like?"),
        # the time zone was kept and the question dropped: its "it" was read as pointing back at the time zone
        ("My time zone is Europe/Paris. What time is it?", {"timezone": "Europe/Paris"}, "Got it, your time zone is "
         "Europe/Paris.", "What time is it?"),
    ],
)  # fmt: skip
def test_a_fact_told_before_a_question_for_the_shop_is_kept_and_the_question_searched_alone(
    said, kept, said_back, question, new_user
):
    user = new_user()
    result = _run(user.user_id, said)
    assert reply_text(result) == f"{said_back} {_said_alone(question, new_user)}"
    assert {m.memory_type: m.content for m in memories.list_memories(user.scope)} == kept
    assert [args for tool, args in _tool_calls(result) if tool == "search_knowledge"] == [{"query": question}]
    if "name" in kept:
        assert profiles.get_profile(user.scope).name == kept["name"]
    if "timezone" in kept:
        assert profiles.get_profile(user.scope).timezone == kept["timezone"]


def test_a_problem_described_then_asked_about_is_one_question_and_keeps_nothing(new_user):
    user = new_user()
    said = "My grinder is making a weird noise. What should I do?"
    result = _run(user.user_id, said)
    assert _tool_calls(result) == [("search_knowledge", {"query": said})]
    assert reply_text(result).startswith("From the Kestrel Coffee knowledge base (")
    assert memories.list_memories(user.scope) == []


# Found in a fresh-clone walkthrough on 2026-12-07: "how's your day going?" was searched in the shop's documents
# ("I couldn't find anything about that in the Kestrel Coffee knowledge base"), alone and after a statement.


def test_hows_your_day_going_is_small_talk_alone_and_after_a_statement(new_user):
    alone = _said_alone("How's your day going?", new_user)
    assert alone == _said_alone("How are you?", new_user)
    user = new_user()
    result = _run(user.user_id, "I just got back from Lisbon. How's your day going?")
    assert reply_text(result) == f"{_said_alone('I just got back from Lisbon.', new_user)} {alone}"
    assert [tool for tool, _ in _tool_calls(result)] == ["remember_detail"]  # the shop's documents are not searched
    assert {m.memory_type: m.content for m in memories.list_memories(user.scope)} == {
        "note_back_lisbon": "I just got back from Lisbon"
    }


# Found in a fresh-clone walkthrough on 2026-12-07: "my name is Joanna but call me Jo" kept the name Joanna, and the
# agent called the user Joanna; "call me Jo" after the name was dropped.


@pytest.mark.parametrize(
    "said",
    ["my name is Joanna but call me Jo", "I'm Joanna, but everyone calls me Jo", "Call me Jo, my name is Joanna"],
)
def test_the_name_asked_to_be_called_is_the_name_and_the_other_is_the_full_name(said, new_user):
    user = new_user()
    reply, name, full_name = _replies(user.user_id, [said, "what's my name?", "what's my full name?"])
    assert reply == (
        "Nice to meet you, Jo! I'll call you Jo from now on. Got it, I'll remember that your full name is Joanna."
    )
    assert (name, full_name) == ("You told me your name is Jo.", "You told me your full name is Joanna.")
    assert profiles.get_profile(user.scope).name == "Jo"  # what the next conversation greets with
    assert {m.memory_type: m.content for m in memories.list_memories(user.scope)} == {
        "name": "Jo",
        "full_name": "Joanna",
    }


@pytest.mark.parametrize(
    ("text", "name", "full_name"),
    [
        ("call me Jo", "Jo", None),
        ("everyone calls me Jo", "Jo", None),
        ("My name is Joanna. I go by Jo.", "Jo", "Joanna"),
        ("my full name is Joanna Smith, call me Jo", "Jo", "Joanna Smith"),
        ("I'm a nurse, call me Jo", "Jo", None),  # and the job (below)
        ("my name is Ada, call me if you need anything", "Ada", None),  # no name after "call me"
        ("my mom will call me tomorrow", None, None),
        ("My parents are great, they call me every day", None, None),
        ("Call me old-fashioned, but I take my coffee black", None, None),  # kept the name "Old-fashioned"
    ],
)
def test_call_me_is_the_name_wherever_it_is_said_and_only_before_a_name(text, name, full_name):
    calls = classify(text).calls
    assert [args["value"] for tool, args in calls if tool == "update_profile"] == ([name] if name else [])
    kept = {args["memory_type"]: args["content"] for tool, args in calls if tool == "remember_detail"}
    assert kept.get("full_name") == full_name
    if "nurse" in text:
        assert kept["job"] == "nurse"


# Found in a fresh-clone walkthrough on 2026-12-07: "I take my coffee black" was kept as the favorite drink "black" and
# said back as "your favorite drink is black".


def test_how_the_user_takes_their_coffee_is_kept_and_said_back_in_their_words(new_user):
    user = new_user()
    kept, asked = _replies(user.user_id, ["I take my coffee black", "what do I usually drink?"])
    assert kept == "Got it, I'll remember that you take your coffee black."
    assert asked == "You told me you take your coffee black."
    assert {m.memory_type: m.content for m in memories.list_memories(user.scope)} == {
        "favorite_drink": "I take my coffee black"
    }


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("My coffee is black", "I take my coffee black"),  # how it is taken: "your favorite drink is black"
        ("my coffee is decaf", "I take my coffee decaf"),
        ("my coffee is a flat white", "a flat white"),  # which drink: as before
    ],
)
def test_my_coffee_is_says_how_or_which(said, kept):
    assert classify(said).calls == [("remember_detail", {"memory_type": "favorite_drink", "content": kept})]


# "how's my order?" searched the memories for the usual coffee order; "what's my usual order?" asked for an order
# number (both found in a fresh-clone walkthrough on 2026-12-07)
@pytest.mark.parametrize(
    ("said", "calls", "asks_the_number"),
    [
        ("how's my order?", [], True),
        ("how is my package doing?", [], True),
        ("how is my order 1001?", [("lookup_order", {"order_id": "1001"})], False),
        ("what's my usual order?", [("recall_detail", {"memory_type": "favorite_drink"})], False),
        ("what is my coffee order?", [("recall_detail", {"memory_type": "favorite_drink"})], False),
    ],
)
def test_an_orders_status_or_the_usual_order(said, calls, asks_the_number):
    intent = classify(said)
    assert intent.calls == calls
    assert (intent.reply == ASK_ORDER_NUMBER) is asks_the_number


def test_a_food_the_user_avoids_keeps_the_diet_they_follow(new_user):
    """Found in a walkthrough (2026-12-07): "I don't drink alcohol" went into `diet` and replaced
    "vegetarian" ("Updated: ... (before, I had vegetarian)"): a fact lost for an unrelated one."""
    user = new_user()
    _, avoided = _replies(user.user_id, ["I'm vegetarian", "I don't drink alcohol"])
    assert avoided == "Got it, I'll remember that you don't drink alcohol."
    assert {m.memory_type: m.content for m in memories.list_memories(user.scope)} == {
        "diet": "vegetarian",
        "diet_alcohol": "I don't drink alcohol",
    }


# Found in a walkthrough (2026-12-07): "my name is not Priya, it's Priyanka" kept the name "Not Priya"; with
# "isn't" the whole sentence became a note, and "what's my name?" still said Priya.
@pytest.mark.parametrize(
    ("said", "slot", "value"),
    [
        ("my name is not Priya, it's Priyanka", "name", "Priyanka"),
        ("Actually my name isn't Priya, it's Priyanka", "name", "Priyanka"),
        ("my favorite color isn't blue, it's teal", "favorite_color", "teal"),
        ("my dog's name is not Rex but Max", "dog_name", "Max"),
    ],
)
def test_a_correction_keeps_the_new_value(said, slot, value):
    kept = {args["memory_type"]: args["content"] for tool, args in classify(said).calls if tool == "remember_detail"}
    assert kept == {slot: value}


# Found in a walkthrough (2026-12-07): "tell me a joke" and "can you book me a flight to Paris?" were searches of
# the user's memories, answered "I don't remember you telling me that"; "and 1003?" right after an order's
# answer was a search of the shop's documents.
@pytest.mark.parametrize("said", ["tell me a joke", "can you book me a flight to Paris?", "set a timer for 5 minutes"])
def test_what_the_agent_cannot_do_it_says_so(said):
    intent = classify(said)
    assert intent.calls == [] and intent.reply.startswith("I can't do that")


@pytest.mark.parametrize(("said", "order"), [("and 1003?", "1003"), ("what about 1004", "1004"), ("1005", "1005")])
def test_a_number_alone_is_an_order(said, order):
    assert classify(said).calls == [("lookup_order", {"order_id": order})]


def test_a_question_whose_memory_was_forgotten_is_not_answered_with_another(new_user):
    """Found in a walkthrough (2026-12-07): once "forget where I live" had done its work, "where do I live?" was
    answered "You told me you're 34 years old", the nearest memory in meaning, which shares none of its words."""
    user = new_user()
    *_, answer = _replies(
        user.user_id, ["I live in Porto", "I'm 34 years old", "forget where I live", "where do I live?"]
    )
    assert "34" not in answer and "Porto" not in answer, answer


# Found in a walkthrough on 2026-12-07: "What is my name and where do I live?" was answered with the city alone
# (read whole, the message is one question: the first rule that matches).


@pytest.mark.parametrize(
    ("text", "first", "second"),
    [
        ("What is my name and where do I live?", "What is my name?", "where do I live?"),
        ("what's my name and my email?", "what's my name?", "what's my email?"),
        ("Where is order 1001 and what is my name", "Where is order 1001?", "what is my name?"),
    ],
)
def test_two_questions_in_one_message_are_read_as_two(text, first, second):
    read = two_questions(text)
    assert read is not None and (read[0], read[2]) == (first, second)


@pytest.mark.parametrize(
    "text",
    [
        "What do you know about me and my family?",  # one question
        "Where is order 1001 and when will it arrive?",  # the second points back at the first
        "I live in Denver and what is my name?",  # told first: not two questions
        "what is my name and what is my name?",  # the same question twice
        "How do I descale and what grind size should I use?",  # the shop's questions: the search takes both
    ],
)
def test_a_message_is_read_as_two_questions_only_when_it_asks_two(text):
    assert two_questions(text) is None


def test_two_questions_in_one_message_get_both_answers(new_user):
    user = new_user()
    said = [
        "My name is Ada",
        "I live in Denver",
        "What is my name and where do I live?",
        "where do I live and what's my favorite color?",  # one it does not know: said so, after the other
        "where is order 1001 and what's my name",
        "I'm a teacher. What is my name and where do I live?",  # told first, then both asked
    ]
    replies = _replies(user.user_id, said)
    assert replies[2] == "You told me your name is Ada. You told me you live in Denver.", replies
    assert replies[3].startswith("You told me you live in Denver. I don't remember your favorite color yet."), replies
    assert replies[4].startswith("Order 1001 is delivered") and replies[4].endswith("You told me your name is Ada.")
    assert replies[5] == (
        "Got it, I'll remember that you work as a teacher. "
        "You told me your name is Ada. You told me you live in Denver."
    ), replies[5]


# Found by a helper's walkthrough on 2026-12-07: the end of the session remembered "home_city: Denver, what is my
# name" and, from a voice call (speech-to-text writes a pause as a comma), "favorite_color: green, where is order
# 1002".


@pytest.mark.parametrize(
    ("text", "slot", "content"),
    [
        ("I live in Denver, what is my name?", "home_city", "Denver"),
        ("My favorite color is green, where is order 1002?", "favorite_color", "green"),
        ("my favorite color is green, where is order 1002", "favorite_color", "green"),
        ("I live in Denver and what is my name?", "home_city", "Denver"),
        ("my favorite books are Dune, Who Fears Death", "favorite_books", "Dune, Who Fears Death"),  # a title
        ("my favorite band is Hootie and the Blowfish", "favorite_band", "Hootie and the Blowfish"),
    ],
)
def test_a_question_after_a_comma_is_no_part_of_the_fact(text, slot, content):
    assert [(f.memory_type, f.content) for f in parse_facts(text)] == [(slot, content)]
    assert [(fact.memory_type, fact.content) for fact, _ in propose_with_rules([text])] == [(slot, content)]


@pytest.mark.parametrize(
    ("asked", "said", "answers"),
    [
        ("What is my name?", "My dog's name is Biscuit", False),
        ("What is my name?", "Got it, I'll remember that your dog's name is Biscuit.", False),
        ("When is my birthday?", "my sister's birthday is in May", False),
        ("What is my name?", "my name is Ada and my dog's name is Rex", True),
        ("What is my dog's name?", "My dog's name is Biscuit", True),
        ("What is my name?", "Call me Ada", True),
    ],
)
def test_the_users_own_detail_is_not_answered_with_someone_elses(asked, said, answers):
    """A helper's walkthrough (2026-12-07): the name deleted on Memories, "What is my name?" was answered from an
    earlier conversation with "you said: “My dog's name is Biscuit”" (it shares "name")."""
    assert about_what_was_asked(asked, "", said) is answers


def test_a_memory_written_on_several_lines_is_said_on_one():
    """A walkthrough (2026-12-07): a memory edited to "Biscuit⏎- third line⏎# heading?" came back in the reply as
    a list item and a heading, the "-" and "#" the user typed gone (the chat draws the agent's Markdown)."""
    said = describe_fact("dog_name", "Biscuit\nsecond line\n\n- third line\n# heading?")
    assert said == "your dog's name is Biscuit second line - third line # heading?"
