"""Per-turn recall: before each reply, a hybrid search of both memory tiers with the user's words.

* **slots** (``memories``): what the agent decided to keep about the user;
* **conversations** (``conversation_turns``): what was said in the user's
  earlier sessions (this session is left out: it is in the context already).

Both searches run at once, sharing one query embedding, within one time
budget: a search that is slower is skipped for this turn (its ``retrieval``
event says so) and the turn goes on with what the other found. A voice turn's
searches may start before the turn ends (``start_searches`` with the
recognizer's speculative transcript): the turn then waits only for what is
left of them. The best
relevant hits of each tier go in front of the user's message (agent/chat_format.py
puts them there, in ``<recall>`` tags): slots first, then past turns with
their date, as many as fit in the token budget.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass
from datetime import UTC, tzinfo

import numpy as np

from agent import events
from agent.event_bus import EventBus
from agent.prompts import PAST_TURNS_LEAD, RECALL_LEAD
from core import embeddings, retrieval
from core.date_window import day_of
from core.db import Scope
from core.errors import PlaygroundError
from core.retrieval import ConversationHit, MemoryHit, RrfParams, is_relevant, query_from_message

log = logging.getLogger(__name__)

# A past turn is quoted up to this many characters in the recall block.
TURN_QUOTE_CHARS = 280


def estimate_tokens(text: str) -> int:
    """Roughly how many tokens `text` costs a model (about four characters per token in English)."""
    return len(text) // 4 + 1


def slot_line(hit: MemoryHit) -> str:
    return f"- {hit.memory_type}: {hit.content}"


def turn_line(hit: ConversationHit, zone: tzinfo = UTC) -> str:
    """'- 2026-11-29, user: …', the day in `zone`, the user's calendar."""
    said = hit.content if len(hit.content) <= TURN_QUOTE_CHARS else hit.content[: TURN_QUOTE_CHARS - 1] + "…"
    return f"- {day_of(hit.created_at, zone).isoformat()}, {hit.speaker}: {said}"


@dataclass(frozen=True)
class Injection:
    """What one recall puts in front of the user's message: the hits of each tier that fit the budget."""

    slots: list[MemoryHit]
    turns: list[ConversationHit]
    zone: tzinfo = UTC  # the calendar of the turns' dates

    @property
    def text(self) -> str | None:
        if not self.slots and not self.turns:
            return None
        lines = [RECALL_LEAD, *(slot_line(hit) for hit in self.slots)]
        if self.turns:
            lines += [PAST_TURNS_LEAD, *(turn_line(hit, self.zone) for hit in self.turns)]
        return "\n".join(lines)


def choose(
    slots: list[MemoryHit],
    turns: list[ConversationHit],
    *,
    inject: int,
    inject_turns: int,
    token_budget: int,
    zone: tzinfo = UTC,
) -> Injection:
    """The relevant hits, best first, slots before past turns, within `token_budget` tokens (the headers
    included); a hit that does not fit is left out and smaller ones after it may still go in."""
    used = estimate_tokens(RECALL_LEAD)
    chosen_slots: list[MemoryHit] = []
    for hit in [h for h in slots if is_relevant(h.text_rank, h.vector_distance, h.rrf_score)][:inject]:
        cost = estimate_tokens(slot_line(hit))
        if used + cost <= token_budget:
            chosen_slots.append(hit)
            used += cost
    chosen_turns: list[ConversationHit] = []
    used += estimate_tokens(PAST_TURNS_LEAD)
    for hit in [h for h in turns if is_relevant(h.text_rank, h.vector_distance, h.rrf_score)][:inject_turns]:
        cost = estimate_tokens(turn_line(hit, zone))
        if used + cost <= token_budget:
            chosen_turns.append(hit)
            used += cost
    return Injection(chosen_slots, chosen_turns, zone)


class _SharedEmbedding:
    """Embeds the query once for both searches (the second caller waits for the first)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._vector: np.ndarray | None = None

    def __call__(self, text: str) -> np.ndarray:
        with self._lock:
            if self._vector is None:
                self._vector = embeddings.embed_one(text)
            return self._vector


@dataclass
class Searches:
    """Both tiers' searches for one text, under way (on the running loop)."""

    text: str
    params: RrfParams
    started: float  # time.perf_counter() when they started
    slots: asyncio.Future
    conversations: asyncio.Future

    def serves(self, text: str, params: RrfParams) -> bool:
        """Whether these searches answer a recall of `text` with `params`."""
        return self.text == text and self.params == params

    def abandon(self) -> None:
        """Not needed after all: they finish in the background (a thread cannot be stopped), quietly."""
        for work in (self.slots, self.conversations):
            work.add_done_callback(lambda f: f.cancelled() or f.exception())


