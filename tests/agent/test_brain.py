"""The offline demo brain: intent accuracy on the labelled set, its replies, and
the post-session fact extraction that shares its parser."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from agent.brain.facts import parse_facts
from agent.brain.intents import INTENTS, classify
from agent.brain.replies import IDENTITY_REPLY, compose_reply
from agent.extraction import extract_facts
from agent.sensitive import rejection_reason, secret_reason
from tests.support.app import TEST_DATA

LABELLED = TEST_DATA / "brain_utterances.jsonl"


def _labelled() -> list[dict]:
    return [json.loads(line) for line in LABELLED.read_text().splitlines() if line.strip()]


def test_labelled_set_is_big_enough_and_covers_every_intent():
    rows = _labelled()
    assert len(rows) >= 60
    counts = Counter(row["intent"] for row in rows)
    assert set(counts) == set(INTENTS)
    assert min(counts.values()) >= 4  # paraphrases for each intent, not one example


def test_intent_accuracy_on_the_labelled_set():
    rows = _labelled()
    misses = [
        (row["text"], row["intent"], classify(row["text"]).name)
        for row in rows
        if classify(row["text"]).name != row["intent"]
    ]
    accuracy = 1 - len(misses) / len(rows)
    assert accuracy >= 0.95, f"accuracy {accuracy:.1%}; misses: {misses}"


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


def test_ordinary_facts_pass_and_card_lookalikes_are_not_cards():
    assert rejection_reason("home_city", "Denver, Colorado") is None
    assert rejection_reason("phone_model", "Pixel 1234 5678 9012 3456") is None  # fails the Luhn check
    assert secret_reason("order 1001") is None


async def test_extraction_keeps_durable_facts_and_drops_the_rest():
    turns = [
        "where is order 1001? I live in Boulder.",
        "I'm allergic to peanuts",
        "my favorite color is teal",  # the tool already saved this slot during the session
        "I drive a blue Subaru Outback",
        "my card is 4111 1111 1111 1111",
        "I work at Globex",
    ]
    extraction = await extract_facts(turns, touched_slots={"favorite_color"}, existing={"car": "blue Subaru Outback"})
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
