"""The offline brain answers from what it recalled: the issue's five facts (and two more) taught in plain
words, then questions about them asked the way people ask, through the real agent, the real embedded
database and the real embedding model.

tests/data/brain_recall.jsonl holds the facts and the questions, split into a dev set (the brain's rules
were tuned on it) and a held-out set (written before tuning and never tuned on; only measured). A reply
counts when it contains the expected fact. Whatever the reply, it must never say it found nothing while
the per-turn recall put a memory into context (what the retrieval panel stars).
"""

from __future__ import annotations

import json

import pytest

from agent.brain.earlier import NOTHING_FOUND_PHRASES
from core import memories
from tests.support.agent_run import agent_session, reply_text
from tests.support.app import TEST_DATA

RECALL_SET = TEST_DATA / "brain_recall.jsonl"
DEV_GOAL, HELDOUT_GOAL = 0.9, 0.8


def _recall_set() -> tuple[list[str], list[dict]]:
    lines = [json.loads(line) for line in RECALL_SET.read_text().splitlines() if line.strip()]
    return lines[0]["teach"], lines[1:]


async def _ask_all(user) -> list[dict]:
    teach, questions = _recall_set()
    answers = []
    async with agent_session(user.user_id, recall_budget_ms=30_000) as run:
        for statement in teach:
            await run.session.run(user_input=statement)
        for row in questions:
            before = len(run.events("retrieval"))
            reply = reply_text(await run.session.run(user_input=row["question"]))
            recalls = [e for e in run.events("retrieval")[before:] if e["trigger"] == "per_turn_recall"]
            answers.append({**row, "reply": reply, "injected": bool(recalls and recalls[0].get("injected"))})
    return answers


@pytest.fixture(scope="module")
def answers(database_uri):
    import asyncio

    from tests.support.users import sign_in

    user = sign_in()
    return user, asyncio.run(_ask_all(user))


def _score(answers, split: str) -> tuple[int, int, list]:
    rows = [a for a in answers[1] if a["split"] == split]
    misses = [(a["question"], a["reply"]) for a in rows if a["expect"].lower() not in a["reply"].lower()]
    return len(rows) - len(misses), len(rows), misses


def test_every_fact_taught_in_plain_words_is_stored(answers):
    user, _ = answers
    stored = {m.memory_type: m.content for m in memories.list_memories(user.scope)}
    assert stored.get("diet") == "vegetarian"
    assert "Porto" in stored.get("sister", "")
    assert stored.get("favorite_drink") == "oat flat white"
    assert stored.get("name") == "Jo"
    assert stored.get("dog_name") == "Pixel"
    assert stored.get("job") == "nurse"
    assert any(slot.startswith("likes_") and "hiking" in content for slot, content in stored.items())


def test_recall_on_the_dev_set(answers):
    right, total, misses = _score(answers, "dev")
    print(f"dev recall: {right}/{total}")
    assert right / total >= DEV_GOAL, misses


def test_recall_on_the_held_out_set(answers):
    right, total, misses = _score(answers, "heldout")
    print(f"held-out recall: {right}/{total}")
    assert right / total >= HELDOUT_GOAL, misses


def test_never_says_nothing_found_while_a_memory_is_in_context(answers):
    contradictions = [
        (a["question"], a["reply"])
        for a in answers[1]
        if a["injected"] and any(phrase in a["reply"] for phrase in NOTHING_FOUND_PHRASES)
    ]
    assert not contradictions
