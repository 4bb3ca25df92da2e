"""The offline demo brain: intent accuracy on the labelled set, its replies, and
the post-session fact extraction that shares its parser."""

from __future__ import annotations

import json
from collections import Counter
from datetime import date

import pytest

from agent.brain.earlier import NOTHING_FOUND_PHRASES
from agent.brain.facts import parse_facts
from agent.brain.intents import INTENTS, classify
from agent.brain.llm import recalled_memories
from agent.brain.replies import IDENTITY_REPLY, NOTHING_FOUND_REPLY, compose_reply
from agent.extraction import extract_facts
from agent.sensitive import rejection_reason, secret_reason
from tests.support.app import TEST_DATA

LABELLED = TEST_DATA / "brain_utterances.jsonl"


def _labelled() -> list[dict]:
    return [json.loads(line) for line in LABELLED.read_text().splitlines() if line.strip()]


def test_labelled_set_is_big_enough_and_covers_every_intent():
    rows = _labelled()
    assert len(rows) >= 300
    heldout = [row for row in rows if row["split"] == "heldout"]
    assert len(heldout) >= len(rows) // 3  # a third never tuned on
    assert {row["split"] for row in rows} == {"dev", "heldout"}
    for split in ("dev", "heldout"):
        counts = Counter(row["intent"] for row in rows if row["split"] == split)
        assert set(counts) == set(INTENTS)
        assert min(counts.values()) >= 4  # paraphrases for each intent, not one example


@pytest.mark.parametrize(("split", "goal"), [("dev", 0.95), ("heldout", 0.90)])
def test_intent_accuracy_on_the_labelled_set(split, goal):
    rows = [row for row in _labelled() if row["split"] == split]
    misses = [
        (row["text"], row["intent"], classify(row["text"]).name)
        for row in rows
        if classify(row["text"]).name != row["intent"]
    ]
    accuracy = 1 - len(misses) / len(rows)
    print(f"{split}: {len(rows) - len(misses)}/{len(rows)}")
    assert accuracy >= goal, f"accuracy {accuracy:.1%}; misses: {misses}"


def test_tool_and_arguments_on_the_labelled_set():
    """Where the set names the tool and arguments, the brain's call must match them."""
    rows = [row for row in _labelled() if "tool" in row]
    wrong = []
    for row in rows:
        calls = classify(row["text"]).calls
        name, args = calls[0] if calls else (None, {})
        if name != row["tool"] or any(args.get(k) != v for k, v in row.get("args", {}).items()):
            wrong.append((row["text"], calls))
    assert len(wrong) / len(rows) <= 0.05, wrong


def test_identity_reply_says_what_it_is_and_how_to_configure_a_model():
    intent = classify("are you a real AI?")
    assert intent.name == "identity" and intent.calls == []
    assert intent.reply == IDENTITY_REPLY
    for needle in (
        "offline demo brain",
        "rule-based",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "LLM_MODEL",
        "LIVEKIT_URL",
        "LIVEKIT_API_KEY",
        "LIVEKIT_API_SECRET",
    ):
        assert needle in IDENTITY_REPLY


@pytest.mark.parametrize(
    "text", ["my password is hunter2", "remember my card number is 4242 4242 4242 4242", "remember that my PIN is 1234"]
)
def test_brain_refuses_to_store_secrets(text):
    intent = classify(text)
    assert intent.calls == [] and "rather not keep" in intent.reply


def test_compound_statement_becomes_two_facts():
    intent = classify("I live in Boulder and I work at Globex")
    assert intent.calls == [
        ("remember_detail", {"memory_type": "home_city", "content": "Boulder"}),
        ("remember_detail", {"memory_type": "employer", "content": "Globex"}),
    ]
    reply = compose_reply(
        "I live in Boulder and I work at Globex",
        [
            ("remember_detail", args, json.dumps({**args, "created": True, "previous_content": None}), False)
            for _, args in intent.calls
        ],
    )
    assert reply == "Got it, I'll remember that you live in Boulder and that you work at Globex."


def test_reply_reports_an_updated_slot():
    reply = compose_reply(
        "I live in Boulder",
        [
            (
                "remember_detail",
                {"memory_type": "home_city", "content": "Boulder"},
                json.dumps(
                    {
                        "memory_type": "home_city",
                        "content": "Boulder",
                        "created": False,
                        "previous_content": "Denver, Colorado",
                    }
                ),
                False,
            )
        ],
    )
    assert reply == "Updated: I'll remember that you live in Boulder (before, I had Denver, Colorado)."


