"""The agent's per-turn recall step: before each reply it hybrid-searches the
user's memories and past turns with the user's words (one embedding, then
both tiers' SQL in parallel threads). Measured through PlaygroundAgent.recall
itself, on a user with a realistic number of memories and a typical history
(one user's sessions from the conversations dev set: 488 turns, about the
typical user of the 1,000,000-turn run), with the queries people say to the agent."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agent import EventBus, PlaygroundAgent
from core import eval_retrieval, identity, memories
from core.db import Scope, admin_connection, database_url

ROOT = Path(__file__).resolve().parent.parent
HISTORY_TURNS = ROOT / "docs" / "eval" / "conversations" / "dev" / "turns.jsonl"
HISTORY_USER = "c13"  # 488 turns in 21 sessions

MEMORIES = {
    "favorite_color": "teal",
    "home_city": "Denver",
    "allergies": "nuts and shellfish",
    "favorite_drink": "oat milk flat white",
    "employer": "Acme Robotics",
    "job": "mechanical engineer",
    "pet": "a beagle called Biscuit",
    "car": "a blue Volvo XC40",
    "birthday": "March 3rd",
    "diet": "vegetarian",
    "machine_owned": "Kestrel Duo espresso machine",
    "partner_name": "Jordan",
    "favorite_food": "mushroom risotto",
    "gym": "climbing gym on Tuesdays",
    "timezone_note": "Mountain time",
    "kids": "two daughters, Ava and Mia",
    "hometown": "Boise",
    "favorite_band": "Khruangbin",
    "coffee_grind": "medium fine for the AeroPress",
    "wifi_name": "Biscuit-Net",
    "sport": "trail running",
    "favorite_book": "The Left Hand of Darkness",
    "anniversary": "June 14th",
    "shoe_size": "US 10",
    "usual_order": "two bags of Morning Ridge every month",
}
QUERIES = [
    "what is my favorite color",
    "where do I live",
    "am I allergic to anything",
    "what do I usually drink",
    "where do I work",
    "what's my dog's name",
    "what car do I drive",
    "when is my birthday",
    "do I eat meat",
    "which espresso machine do I have",
    "who is my partner",
    "what should I eat tonight",
    "where is order 1001",
    "how long does shipping take",
    "my favorite color is teal",
    "remember that I run trails",
    "what grind do I use",
    "how many kids do I have",
    "what's the wifi called",
    "when is our anniversary",
]


async def _measure(repeats: int) -> dict[str, Any]:
    verified = identity.verify(identity.sign_in_anonymously().access_token)
    scope = Scope.service(verified.user_id)
    try:
        for slot, content in MEMORIES.items():
            await asyncio.to_thread(memories.remember, scope, slot, content)
        history = [t for t in eval_retrieval.load_turns(HISTORY_TURNS) if t.user == HISTORY_USER]
        vectors = eval_retrieval.embed_turns(history)
        eval_retrieval.insert_turns(database_url(), history, vectors, {HISTORY_USER: verified.user_id})
        bus = EventBus("bench-recall")
        agent = PlaygroundAgent(verified.user_id, bus=bus, greet=False)
        for query in QUERIES[:5]:  # warm-up: model, pool, plan cache
            await agent.recall(query)
        start = len(bus.events)
        for _ in range(repeats):
            for query in QUERIES:
                await agent.recall(query)
        # one event per tier; each carries the whole recall's wall time, so count the slots' events for it
        retrievals = [e for e in bus.events[start:] if e["type"] == "retrieval"]
        measured = [e for e in retrievals if e["tier"] == "slots"]
        turns = [e for e in retrievals if e["tier"] == "conversations"]
        return {
            "memories": len(MEMORIES),
            "history_turns": len(history),
            "queries": len(measured),
            "total_ms": [e["latency_ms"] for e in measured],
            "embed_ms": [e.get("embed_ms") for e in measured if e.get("embed_ms") is not None],
            "search_ms": [e.get("search_ms") for e in measured if e.get("search_ms") is not None],
            # the two tiers share one embedding: a past-turn search's SQL is its time less the embedding's
            "turn_sql_ms": [
                e["search_ms"] - e["embed_ms"] for e in turns if e.get("search_ms") is not None and "embed_ms" in e
            ],
            "skipped": sum(1 for e in retrievals if e.get("skipped")),
            "budget_ms": agent.recall_budget_ms,
        }
    finally:
        with admin_connection() as conn:
            conn.execute("delete from auth.users where id = %s", (verified.user_id,))


def run(repeats: int = 10, log=print) -> dict[str, Any]:
    log(f"recall: {repeats} x {len(QUERIES)} per-turn recalls on a user with {len(MEMORIES)} memories…")
    return asyncio.run(_measure(repeats))