def start_searches(
    scope: Scope, text: str, *, params: RrfParams, limit: int, session_id: str | None = None
) -> Searches | None:
    """Start both tiers' searches for `text` (None when there is nothing to search for)."""
    query = query_from_message(text)
    if not query.strip():
        return None
    embed = _SharedEmbedding()
    slot_work = asyncio.ensure_future(
        asyncio.to_thread(retrieval.search_memories, scope, query, limit=limit, params=params, embed=embed)
    )
    turn_work = asyncio.ensure_future(
        asyncio.to_thread(
            retrieval.search_conversations,
            scope,
            query,
            limit=limit,
            params=params,
            exclude_session_id=session_id,
            embed=embed,
        )
    )
    return Searches(text, params, time.perf_counter(), slot_work, turn_work)


async def recall(
    scope: Scope,
    text: str,
    *,
    params: RrfParams,
    bus: EventBus,
    budget_ms: float,
    limit: int,
    inject: int,
    session_id: str | None = None,
    inject_turns: int = 3,
    token_budget: int = 400,
    started_searches: Searches | None = None,
    zone: tzinfo = UTC,
) -> str | None:
    """Search both tiers of `scope`'s user with `text` within `budget_ms`; publish one ``retrieval`` event per
    tier (slots first) and ``recall_ms``; return the recall text, or None when nothing relevant fits.
    `session_id` is the current session, left out of the conversation search. `started_searches`, when they
    are for this `text`, are used instead of new ones (the budget counts from their start); ``recall_ms`` is
    what the turn waited, each event's ``latency_ms`` what its searches took. Past turns are dated in
    `zone`, the user's calendar."""
    waited_from = time.perf_counter()
    if started_searches is not None and started_searches.serves(text, params):
        searches = started_searches
    else:
        if started_searches is not None:
            started_searches.abandon()
        searches = start_searches(scope, text, params=params, limit=limit, session_id=session_id)
    if searches is None:
        for tier in ("slots", "conversations"):
            bus.emit(events.skipped_recall(text, params, reason="nothing to search for", latency_ms=0.0, tier=tier))
        return None
    slot_work, turn_work = searches.slots, searches.conversations
    left = budget_ms / 1000 - (time.perf_counter() - searches.started)
    await asyncio.wait({slot_work, turn_work}, timeout=max(0.0, left))
    took = (time.perf_counter() - searches.started) * 1000
    found: dict[str, object] = {}
    for tier, work in (("slots", slot_work), ("conversations", turn_work)):
        if not work.done():
            work.add_done_callback(lambda f: f.cancelled() or f.exception())  # finish quietly in the background
            reason = f"over the {budget_ms:.0f} ms budget"
        elif isinstance(work.exception(), PlaygroundError):
            reason = str(work.exception())
            log.warning("per-turn recall of %s failed: %s", tier, reason)
        elif work.exception() is not None:
            raise work.exception()  # a bug, not an outage: let the turn's error handling report it
        else:
            found[tier] = work.result()
            continue
        found[tier] = reason
    slot_search = found["slots"] if not isinstance(found["slots"], str) else None
    turn_search = found["conversations"] if not isinstance(found["conversations"], str) else None
    injection = choose(
        slot_search.hits if slot_search else [],
        turn_search.hits if turn_search else [],
        inject=inject,
        inject_turns=inject_turns,
        token_budget=token_budget,
        zone=zone,
    )
    if slot_search is None:
        bus.emit(events.skipped_recall(text, params, reason=found["slots"], latency_ms=took, tier="slots"))
    else:
        bus.emit(
            events.memory_search_retrieval(
                slot_search, trigger=events.RECALL_TRIGGER, query=text, latency_ms=took, injected=injection.slots
            )
        )
    if turn_search is None:
        bus.emit(
            events.skipped_recall(text, params, reason=found["conversations"], latency_ms=took, tier="conversations")
        )
    else:
        bus.emit(
            events.conversation_search_retrieval(
                turn_search,
                trigger=events.RECALL_TRIGGER,
                query=text,
                latency_ms=took,
                injected=injection.turns,
                zone=zone,
            )
        )
    bus.metric("recall_ms", (time.perf_counter() - waited_from) * 1000)
    return injection.text