@pytest.mark.parametrize(
    ("memory_type", "content", "reason"),
    [
        ("card", "4111 1111 1111 1111", "payment card number"),
        ("wifi_password", "BlueHeron5", "secret (password, PIN, account or id number)"),
        ("allergies", "peanuts", "health detail"),
        ("medication", "takes metformin daily", "health detail"),
        ("mood", "tired today", "volatile (true only for now)"),
    ],
)
def test_sensitive_and_volatile_facts_are_rejected(memory_type, content, reason):
    assert rejection_reason(memory_type, content) == reason


@pytest.mark.parametrize(
    "text",
    [
        "my PIN is 1234",
        "what is my pin?",
        "I forgot my pin",
        "the card pin is 0000",
        "pin 4417",
        "the pin for the safe is 2020",
        "my api token is ghp_x1",
        "the token is abc123",
    ],
)
def test_a_pin_or_a_token_that_opens_something_is_a_secret(text):
    assert secret_reason(text) is not None


@pytest.mark.parametrize(
    "text",
    ["the pin on my grinder broke", "bowling pins everywhere", "I got a token from the arcade", "I love pinball"],
)
def test_a_pin_or_a_token_that_opens_nothing_is_kept(text):
    """Found in a walkthrough (2026-12-07): "the pin on my grinder broke" was stored withheld, the word "pin"
    alone taken for a PIN; a message withheld is one the agent can never recall."""
    assert secret_reason(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "the alarm code at my house is 4417",  # kept, and recalled in a later session, until 2026-12-07
        "my door code is 4417",
        "the gate code is 1234",
        "my garage keypad code is 9911",
        "my phone unlock code is 5555",
        "the code to my front door is 2580",
        "my safe combination is 12-34-56",
        "the combination is 12-34-56",
        "my security answer is Fluffy",
        "my verification code is 339911",
        "here is my recovery phrase: apple banana cherry",
        "What was the alarm code I mentioned?",
    ],
)
def test_a_code_or_a_combination_that_opens_something_is_a_secret(text):
    assert secret_reason(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "my zip code is 80203",
        "the area code is 303",
        "use promo code SAVE10",
        "the dress code is casual",
        "error code E03 on my machine",
        "the building code needs a railing",
        "a nice combination of flavours",
        "I work in building security",
    ],
)
def test_a_code_that_opens_nothing_is_kept(text):
    assert secret_reason(text) is None


@pytest.mark.parametrize("text", ["What was that ramen restaurant called?", "So, what was that book called?"])
def test_what_was_that_called_asks_about_something_said_not_the_knowledge_base(text):
    """A walkthrough (2026-12-07): "What was that ramen restaurant called?" searched the shop's articles and said
    nothing there was about it; "that" points back to something the user said (memories, then earlier
    conversations: `follow_up`)."""
    assert classify(text).calls == [("search_memories", {"query": text})]


def test_ordinary_facts_pass_and_card_lookalikes_are_not_cards():
    assert rejection_reason("home_city", "Denver, Colorado") is None
    assert rejection_reason("phone_model", "Pixel 1234 5678 9012 3456") is None  # fails the Luhn check
    assert secret_reason("order 1001") is None
    # a parcel's tracking number: 19 of its 22 digits passed the Luhn check, and the agent's answer about order
    # 1004 was stored withheld (found in a walkthrough, 2026-12-07)
    assert secret_reason("USPS tracking 9400111899223817465203") is None
    assert secret_reason("my card is 4242-4242-4242-4242.") == "payment card number"


async def test_extraction_keeps_durable_facts_and_drops_the_rest():
    turns = [
        "where is order 1001? I live in Boulder.",
        "I'm allergic to peanuts",
        "my favorite color is teal",  # the tool already saved this slot during the session
        "I drive a blue Subaru Outback",
        "my card is 4111 1111 1111 1111",
        "I work at Globex",
    ]
    extraction = await extract_facts(turns, touched_slots={"favorite_color"}, existing={"car": "a blue Subaru Outback"})
    assert extraction.method == "rules"
    assert [(f.memory_type, f.content) for f in extraction.facts] == [("home_city", "Boulder"), ("employer", "Globex")]
    assert all(0.6 <= f.confidence <= 1 for f in extraction.facts)
    reasons = {d["memory_type"]: d["reason"] for d in extraction.dropped}
    assert reasons == {
        "allergies": "health detail",
        "favorite_color": "handled by a tool during the session",
        "car": "already remembered",
        "card": "payment card number",
    }


