"""Hybrid memory, conversation and knowledge search, with the numbers behind each hit.

All call the SQL functions in supabase/migrations (match_memories_hybrid,
match_conversation_turns_hybrid, match_knowledge) so the app, the agent, the
benchmark and the eval CLI rank exactly the same way.
"""

from __future__ import annotations

import time
import unicodedata
import uuid
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any, Literal

from core import embeddings
from core.config import get_settings
from core.date_window import DateWindow
from core.db import Scope, transaction, vector_literal
from core.errors import EmbeddingUnavailable, InvalidInput
from core.text import clean_choice, clean_float, clean_int, clean_text

MAX_QUERY_LENGTH = 1000
_LEFT_OUT = " … "  # where query_from_message leaves out the middle of a long message
SearchMode = Literal["hybrid", "vector", "text"]

# Cosine distance above which a hit found only by the vector branch is noise for all-MiniLM-L6-v2: the
# vector branch always returns the nearest rows, however far ("pizza recipe" finds "My dog is called
# Pretzel" at 0.83). The agent leaves such hits out of its context and the pages show them apart.
# Checked on the dev splits by `python -m bench.search_relevance` (docs/RETRIEVAL.md).
RELEVANT_MAX_DISTANCE = 0.75
MatchKind = Literal["words and meaning", "words", "meaning", "nearest only"]


def is_relevant(text_rank: int | None, vector_distance: float | None, rrf_score: float | None = None) -> bool:
    """Whether a hit (a memory, a past turn, a document) matches its search: the one rule, for the agent's
    context and for the pages. It matched on text, or it is close in vector space; and the fusion gave it a
    score (a branch weighted 0 contributes nothing, so a hit only that branch found scores 0)."""
    if rrf_score is not None and rrf_score <= 0:
        return False
    return text_rank is not None or (vector_distance is not None and vector_distance <= RELEVANT_MAX_DISTANCE)


def match_kind(hit: dict[str, Any]) -> MatchKind:
    """How a hit (as_dict() of any hit, or a retrieval event's hit) matches its search: shared words,
    closeness in meaning (the distance `is_relevant` allows), both, or neither: then it is listed only
    because the vector branch always returns the nearest rows there are."""
    distance = hit.get("vector_distance", hit.get("distance"))
    words = hit.get("text_rank") is not None
    meaning = distance is not None and distance <= RELEVANT_MAX_DISTANCE
    if words and meaning:
        return "words and meaning"
    return "words" if words else "meaning" if meaning else "nearest only"


