"""What each tool hands back to the model: core's result as a small JSON-able dict.

The model reads these (the offline brain's replies too, agent/brain/replies.py), so they keep only what
an answer needs: no ids, no embeddings, scores rounded. Every search hit says how it matches
(core.retrieval.match_kind): a model cannot tell from a cosine distance of 0.83 that the hit is only the
nearest row there is, not an answer.
"""

from __future__ import annotations

from datetime import UTC, tzinfo
from typing import Any

from core.conversations import ConversationTurn, HeldConversation
from core.date_window import DateWindow, day_of
from core.memories import Forgotten, Memory, Remembered
from core.orders import Order
from core.profiles import Profile
from core.retrieval import ConversationSearch, KnowledgeSearch, MemorySearch, match_kind


def knowledge_found(search: KnowledgeSearch) -> dict[str, Any]:
    return {
        "query": search.query,
        "hits": [
            {
                "title": h.title,
                "category": h.category,
                "similarity": round(h.similarity, 4),
                # how distinctive the shared words are (IDF sum; None: no word shared)
                "text_score": None if h.text_score is None else round(h.text_score, 2),
                "match": match_kind(h.as_dict()),
                "content": h.content,
            }
            for h in search.hits
        ],
    }


def remembered(result: Remembered) -> dict[str, Any]:
    return {
        "memory_type": result.memory.memory_type,
        "content": result.memory.content,
        "created": result.created,
        "previous_content": result.previous_content,
    }


def recalled(memory: Memory) -> dict[str, Any]:
    return {"memory_type": memory.memory_type, "content": memory.content, "updated_at": memory.updated_at.isoformat()}


def forgotten(result: Forgotten) -> dict[str, Any]:
    return {
        "memory_type": result.memory.memory_type,
        "forgotten": result.memory.content,
        "past_mentions_removed": result.mentions_removed,
    }


def memories_found(search: MemorySearch) -> dict[str, Any]:
    return {
        "query": search.query,
        "mode": search.mode,
        "degraded_reason": search.degraded_reason,
        "hits": [
            {
                "memory_type": h.memory_type,
                "content": h.content,
                "rrf_score": round(h.rrf_score, 6),
                "vector_rank": h.vector_rank,
                "text_rank": h.text_rank,
                "vector_distance": None if h.vector_distance is None else round(h.vector_distance, 4),
                "match": match_kind(h.as_dict()),
            }
            for h in search.hits
        ],
    }


def conversations_found(search: ConversationSearch, zone: tzinfo = UTC) -> dict[str, Any]:
    """The hits with the day each was said in `zone`, the user's calendar (the one the tool's dates are in)."""
    window: dict[str, Any] = {}
    if search.window is not None:
        window["searched_dates"] = search.window.describe()
        if not search.hits:
            window["note"] = "Nothing was said on those dates; search again without from_date and to_date."
    return {
        "query": search.query,
        "mode": search.mode,
        "degraded_reason": search.degraded_reason,
        **window,
        "hits": [
            {
                "date": day_of(h.created_at, zone).isoformat(),
                "speaker": h.speaker,
                "content": h.content,
                "rrf_score": round(h.rrf_score, 6),
                "vector_rank": h.vector_rank,
                "text_rank": h.text_rank,
                "vector_distance": None if h.vector_distance is None else round(h.vector_distance, 4),
                "match": match_kind(h.as_dict()),
                **({"times_said": h.repeats} if h.repeats > 1 else {}),  # its copies, folded into this hit
            }
            for h in search.hits
        ],
    }


# what the model reads of the last conversation: enough to say what it was about, not a whole transcript
LAST_CONVERSATION_TURNS = 24
LAST_CONVERSATION_CHARACTERS = 240


def _lines(turns: list[ConversationTurn]) -> list[dict[str, str]]:
    return [
        {
            "speaker": t.speaker,
            "content": t.content
            if len(t.content) <= LAST_CONVERSATION_CHARACTERS
            else t.content[: LAST_CONVERSATION_CHARACTERS - 1] + "…",
        }
        for t in turns
    ]


def last_conversation(turns: list[ConversationTurn], zone: tzinfo = UTC) -> dict[str, Any]:
    if not turns:
        return {"found": False, "turns": []}
    shown = turns[:LAST_CONVERSATION_TURNS]
    return {
        "found": True,
        "date": day_of(turns[0].created_at, zone).isoformat(),
        "turns": _lines(shown),
        "more_turns": len(turns) - len(shown),
    }


def conversations_held(
    held: list[HeldConversation], count: int, *, window: DateWindow, zone: tzinfo = UTC
) -> dict[str, Any]:
    """recall_conversations: the conversations of the days asked for, oldest first, each dated (the user's
    day and start time) with its first turns; how many more there were, and more turns of each."""
    return {
        "found": bool(held),
        "dates": window.describe(),
        "conversations": [
            {
                "date": day_of(c.turns[0].created_at, zone).isoformat(),
                "started": c.turns[0].created_at.astimezone(zone).strftime("%H:%M"),
                "turns": _lines(c.turns),
                "more_turns": c.turn_count - len(c.turns),
            }
            for c in held
        ],
        "more_conversations": count - len(held),
    }


def listed(found: list[Memory]) -> dict[str, Any]:
    return {"count": len(found), "memories": [recalled(memory) for memory in found]}


def profile_updated(field: str, value: str, profile: Profile) -> dict[str, Any]:
    return {
        "field": field.strip().lower().replace(" ", "_"),
        "value": value,
        "profile": {
            "name": profile.name,
            "email": profile.email,
            "preferred_language": profile.preferred_language,
            "timezone": profile.timezone,
            "preferences": profile.preferences,
        },
    }


def order_found(order: Order) -> dict[str, Any]:
    return {"order": order.as_dict(), "summary": order.summary()}