async def test_extraction_keeps_what_was_said_of_a_slot_after_the_tool_wrote_it():
    """A helper's walkthrough (2026-12-07): "I live in Boston." remembered by the tool, then "Where is order 1002?
    By the way I live in Denver.", which no tool wrote, ended the session with Boston: the slot was the tools'."""
    turns = ["I live in Boston.", "Where is order 1002? By the way I live in Denver.", "my favorite color is teal"]
    later = await extract_facts(turns, touched_slots={"home_city": 0, "favorite_color": 2}, existing={})
    assert [(f.memory_type, f.content) for f in later.facts] == [("home_city", "Denver")]
    assert {d["memory_type"]: d["reason"] for d in later.dropped} == {
        "favorite_color": "handled by a tool during the session"
    }
    # the tool wrote it in that same message, or later: the tool's word stands
    for written in (1, 2):
        same = await extract_facts(turns, touched_slots={"home_city": written}, existing={})
        assert "home_city" not in [f.memory_type for f in same.facts]


async def test_extraction_caps_at_five_facts():
    turns = [
        "I live in Boulder",
        "I work at Globex",
        "I drive a Civic",
        "my dog is Rex",
        "my boat is Wanda",
        "my favorite band is Low",
        "my favorite book is Dune",
    ]
    extraction = await extract_facts(turns, touched_slots=set(), existing={})
    assert len(extraction.facts) == 5
    assert sum(d["reason"] == "over the limit of 5" for d in extraction.dropped) == 2


async def test_extraction_with_a_model_that_returns_garbage_falls_back_to_rules():
    class BrokenModel:
        def chat(self, **_):
            raise RuntimeError("no JSON today")

    extraction = await extract_facts(["I live in Boulder"], touched_slots=set(), existing={}, llm_model=BrokenModel())
    assert extraction.method == "llm+rules"
    assert [(f.memory_type, f.content) for f in extraction.facts] == [("home_city", "Boulder")]


def test_parse_facts_keeps_the_last_mention_of_a_slot():
    facts = parse_facts("I live in Denver. Actually I live in Boulder.")
    assert [(f.memory_type, f.content) for f in facts] == [("home_city", "Boulder")]


@pytest.mark.parametrize(
    ("text", "memory_type", "content", "said_back"),
    [
        ("my sister Ana lives in Porto", "sister", "Ana lives in Porto", "your sister Ana lives in Porto"),
        ("my dog is called Pixel", "dog_name", "Pixel", "your dog's name is Pixel"),
        (
            "I usually order an oat flat white",
            "favorite_drink",
            "oat flat white",
            "your favorite drink is oat flat white",  # its slot named ("your usual is" before)
        ),
        ("I'm vegetarian", "diet", "vegetarian", "you're vegetarian"),
        ("I work as a nurse", "job", "nurse", "you work as a nurse"),
        ("I love hiking near my home", "likes_hiking_near", "hiking near my home", "you like hiking near your home"),
        ("I like 🐶🍕", "likes", "🐶🍕", "you like 🐶🍕"),  # no word to name the slot: still said back as a like
        # each in a slot of its own: "I don't drink alcohol" replaced "vegetarian" in `diet` (found 2026-12-07)
        ("I don't eat fish", "diet_fish", "I don't eat fish", "you don't eat fish"),
        ("I don't drink tea", "diet_tea", "I don't drink tea", "you don't drink tea"),
        # how a drink is taken, in the user's words: "your favorite drink is your tea with milk" before
        ("I drink my tea with milk", "favorite_drink", "I drink my tea with milk", "you drink your tea with milk"),
        ("I take two sugars", "note_take_two_sugars", "I take two sugars", "you take two sugars"),
    ],
)
def test_everyday_statements_are_stored_and_said_back_grammatically(text, memory_type, content, said_back):
    intent = classify(text)
    assert intent.calls == [("remember_detail", {"memory_type": memory_type, "content": content})]
    output = json.dumps({"memory_type": memory_type, "content": content, "created": True, "previous_content": None})
    reply = compose_reply(text, [("remember_detail", intent.calls[0][1], output, False)])
    assert reply == f"Got it, I'll remember that {said_back}."


@pytest.mark.parametrize(
    ("text", "slot"),
    [
        ("I play the guitar", "note_play_guitar"),
        ("I'm retired", "note_retired"),
        ("remember that my sister Ana lives in Porto", "sister"),
        ("I volunteer at the animal shelter", "note_volunteer_animal_shelter"),
    ],
)
def test_a_statement_about_oneself_that_fits_no_slot_is_kept_as_a_note(text, slot):
    (name, args), *_ = classify(text).calls
    assert name == "remember_detail" and args["memory_type"] == slot


