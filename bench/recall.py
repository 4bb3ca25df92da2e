"""The agent's per-turn recall step: before each reply it hybrid-searches the
user's memories with the user's words (embedding the text + one SQL call).
Measured through PlaygroundAgent.recall itself, on a user with a realistic
number of memories, with the queries people say to the agent."""

from __future__ import annotations

import asyncio
from typing import Any

from agent import EventBus, PlaygroundAgent
from core import identity, memories
from core.db import Scope, admin_connection

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
        bus = EventBus("bench-recall")
        agent = PlaygroundAgent(verified.user_id, bus=bus, greet=False)
        for query in QUERIES[:5]:  # warm-up: model, pool, plan cache
            await agent.recall(query)
        start = len(bus.events)
        for _ in range(repeats):
            for query in QUERIES:
                await agent.recall(query)
        # one event per tier; each carries the whole recall's wall time, so count the slots' events
        measured = [e for e in bus.events[start:] if e["type"] == "retrieval" and e["tier"] == "slots"]
        return {
            "memories": len(MEMORIES),
            "queries": len(measured),
            "total_ms": [e["latency_ms"] for e in measured],
            "embed_ms": [e.get("embed_ms") for e in measured if e.get("embed_ms") is not None],
            "search_ms": [e.get("search_ms") for e in measured if e.get("search_ms") is not None],
            "skipped": sum(1 for e in measured if e.get("skipped")),
            "budget_ms": agent.recall_budget_ms,
        }
    finally:
        with admin_connection() as conn:
            conn.execute("delete from auth.users where id = %s", (verified.user_id,))


def run(repeats: int = 10, log=print) -> dict[str, Any]:
    log(f"recall: {repeats} x {len(QUERIES)} per-turn recalls on a user with {len(MEMORIES)} memories…")
    return asyncio.run(_measure(repeats))