def query_from_message(text: str) -> str:
    """What the agent searches with for a message (a chat message may be 2,000 characters, a query 1,000):
    the message itself when it fits, else its beginning and its end, cut at spaces, with the middle left out.

    The beginning says what a long message is about or asks for ("search my memories for ..."), and the end
    holds the question that follows a pasted text ("... what does this error mean?"); the middle is what a
    search misses least. About 1,000 characters is also about all the embedding model reads (256 word
    pieces). Searches someone types on a page are not cut: there a query too long is refused, and says so."""
    if not isinstance(text, str):
        return text  # the search's own checks say what is wrong with it
    text = unicodedata.normalize("NFC", text).strip()  # the length the search checks is the normalized one
    if len(text) <= MAX_QUERY_LENGTH:
        return text
    half = (MAX_QUERY_LENGTH - len(_LEFT_OUT)) // 2
    head, tail = text[:half], text[-half:]
    space = head.rfind(" ", half // 2)  # whole words, when a space is near enough to the cut
    head = head[:space] if space > 0 else head
    space = tail.find(" ", 0, half // 2)
    tail = tail[space + 1 :] if space >= 0 else tail
    return f"{head.rstrip()}{_LEFT_OUT}{tail.lstrip()}"


@dataclass(frozen=True)
class RrfParams:
    vector_weight: float = 0.5
    text_weight: float = 0.5
    k: int = 2

    @classmethod
    def from_settings(cls) -> RrfParams:
        s = get_settings()
        return cls(s.rrf_vector_weight, s.rrf_text_weight, s.rrf_k)

    @classmethod
    def knowledge_from_settings(cls) -> RrfParams:
        s = get_settings()
        return cls(s.knowledge_rrf_vector_weight, s.knowledge_rrf_text_weight, s.knowledge_rrf_k)

    def validated(self) -> RrfParams:
        vector_weight = clean_float(self.vector_weight, what="RRF vector weight", minimum=0, maximum=10)
        text_weight = clean_float(self.text_weight, what="RRF text weight", minimum=0, maximum=10)
        if vector_weight == 0 and text_weight == 0:
            raise InvalidInput("At least one RRF weight must be above 0.")
        k = clean_int(self.k, what="RRF k", minimum=1, maximum=10_000)
        return RrfParams(vector_weight, text_weight, k)


@dataclass(frozen=True)
class MemoryHit:
    id: uuid.UUID
    memory_type: str
    content: str
    session_id: str | None
    updated_at: datetime
    vector_rank: int | None
    vector_distance: float | None
    text_rank: int | None
    text_score: float | None
    vector_rrf: float
    text_rrf: float
    rrf_score: float

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["id"] = str(self.id)
        data["updated_at"] = self.updated_at.isoformat()
        return data


@dataclass(frozen=True)
class MemorySearch:
    query: str
    hits: list[MemoryHit]
    mode: SearchMode
    params: RrfParams
    latency_ms: float
    embed_ms: float
    degraded_reason: str | None = None  # set when the vector branch could not run

    @property
    def degraded(self) -> bool:
        return self.degraded_reason is not None

    def as_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "params": asdict(self.params),
            "latency_ms": round(self.latency_ms, 2),
            "embed_ms": round(self.embed_ms, 2),
            "degraded_reason": self.degraded_reason,
            "hits": [hit.as_dict() for hit in self.hits],
        }


@dataclass(frozen=True)
class KnowledgeHit:
    id: int
    title: str
    content: str
    category: str
    distance: float
    similarity: float
    rank: int  # position in the fused order
    vector_rank: int | None = None
    text_rank: int | None = None
    text_score: float | None = None
    vector_rrf: float = 0.0
    text_rrf: float = 0.0
    rrf_score: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class KnowledgeSearch:
    query: str
    hits: list[KnowledgeHit]
    latency_ms: float
    embed_ms: float
    params: RrfParams | None = None  # the fusion it ran with

    def as_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "params": asdict(self.params) if self.params else None,
            "latency_ms": round(self.latency_ms, 2),
            "embed_ms": round(self.embed_ms, 2),
            "hits": [hit.as_dict() for hit in self.hits],
        }


def _clean_limit(limit: int, maximum: int) -> int:
    return clean_int(limit, what="number of results", minimum=1, maximum=maximum)


def search_memories(
    scope: Scope,
    query: str,
    *,
    limit: int = 10,
    params: RrfParams | None = None,
    mode: SearchMode = "hybrid",
    text_match: Literal["any", "all"] = "any",
    embed=embeddings.embed_one,
    conninfo: str | None = None,
) -> MemorySearch:
    """Hybrid (vector + full-text, fused by RRF) search over the scope's memories.

    If the query cannot be embedded, the search still runs on the text branch
    and the result says why (`degraded_reason`).
    """
    query = clean_text(query, what="search query", max_length=MAX_QUERY_LENGTH)
    limit = _clean_limit(limit, 200)
    if params is not None and not isinstance(params, RrfParams):
        raise InvalidInput("The RRF parameters must be an RrfParams.")
    params = (params or RrfParams.from_settings()).validated()
    mode = clean_choice(mode, what="search mode", choices=("hybrid", "vector", "text"))
    text_match = clean_choice(text_match, what="text match", choices=("any", "all"))
    started = time.perf_counter()
    degraded_reason = None
    vector = None
    if mode in ("hybrid", "vector"):
        try:
            vector = vector_literal(embed(query))
        except EmbeddingUnavailable as exc:
            degraded_reason = f"Vector search is unavailable ({exc}); showing text matches only."
    embed_ms = (time.perf_counter() - started) * 1000
    if mode == "vector" and vector is None:
        effective_mode: SearchMode = "text"
    elif mode == "hybrid" and vector is None:
        effective_mode = "text"
    else:
        effective_mode = mode
    # A branch left out of the mode gets weight 0 and no input: it cannot contribute.
    vector_weight = params.vector_weight if effective_mode in ("hybrid", "vector") else 0.0
    text_weight = params.text_weight if effective_mode in ("hybrid", "text") else 0.0
    if effective_mode == "text" and text_weight == 0:
        text_weight = 1.0  # text-only fallback must still rank something
    query_text = query if effective_mode in ("hybrid", "text") else None
    with transaction(scope, conninfo=conninfo) as cur:
        cur.execute(
            "select * from public.match_memories_hybrid(%s::extensions.vector, %s, %s, %s, %s, %s, %s, %s)",
            (vector, query_text, scope.user_id, limit, vector_weight, text_weight, params.k, text_match),
        )
        rows = cur.fetchall()
    hits = [MemoryHit(**row) for row in rows]
    return MemorySearch(
        query=query,
        hits=hits,
        mode=effective_mode,
        params=params,
        latency_ms=(time.perf_counter() - started) * 1000,
        embed_ms=embed_ms,
        degraded_reason=degraded_reason,
    )