@pytest.mark.parametrize("text", ["I need help with my grinder", "I'm fine thanks", "I think so", "I want a refund"])
def test_requests_and_moods_are_not_notes(text):
    assert all(name != "remember_detail" for name, _ in classify(text).calls)


@pytest.mark.parametrize(
    "text", ["My favorite drink is...", "My favorite drink is", "I live in", "my name is", "I work at the"]
)
def test_a_statement_cut_off_before_its_point_is_asked_about_not_stored(text):
    """A pause mid-sentence ends a spoken turn: "My favorite drink is..." was kept as a note and confirmed
    with "Got it, I'll remember that your favorite drink is." """
    intent = classify(text)
    assert intent.calls == []
    assert intent.reply.startswith("It sounds like you stopped mid-sentence") and text.rstrip(".") in intent.reply


@pytest.mark.parametrize(
    "text,call",
    [
        ("# heading\nmy cat is called `Miso`", ("remember_detail", {"memory_type": "cat_name", "content": "Miso"})),
        ("my name is <i>Bob</i>", ("remember_detail", {"memory_type": "name", "content": "Bob"})),
        ("**my** dog is called _Pixel_", ("remember_detail", {"memory_type": "dog_name", "content": "Pixel"})),
    ],
)
def test_a_fact_in_markdown_or_html_is_read_without_its_formatting(text, call):
    """A walkthrough (2026-12-07): these were kept as notes ("I haven't saved that as a memory, but our
    conversation is kept, so you can ask me about it later"), and "what is my cat's name?" then found nothing."""
    assert call in classify(text).calls


@pytest.mark.parametrize(
    "asked,slot", [("Can you tell me my PIN?", "pin"), ("what is my wifi password?", "wifi_password")]
)
def test_asked_for_a_secret_it_does_not_have_it_never_asks_to_be_told(asked, slot):
    """A walkthrough (2026-12-07): "Can you tell me my PIN?" was answered "I don't remember your pin yet. Tell me
    and I'll remember it.", one turn after "I'd rather not keep passwords, PINs …" (a lowercase "pin" was no
    secret to the check)."""
    results = [("recall_detail", {"memory_type": slot}, f"Nothing is remembered under '{slot}'.", True)]
    reply = compose_reply(asked, results)
    assert (
        reply.startswith(f"I don't have your {slot.replace('_', ' ')}: I don't keep passwords")
        and "Tell me" not in reply
    )


def test_a_long_message_cut_off_is_quoted_by_its_end_only():
    """A walkthrough (2026-12-07): the first 2,000 characters of a longer paste, sent, were quoted back whole
    ("It sounds like you stopped mid-sentence: “my favorite book is Dune. … my favorite book is …”"), about
    1,900 characters that filled a phone's screen."""
    text = "my favorite book is Dune. " * 76 + "my favorite book is"
    reply = classify(text).reply
    assert reply.startswith("It sounds like you stopped mid-sentence: “…") and len(reply) < 200, reply
    assert reply.endswith("Dune. my favorite book is …”. Tell me the rest and I'll remember it.")


@pytest.mark.parametrize("text", ["I live in Denver", "I play the guitar", "my favorite drink is an oat flat white"])
def test_a_finished_statement_is_still_stored(text):
    assert [name for name, _ in classify(text).calls] == ["remember_detail"]


def _search_output(*hits: dict) -> str:
    return json.dumps({"query": "q", "mode": "hybrid", "degraded_reason": None, "hits": list(hits)})


def test_a_question_is_answered_from_the_best_relevant_memory():
    hit = {"memory_type": "dog_name", "content": "Pixel", "rrf_score": 0.016, "vector_rank": 1, "text_rank": 1,
           "vector_distance": 0.5}  # fmt: skip
    reply = compose_reply("do I have pets?", [("search_memories", {"query": "pets"}, _search_output(hit), False)])
    assert reply == "You told me your dog's name is Pixel."


