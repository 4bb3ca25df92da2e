"""Per-turn recall: before each reply, a hybrid search of the user's memories with their words.

The top relevant hits go in front of the user's message (agent/chat_format.py
puts them there, in ``<recall>`` tags). The search has a time budget: when it
is slower, the turn goes on without it and the ``retrieval`` event says so.
"""

from __future__ import annotations

import asyncio
import logging
import time

from agent import events
from agent.event_bus import EventBus
from agent.prompts import RECALL_LEAD
from core import retrieval
from core.db import Scope
from core.errors import PlaygroundError
from core.retrieval import RrfParams

log = logging.getLogger(__name__)

# Cosine distance above which a hit found only by the vector branch is noise for all-MiniLM-L6-v2.
RELEVANT_MAX_DISTANCE = 0.75


def is_relevant(text_rank: int | None, vector_distance: float | None, rrf_score: float | None = None) -> bool:
    """Whether a memory hit is worth showing the model (or, for the offline brain, mentioning): the one rule.
    It matched on text, or it is close in vector space; and the fusion gave it a score (a branch weighted 0
    contributes nothing, so a hit only that branch found scores 0 and is not put into context)."""
    if rrf_score is not None and rrf_score <= 0:
        return False
    return text_rank is not None or (vector_distance is not None and vector_distance <= RELEVANT_MAX_DISTANCE)


def recall_text(hits: list[retrieval.MemoryHit]) -> str:
    return "\n".join([RECALL_LEAD, *(f"- {hit.memory_type}: {hit.content}" for hit in hits)])


async def recall(
    scope: Scope, text: str, *, params: RrfParams, bus: EventBus, budget_ms: float, limit: int, inject: int
) -> str | None:
    """Search the memories of `scope`'s user with `text` within `budget_ms`; publish the ``retrieval`` event
    (and ``recall_ms``); return the recall text with the top `inject` relevant hits, or None."""
    started = time.perf_counter()

    def elapsed_ms() -> float:
        return (time.perf_counter() - started) * 1000

    query = text[: retrieval.MAX_QUERY_LENGTH]
    if not query.strip():
        bus.emit(events.skipped_recall(text, params, reason="nothing to search for", latency_ms=0.0))
        return None
    work = asyncio.ensure_future(asyncio.to_thread(retrieval.search_memories, scope, query, limit=limit, params=params))
    try:
        result = await asyncio.wait_for(asyncio.shield(work), timeout=budget_ms / 1000)
    except TimeoutError:
        work.add_done_callback(lambda f: f.cancelled() or f.exception())  # finish quietly in the background
        bus.emit(
            events.skipped_recall(text, params, reason=f"over the {budget_ms:.0f} ms budget", latency_ms=elapsed_ms())
        )
        bus.metric("recall_ms", elapsed_ms())
        return None
    except PlaygroundError as exc:
        log.warning("per-turn recall failed: %s", exc)
        bus.emit(events.skipped_recall(text, params, reason=str(exc), latency_ms=elapsed_ms()))
        return None
    took = elapsed_ms()
    injected = [hit for hit in result.hits if is_relevant(hit.text_rank, hit.vector_distance, hit.rrf_score)][:inject]
    bus.emit(
        events.memory_search_retrieval(
            result, trigger=events.RECALL_TRIGGER, query=text, latency_ms=took, injected=injected
        )
    )
    bus.metric("recall_ms", took)
    return recall_text(injected) if injected else None