@dataclass(frozen=True)
class ConversationHit:
    id: int
    session_id: str
    turn_index: int
    speaker: str
    content: str
    created_at: datetime
    vector_rank: int | None
    vector_distance: float | None
    text_rank: int | None
    text_score: float | None
    vector_rrf: float
    text_rrf: float
    rrf_score: float
    # The text weight text_rrf was computed with: the asked one scaled by how much of the query's word
    # weight the best text hit holds (full from half of it); the same on every hit of a search.
    text_weight_used: float | None = None
    # The turn in context (hybrid only): its rank among both branches' candidates by the distance of
    # its embedding + the next turn's to the query, and that ranking's share (half the vector weight).
    context_rank: int | None = None
    context_distance: float | None = None
    context_rrf: float = 0.0
    # The vector weight vector_rrf and context_rrf were computed with: the asked one scaled by how far the
    # best vector hit stands out from the user's turns (full from a z-score of 4); the same on every hit.
    vector_weight_used: float | None = None
    # How many of the search's ranked turns said exactly this (the same speaker, the same words): the copies
    # ranked below it are folded into this hit (search_conversations, fold_repeats).
    repeats: int = 1

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["created_at"] = self.created_at.isoformat()
        return data


def what_was_said(speaker: str, content: str) -> tuple[str, str]:
    """What makes two turns the same thing said: the speaker and the words, case and spacing aside."""
    return speaker, " ".join(content.casefold().split())


def said_alike(hit: ConversationHit) -> tuple[str, str]:
    return what_was_said(hit.speaker, hit.content)


def fold_repeats_of(hits: list[ConversationHit], limit: int) -> list[ConversationHit]:
    """The first `limit` distinct things said, each at its best-ranked copy, with how many copies it has.
    The agent's stock replies ("Thanks for telling me, I'll remember that.") and greetings come back word
    for word in every session; unfolded, five copies of one took a recall's five places."""
    kept: dict[tuple[str, str], ConversationHit] = {}
    for hit in hits:
        key = said_alike(hit)
        if key in kept:
            kept[key] = replace(kept[key], repeats=kept[key].repeats + 1)
        elif len(kept) < limit:
            kept[key] = hit
    return list(kept.values())


@dataclass(frozen=True)
class ConversationSearch:
    query: str
    hits: list[ConversationHit]
    mode: SearchMode
    params: RrfParams
    latency_ms: float
    embed_ms: float
    degraded_reason: str | None = None
    window: DateWindow | None = None  # only turns said on these days were searched

    @property
    def degraded(self) -> bool:
        return self.degraded_reason is not None

    def as_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "params": asdict(self.params),
            "latency_ms": round(self.latency_ms, 2),
            "embed_ms": round(self.embed_ms, 2),
            "degraded_reason": self.degraded_reason,
            "window": None if self.window is None else self.window.describe(),
            "hits": [hit.as_dict() for hit in self.hits],
        }


def _branches(mode: SearchMode, query: str, params: RrfParams, embed):
    """Embed the query for the modes that need it; return (vector, effective mode, weights, text, reason).

    A branch left out of the mode gets weight 0 and no input, so it cannot contribute.
    """
    if mode not in ("hybrid", "vector", "text"):
        raise InvalidInput(f"Unknown search mode {mode!r}.")
    degraded_reason = None
    vector = None
    if mode in ("hybrid", "vector"):
        try:
            vector = vector_literal(embed(query))
        except EmbeddingUnavailable as exc:
            degraded_reason = f"Vector search is unavailable ({exc}); showing text matches only."
    effective_mode: SearchMode = "text" if vector is None else mode
    vector_weight = params.vector_weight if effective_mode in ("hybrid", "vector") else 0.0
    text_weight = params.text_weight if effective_mode in ("hybrid", "text") else 0.0
    if effective_mode == "text" and text_weight == 0:
        text_weight = 1.0  # text-only fallback must still rank something
    query_text = query if effective_mode in ("hybrid", "text") else None
    return vector, effective_mode, vector_weight, text_weight, query_text, degraded_reason