def test_a_missed_slot_found_by_the_search_is_answered_without_saying_it_was_missing():
    hit = {"memory_type": "dog", "content": "called Pixel", "rrf_score": 0.016, "vector_rank": 1, "text_rank": 1,
           "vector_distance": 0.4}  # fmt: skip
    reply = compose_reply(
        "what's my dog's name?",
        [
            ("recall_detail", {"memory_type": "dog_name"}, "No memory called 'dog_name'.", True),
            ("search_memories", {"query": "dog"}, _search_output(hit), False),
        ],
    )
    assert reply == "You told me your dog is called Pixel."
    assert not any(phrase in reply for phrase in NOTHING_FOUND_PHRASES)


def test_nothing_found_by_the_tools_but_a_memory_in_context_is_answered_from_it():
    """The per-turn recall (what the panel stars) put a memory into context; the reply uses it."""
    far = {"memory_type": "dog_name", "content": "Pixel", "rrf_score": 0.011, "vector_rank": 1, "text_rank": None,
           "vector_distance": 0.9}  # fmt: skip
    results = [("search_memories", {"query": "pets"}, _search_output(far), False)]
    assert compose_reply("do I have pets?", results) == NOTHING_FOUND_REPLY
    reply = compose_reply("do I have pets?", results, recalled=[("dog_name", "Pixel")])
    assert reply == "You told me your dog's name is Pixel."
    knowledge = [("search_knowledge", {"query": "can I eat meat?"}, json.dumps({"query": "q", "hits": []}), False)]
    reply = compose_reply("can I eat meat?", knowledge, recalled=[("diet", "vegetarian")])
    assert "you told me you're vegetarian" in reply
    assert not any(phrase in reply for phrase in NOTHING_FOUND_PHRASES)


def test_recalled_memories_are_read_from_the_recall_block():
    text = "<recall>\nPossibly relevant memories:\n- diet: vegetarian\n- sister: Ana lives in Porto\n</recall>\nhi"
    assert recalled_memories(text) == [("diet", "vegetarian"), ("sister", "Ana lives in Porto")]
    assert recalled_memories("no block here") == []


async def test_the_openers_piper_says_at_warm_up_are_how_the_brains_replies_begin(new_user):
    """The voice warm-up keeps Piper's audio of SPOKEN_OPENERS; they help only if a reply's first piece is one."""
    from agent.brain.replies import SPOKEN_OPENERS
    from agent.voice.local_tts import split_first_clause
    from tests.support.agent_run import agent_session, reply_text

    user = new_user()
    said = [
        "my favorite color is teal",
        "what is my favorite color?",
        "what do you know about me?",
        "how long does shipping take?",
        "forget my favorite color",
    ]
    async with agent_session(user.user_id) as run:
        replies = [reply_text(await run.session.run(user_input=text)) for text in said]
    heads = [split_first_clause(reply)[0] for reply in replies]
    assert heads == list(SPOKEN_OPENERS), replies


@pytest.mark.parametrize(
    ("text", "facts", "said"),
    [
        (
            "my name is Ada and I live in Denver",
            [("home_city", "Denver")],
            "Nice to meet you, Ada! I'll call you Ada from now on. Got it, I'll remember that you live in Denver.",
        ),
        (
            "Hi, my name is Ada, I work at Globex and I live in Boulder",
            [("employer", "Globex"), ("home_city", "Boulder")],
            "Nice to meet you, Ada! I'll call you Ada from now on. Got it, I'll remember that you work at Globex "
            "and that you live in Boulder.",
        ),
        (
            "my name is Ada and my PIN is 4821",
            [],
            "Nice to meet you, Ada! I'll call you Ada from now on. I'd rather not keep passwords, PINs, card or ID "
            "numbers, so I haven't saved that.",
        ),
    ],
)
def test_a_name_said_with_other_facts_keeps_the_facts_too(text, facts, said):
    intent = classify(text)
    assert intent.calls == [
        ("update_profile", {"field": "name", "value": "Ada"}),
        ("remember_detail", {"memory_type": "name", "content": "Ada"}),
        *(("remember_detail", {"memory_type": slot, "content": content}) for slot, content in facts),
    ]
    assert "4821" not in json.dumps(intent.calls)  # a secret never reaches a tool's arguments (they are logged)
    results = [
        (
            name,
            args,
            json.dumps({**args, "created": True, "previous_content": None} if name == "remember_detail" else args),
            False,
        )
        for name, args in intent.calls
    ]
    assert compose_reply(text, results) == said