def search_conversations(
    scope: Scope,
    query: str,
    *,
    limit: int = 10,
    params: RrfParams | None = None,
    mode: SearchMode = "hybrid",
    text_match: Literal["any", "all"] = "any",
    candidates: int | None = None,
    exclude_session_id: str | None = None,
    window: DateWindow | None = None,
    fold_repeats: bool = True,
    embed=embeddings.embed_one,
    conninfo: str | None = None,
) -> ConversationSearch:
    """Hybrid search over the scope's past conversation turns.

    `candidates` is how deep each branch ranks before fusion (default 4 * limit).
    `fold_repeats`: a turn that says word for word what a better-ranked hit says is folded into it (the
    hit's `repeats`), so `limit` distinct things said come back; off, every copy is a hit of its own (a
    search of transcripts, where each copy is a place to go).
    `window` keeps both branches to the turns said on its days (of its calendar: the user's time zone).
    If the query cannot be embedded, the search still runs on the text branch
    and says why.
    """
    query = clean_text(query, what="search query", max_length=MAX_QUERY_LENGTH)
    limit = _clean_limit(limit, 200)
    params = (params or RrfParams.from_settings()).validated()
    if candidates is not None:
        candidates = max(_clean_limit(candidates, 1000), limit)
    # Folding reads more fused rows than it returns; the branches stay as deep as `limit` asks.
    rows = min(200, limit * 4) if fold_repeats else limit
    if fold_repeats and candidates is None:
        candidates = limit * 4
    if exclude_session_id is not None:
        exclude_session_id = clean_text(exclude_session_id, what="session id", max_length=200)
    started = time.perf_counter()
    vector, effective_mode, vector_weight, text_weight, query_text, degraded_reason = _branches(
        mode, query, params, embed
    )
    embed_ms = (time.perf_counter() - started) * 1000
    with transaction(scope, conninfo=conninfo) as cur:
        cur.execute(
            "select * from public.match_conversation_turns_hybrid("
            "%s::extensions.vector, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                vector,
                query_text,
                scope.user_id,
                rows,
                vector_weight,
                text_weight,
                params.k,
                text_match,
                candidates,
                exclude_session_id,
                *(window.bounds() if window else (None, None)),
            ),
        )
        hits = [ConversationHit(**row) for row in cur.fetchall()]
    if fold_repeats:
        hits = fold_repeats_of(hits, limit)
    return ConversationSearch(
        query=query,
        hits=hits,
        mode=effective_mode,
        params=params,
        latency_ms=(time.perf_counter() - started) * 1000,
        embed_ms=embed_ms,
        degraded_reason=degraded_reason,
        window=window,
    )


def search_knowledge(
    scope: Scope,
    query: str,
    *,
    limit: int = 5,
    category: str | None = None,
    params: RrfParams | None = None,
    embed=embeddings.embed_one,
) -> KnowledgeSearch:
    """Hybrid search of the shared knowledge base (public.match_knowledge_hybrid): the
    embedding finds what a question means, the text branch finds the codes, names and
    numbers in it ("E03", "Kestrel Grinder")."""
    query = clean_text(query, what="search query", max_length=MAX_QUERY_LENGTH)
    limit = _clean_limit(limit, 100)
    if category is not None:
        category = clean_text(category, what="category", max_length=64)
    params = (params or RrfParams.knowledge_from_settings()).validated()
    started = time.perf_counter()
    vector = vector_literal(embed(query))
    embed_ms = (time.perf_counter() - started) * 1000
    with transaction(scope) as cur:
        cur.execute(
            "select * from public.match_knowledge_hybrid(%s::extensions.vector, %s, %s, %s, %s, %s, %s)",
            (vector, query, limit, category, params.vector_weight, params.text_weight, params.k),
        )
        hits = [KnowledgeHit(**row) for row in cur.fetchall()]
    return KnowledgeSearch(
        query=query, hits=hits, latency_ms=(time.perf_counter() - started) * 1000, embed_ms=embed_ms, params=params
    )