@pytest.mark.parametrize(
    ("before", "said"),
    [
        (None, "Nice to meet you, Ada! I'll call you Ada from now on."),
        ("Ada", "I know, Ada: I already call you that."),
        ("Bea", "Okay, I'll call you Ada from now on (before, I had Bea)."),
    ],
)
def test_the_name_reply_says_whether_the_name_is_new_changed_or_known(before, said):
    memory = {"memory_type": "name", "content": "Ada", "created": before is None, "previous_content": before}
    results = [
        ("update_profile", {"field": "name", "value": "Ada"}, json.dumps({"field": "name", "value": "Ada"}), False),
        ("remember_detail", {"memory_type": "name", "content": "Ada"}, json.dumps(memory), False),
    ]
    assert compose_reply("my name is Ada", results) == said


@pytest.mark.parametrize(
    ("text", "dates"),
    [
        ("what was the name of that trail I mentioned last week?", ("2026-11-23", "2026-11-29")),
        ("did I ever mention my sister's wedding back in March?", ("2026-03-01", "2026-03-31")),
        ("what did I tell you yesterday about the dentist?", ("2026-12-01", "2026-12-01")),
        ("search our past conversations for the flight number", None),  # says no time
        ("what was that restaurant we talked about the other day?", None),  # no day it can place
    ],
)
def test_a_search_of_earlier_conversations_keeps_to_the_days_the_user_names(text, dates):
    """With today's date (the brain's clock, or the one the system prompt states), as a model would fill in the
    tool's from_date and to_date; without it, no dates."""
    (name, args), *_ = classify(text, date(2026, 12, 2)).calls
    assert name == "search_past_conversations"
    assert (args.get("from_date"), args.get("to_date")) == (dates or (None, None))
    assert "from_date" not in classify(text).calls[0][1]


@pytest.mark.parametrize(
    ("text", "intent", "dates"),
    [
        ("what did we talk about yesterday?", "past_conversations", {"from_date": "2026-12-01"}),
        ("So, what did we discuss on Monday?", "past_conversations", {"from_date": "2026-11-30"}),
        ("remind me what we talked about last week", "past_conversations",
         {"from_date": "2026-11-23", "to_date": "2026-11-29"}),
        ("what did we chat about on November 20th?", "past_conversations", {"from_date": "2026-11-20"}),
        ("what was our conversation about in March?", "past_conversations",
         {"from_date": "2026-03-01", "to_date": "2026-03-31"}),
        ("What did we talk about today?", "today", {"from_date": "2026-12-02"}),
        ("what did we talk about this morning?", "today", {"from_date": "2026-12-02"}),
    ],
)  # fmt: skip
def test_what_we_talked_about_on_the_days_named_reads_those_days_conversations(text, intent, dates):
    said = classify(text, date(2026, 12, 2))
    assert (said.name, said.calls) == (intent, [("recall_conversations", dates)])


@pytest.mark.parametrize(
    ("text", "calls"),
    [
        ("what did we talk about last time?", [("recall_last_conversation", {})]),
        ("what did we talk about the other day?", [("recall_last_conversation", {})]),  # no day it can place
        ("What did we talk about today?", []),  # without today's date: this conversation, from its context
        ("what did we talk about yesterday?", [("recall_last_conversation", {})]),
    ],
)
def test_without_a_day_it_can_place_what_we_talked_about_is_the_last_conversation(text, calls):
    today = date(2026, 12, 2) if "today" not in text and "yesterday" not in text else None
    assert classify(text, today).calls == calls


def test_a_search_of_the_days_named_that_found_nothing_is_answered_even_without_the_second_search():
    """The brain follows an empty search of the days named with one of every day; where that second search
    did not run, the reply still says nothing was found (it was "Done.")."""
    windowed = (
        "search_past_conversations",
        {"query": "the trail", "from_date": "2026-11-23", "to_date": "2026-11-29"},
        json.dumps({"searched_dates": "2026-11-23 to 2026-11-29", "hits": []}),
        False,
    )
    assert compose_reply("what was the trail I mentioned last week?", [windowed]) == (
        "I couldn't find anything about that in our earlier conversations."
    )
    everywhere = (
        "search_past_conversations",
        {"query": "the trail"},
        json.dumps({"hits": [{"date": "2026-11-10", "speaker": "user", "content": "We hiked the Cedar Creek Loop.",
                              "rrf_score": 0.5, "vector_rank": 1, "text_rank": 1, "vector_distance": 0.2}]}),
        False,
    )  # fmt: skip
    assert compose_reply("what was the trail I mentioned last week?", [windowed, everywhere]) == (
        "Nothing from 2026-11-23 to 2026-11-29 answers that. On Tuesday, November 10 you said: "
        "“We hiked the Cedar Creek Loop.” (RRF score 0.5000)."
    )
