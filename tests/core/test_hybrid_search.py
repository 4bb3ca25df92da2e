"""match_memories_hybrid against an independent computation on the same rows.

The vector branch is recomputed in numpy from the stored embeddings (read back
as pgvector text); the text branch's IDF-weighted scores are recomputed here
from each row's lexemes (ts_rank_cd from a separate query for 'all') and
ranked here; RRF is recomputed here from the ranks.
Candidates per branch = match_count * 4 (match_count clamped to 1..200); a
branch contributes weight / (k + rank) or nothing; the fused order is
(score desc, vector rank nulls last, id).
"""

from __future__ import annotations

import itertools
import json
import math
import uuid
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pytest

from core import db, embeddings, memories
from core.db import Scope, transaction, vector_literal
from core.errors import EmbeddingUnavailable, InvalidInput
from core.retrieval import RrfParams, search_memories
from tests.support.english import english_rarity
from tests.support.users import delete_users, sign_in

FACTS = {
    "favorite_color": "My favourite colour is teal",
    "car": "Drives a blue 2019 Subaru Outback",
    "hometown": "Grew up in Porto, Portugal",
    "job": "Works as a structural engineer at a bridge company",
    "dog": "Has a border collie named Biscuit",
    "coffee_order": "Orders a flat white with oat milk",
    "allergy": "Allergic to peanuts and shellfish",
    "birthday": "Birthday is on the 14th of March",
    "partner": "Married to Sam, who teaches chemistry",
    "sport": "Plays five-a-side football on Thursdays",
    "music": "Listens to jazz, especially Bill Evans",
    "book": "Currently reading The Left Hand of Darkness",
    "diet": "Vegetarian since 2015",
    "language": "Speaks Portuguese, English and some German",
    "vacation": "Planning a hiking trip to the Dolomites in June",
    "phone": "Uses a green Pixel phone",
    "commute": "Cycles to work along the river",
    "kids": "Two children, Maya and Leo",
    "coffee_grinder": "Owns a Baratza Encore coffee grinder",
    "favorite_food": "Loves grilled sardines",
    "timezone_note": "Usually online in the evening, Lisbon time",
    "instrument": "Learning to play the cello",
    "shoe_size": "Wears size 43 shoes",
    "garden": "Grows tomatoes and basil on the balcony",
    "tea": "Drinks green tea in the afternoon",
    "team": "Supports FC Porto",
    "podcast": "Listens to a podcast about the history of bridges",
    "bike": "Rides a steel touring bike with blue mudguards",
    "movie": "Favourite film is Spirited Away",
    "delivery_address": "Deliveries go to the office reception, not home",
}

QUERIES = [
    "what car does the user drive",
    "blue",
    "coffee",
    "what is my favorite color?",
    "does the user have any pets",
    "bridges and engineering",
    "what does Sam do",
    "listens to",
]

PARAMS = [  # (match_count, vector_weight, text_weight, k)
    (10, 0.7, 0.3, 60),
    (5, 0.7, 0.3, 60),
    (3, 1.0, 1.0, 1),
    (2, 0.2, 2.0, 10),
    (50, 0.5, 0.5, 5000),
    (1, 1.0, 0.0, 60),
    (7, 0.0, 1.0, 60),
]


@dataclass(frozen=True)
class Expected:
    id: uuid.UUID
    vector_rank: int | None
    vector_distance: float | None
    text_rank: int | None
    text_score: float | None
    vector_rrf: float
    text_rrf: float
    rrf_score: float


@pytest.fixture(scope="module")
def corpus(database_uri):
    """One user with 30 memories (plus exact-tie twins), and two other users with overlapping text."""
    owner = sign_in()
    for slot, content in FACTS.items():
        memories.remember(owner.scope, slot, content)
    with db.admin_connection() as conn:
        # Twins of "car": identical embedding (a three-way tie in the vector branch, broken by id)
        # and identical content (a tie in the text branch too).
        conn.execute(
            "insert into public.memories (user_id, memory_type, content, embedding) "
            "select user_id, slot, content, embedding from public.memories, unnest(array['twin_a', 'twin_b']) slot "
            "where user_id = %s and memory_type = 'car'",
            (owner.user_id,),
        )
    others = [sign_in(), sign_in()]
    for other in others:
        for slot, content in list(FACTS.items())[:12]:  # the same words: text matches a filter must drop
            memories.remember(other.scope, slot, content + " too")
    yield SimpleNamespace(owner=owner, others=others)
    delete_users([owner.user_id, *(o.user_id for o in others)])


def stored_embeddings(user_id) -> dict[uuid.UUID, np.ndarray]:
    with db.admin_connection() as conn:
        rows = conn.execute("select id, embedding::text from public.memories where user_id = %s", (user_id,)).fetchall()
    return {row[0]: np.asarray(json.loads(row[1]), dtype=np.float64) for row in rows}


def text_scores(user_id, query_text: str | None, text_match: str) -> dict[uuid.UUID, float]:
    """The text branch's score of each of the user's rows that matches the query, computed here.

    'any': the query's lexemes (to_tsvector's), each weighted by its English rarity (from
    public.english_word_rarity, the table's rarest for a word not in it) plus its IDF over the
    user's memories, ln(1 + (N - df + 0.5) / (df + 0.5)); the 8 heaviest kept; a row scores the
    sum of the weights of the lexemes it contains. 'all': websearch_to_tsquery's AND ranked by
    ts_rank_cd."""
    if not query_text or not query_text.strip():
        return {}
    with db.admin_connection() as conn:
        if text_match == "all":
            rows = conn.execute(
                "select id, ts_rank_cd(fts, q)::float8 from public.memories, "
                "(select websearch_to_tsquery('english', %s) as q) as tq where user_id = %s and fts @@ q",
                (query_text, user_id),
            ).fetchall()
            return dict(rows)
        lexemes = set(conn.execute("select tsvector_to_array(to_tsvector('english', %s))", (query_text,)).fetchone()[0])
        rows = conn.execute(
            "select id, tsvector_to_array(fts) from public.memories where user_id = %s", (user_id,)
        ).fetchall()
        rarity = english_rarity(conn, lexemes)
    documents = {row_id: set(words) for row_id, words in rows}
    n = len(documents)
    df = {x: sum(1 for words in documents.values() if x in words) for x in lexemes}
    idf = {x: rarity[x] + math.log(1 + (n - c + 0.5) / (c + 0.5)) for x, c in df.items() if c > 0}
    kept = sorted(idf, key=lambda x: (-idf[x], x))[:8]
    scores = {}
    for row_id, words in documents.items():
        matched = [idf[x] for x in kept if x in words]
        if matched:
            scores[row_id] = sum(matched)
    return scores


def cosine_distance(a: np.ndarray, b: np.ndarray) -> float:
    return float(1.0 - a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def expected_hybrid(
    user_id,
    query_vector: str | None,
    query_text: str | None,
    match_count: int,
    vector_weight: float,
    text_weight: float,
    k: int,
    text_match: str = "any",
) -> list[Expected]:
    candidates = min(max(match_count, 1), 200) * 4

    vector: dict[uuid.UUID, tuple[int, float]] = {}
    if query_vector is not None:
        q = np.asarray(json.loads(query_vector), dtype=np.float32).astype(np.float64)
        distances = {mid: cosine_distance(emb, q) for mid, emb in stored_embeddings(user_id).items()}
        ordered = sorted(distances, key=lambda mid: (distances[mid], mid))
        # pgvector sums in float32 (measured error < 1e-7 here); the rank comparison is only
        # meaningful if that noise cannot swap two rows, so distinct distances must be further apart
        values = [distances[mid] for mid in ordered]
        for left, right in itertools.pairwise(values):
            assert right - left == 0 or right - left > 1e-6, "near-tie in the test data; change the query"
        vector = {mid: (rank, distances[mid]) for rank, mid in enumerate(ordered[:candidates], start=1)}

    scores = text_scores(user_id, query_text, text_match)
    text_order = sorted(scores, key=lambda mid: (-scores[mid], mid))
    text = {mid: (rank, scores[mid]) for rank, mid in enumerate(text_order[:candidates], start=1)}

    fused = []
    for mid in set(vector) | set(text):
        v_rank, v_dist = vector.get(mid, (None, None))
        t_rank, t_score = text.get(mid, (None, None))
        v_rrf = vector_weight / (k + v_rank) if v_rank else 0.0
        t_rrf = text_weight / (k + t_rank) if t_rank else 0.0
        fused.append(Expected(mid, v_rank, v_dist, t_rank, t_score, v_rrf, t_rrf, v_rrf + t_rrf))
    fused.sort(key=lambda e: (-e.rrf_score, e.vector_rank if e.vector_rank is not None else math.inf, e.id))
    return fused[: min(max(match_count, 1), 200)]


def call_sql(
    scope: Scope, query_vector, query_text, user_id, match_count, vector_weight, text_weight, k, text_match="any"
) -> list[dict]:
    with transaction(scope) as cur:
        cur.execute(
            "select * from public.match_memories_hybrid(%s::extensions.vector, %s, %s, %s, %s, %s, %s, %s)",
            (query_vector, query_text, user_id, match_count, vector_weight, text_weight, k, text_match),
        )
        return cur.fetchall()


def assert_matches(actual, expected: list[Expected]):
    """`actual`: SQL rows (dicts) or MemoryHit objects, in the function's order."""
    rows = [row if isinstance(row, dict) else row.__dict__ for row in actual]
    assert [row["id"] for row in rows] == [e.id for e in expected]
    for row, e in zip(rows, expected, strict=True):
        assert row["vector_rank"] == e.vector_rank
        assert row["text_rank"] == e.text_rank
        if e.vector_distance is None:
            assert row["vector_distance"] is None
        else:
            assert row["vector_distance"] == pytest.approx(e.vector_distance, abs=3e-7)
        if e.text_score is None:
            assert row["text_score"] is None
        else:
            assert row["text_score"] == pytest.approx(e.text_score, rel=1e-9)
        # the RRF arithmetic is plain float8 on both sides: it must agree to the last bits
        assert row["vector_rrf"] == pytest.approx(e.vector_rrf, rel=1e-12, abs=1e-15)
        assert row["text_rrf"] == pytest.approx(e.text_rrf, rel=1e-12, abs=1e-15)
        assert row["rrf_score"] == pytest.approx(e.rrf_score, rel=1e-12, abs=1e-15)
        assert row["rrf_score"] == pytest.approx(row["vector_rrf"] + row["text_rrf"], rel=1e-12)


# ---------------------------------------------------------------------------
# Ranks and fused scores agree with the independent computation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("match_count,vector_weight,text_weight,k", PARAMS)
def test_sql_function_matches_independent_computation(corpus, query, match_count, vector_weight, text_weight, k):
    owner = corpus.owner
    query_vector = vector_literal(embeddings.embed_one(query))
    actual = call_sql(owner.scope, query_vector, query, owner.user_id, match_count, vector_weight, text_weight, k)
    expected = expected_hybrid(owner.user_id, query_vector, query, match_count, vector_weight, text_weight, k)
    assert actual, "every query has vector hits"
    assert_matches(actual, expected)


@pytest.mark.parametrize("query", ["blue subaru", "coffee grinder", "what does the user listen to"])
def test_all_terms_text_match_agrees_too(corpus, query):
    owner = corpus.owner
    query_vector = vector_literal(embeddings.embed_one(query))
    actual = call_sql(owner.scope, query_vector, query, owner.user_id, 10, 0.7, 0.3, 60, "all")
    assert_matches(actual, expected_hybrid(owner.user_id, query_vector, query, 10, 0.7, 0.3, 60, "all"))


def test_service_scope_gets_the_same_answer_as_the_user(corpus):
    owner = corpus.owner
    query = "coffee"
    query_vector = vector_literal(embeddings.embed_one(query))
    as_user = call_sql(owner.scope, query_vector, query, owner.user_id, 10, 0.7, 0.3, 60)
    as_service = call_sql(owner.service, query_vector, query, owner.user_id, 10, 0.7, 0.3, 60)
    assert as_user == as_service


def test_candidate_cut_drops_branch_ranks_beyond_four_times_match_count(corpus):
    owner = corpus.owner
    # The vector side looks for a dog, the text side for mudguards (only the bike row has the word),
    # so the bike row is text rank 1 but deep in the vector ranking.
    query_vector = vector_literal(embeddings.embed_one("a dog called Biscuit"))
    query_text = "mudguards"
    full = expected_hybrid(owner.user_id, query_vector, query_text, 200, 0.01, 1.0, 60)
    bike = next(e for e in full if e.text_rank == 1)
    assert max(e.vector_rank for e in full if e.vector_rank) == len(FACTS) + 2
    deep_rank = bike.vector_rank
    assert deep_rank >= 9, "the test needs the text hit deep in the vector ranking"

    # match_count m keeps 4m vector candidates: just below the bike's vector rank it loses its vector rank ...
    cut_count = (deep_rank - 1) // 4
    cut = call_sql(owner.scope, query_vector, query_text, owner.user_id, cut_count, 0.01, 1.0, 60)
    assert cut[0]["id"] == bike.id and cut[0]["vector_rank"] is None and cut[0]["vector_rrf"] == 0
    assert all(r["vector_rank"] is None or r["vector_rank"] <= 4 * cut_count for r in cut)
    # ... and at the first match_count whose 4m reaches it, it has it
    kept_count = -(-deep_rank // 4)
    kept = call_sql(owner.scope, query_vector, query_text, owner.user_id, kept_count, 0.01, 1.0, 60)
    assert kept[0]["id"] == bike.id and kept[0]["vector_rank"] == deep_rank
    for count, rows in ((cut_count, cut), (kept_count, kept)):
        assert_matches(rows, expected_hybrid(owner.user_id, query_vector, query_text, count, 0.01, 1.0, 60))

    deep = call_sql(owner.scope, query_vector, "", owner.user_id, 200, 0.7, 0.3, 60)
    assert len(deep) == len(FACTS) + 2 and all(r["text_rank"] is None for r in deep)


def test_exact_ties_are_broken_by_id(corpus):
    owner = corpus.owner
    query = "which vehicle"
    query_vector = vector_literal(embeddings.embed_one(query))
    rows = call_sql(owner.scope, query_vector, query, owner.user_id, 50, 1.0, 0.0, 60)
    twins = [r for r in rows if r["content"] == FACTS["car"]]
    assert len(twins) == 3
    assert len({r["vector_distance"] for r in twins}) == 1  # a real tie
    ranks = sorted(r["vector_rank"] for r in twins)
    assert ranks == list(range(ranks[0], ranks[0] + 3))
    assert [r["id"] for r in sorted(twins, key=lambda r: r["vector_rank"])] == sorted(r["id"] for r in twins)

    text_rows = call_sql(owner.scope, None, "subaru outback", owner.user_id, 50, 0.0, 1.0, 60)
    tied = [r for r in text_rows if r["memory_type"] in ("twin_a", "twin_b")]
    assert len(tied) == 2 and tied[0]["text_score"] == tied[1]["text_score"]
    assert [r["id"] for r in sorted(tied, key=lambda r: r["text_rank"])] == sorted(r["id"] for r in tied)


def test_null_embedding_means_text_only_and_empty_text_means_vector_only(corpus):
    owner = corpus.owner
    text_only = call_sql(owner.scope, None, "football thursdays", owner.user_id, 10, 0.7, 0.3, 60)
    assert [r["memory_type"] for r in text_only] == ["sport"]
    assert text_only[0]["vector_rank"] is None and text_only[0]["vector_rrf"] == 0
    assert_matches(text_only, expected_hybrid(owner.user_id, None, "football thursdays", 10, 0.7, 0.3, 60))

    query_vector = vector_literal(embeddings.embed_one("football"))
    for blank in (None, "", "   "):
        vector_only = call_sql(owner.scope, query_vector, blank, owner.user_id, 10, 0.7, 0.3, 60)
        assert len(vector_only) == 10 and all(r["text_rank"] is None for r in vector_only)
        assert vector_only[0]["memory_type"] == "sport"


@pytest.mark.parametrize("match_count,returned", [(0, 1), (-5, 1), (500, len(FACTS) + 2)])
def test_match_count_is_clamped(corpus, match_count, returned):
    owner = corpus.owner
    query_vector = vector_literal(embeddings.embed_one("anything"))
    rows = call_sql(owner.scope, query_vector, "anything", owner.user_id, match_count, 0.7, 0.3, 60)
    assert len(rows) == returned


# ---------------------------------------------------------------------------
# Through core.retrieval: same numbers, modes, fallback, validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("params", [RrfParams(), RrfParams(0.4, 1.6, 20), RrfParams(2.0, 0.5, 1)])
def test_search_memories_returns_the_functions_numbers(corpus, params):
    owner = corpus.owner
    query = "what does my partner teach?"
    result = search_memories(owner.scope, query, limit=8, params=params)
    assert result.mode == "hybrid" and result.degraded_reason is None
    assert result.params == params
    query_vector = vector_literal(embeddings.embed_one(query))
    assert_matches(
        result.hits,
        expected_hybrid(owner.user_id, query_vector, query, 8, params.vector_weight, params.text_weight, params.k),
    )
    assert result.hits[0].memory_type == "partner"
    as_dict = result.as_dict()
    assert as_dict["hits"][0]["id"] == str(result.hits[0].id) and as_dict["params"]["k"] == params.k


def test_vector_and_text_modes_use_one_branch_each(corpus):
    owner = corpus.owner
    vector = search_memories(owner.scope, "pets at home", limit=5, mode="vector")
    assert vector.mode == "vector"
    assert [h.vector_rank for h in vector.hits] == [1, 2, 3, 4, 5]
    assert all(h.text_rank is None and h.text_rrf == 0 for h in vector.hits)

    def no_embedding(_text):
        raise AssertionError("text mode must not embed the query")

    text = search_memories(owner.scope, "green tea", limit=5, mode="text", embed=no_embedding)
    assert text.mode == "text" and text.degraded_reason is None
    assert text.hits[0].memory_type == "tea"
    assert all(h.vector_rank is None and h.vector_rrf == 0 for h in text.hits)
    assert_matches(text.hits, expected_hybrid(owner.user_id, None, "green tea", 5, 0.0, 0.5, RrfParams().k))


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_embedding_failure_falls_back_to_text(corpus, mode):
    owner = corpus.owner

    def broken(_text):
        raise EmbeddingUnavailable("the model could not be loaded")

    result = search_memories(owner.scope, "Which football team do I support?", limit=5, mode=mode, embed=broken)
    assert result.mode == "text"
    assert result.degraded and "the model could not be loaded" in result.degraded_reason
    assert "text matches only" in result.degraded_reason
    assert result.hits and result.hits[0].memory_type in ("team", "sport")
    assert {"team", "sport"} <= {h.memory_type for h in result.hits}
    for hit in result.hits:
        assert hit.vector_rank is None and hit.vector_distance is None and hit.vector_rrf == 0
        assert hit.text_rank is not None and hit.rrf_score == hit.text_rrf > 0
    assert result.as_dict()["degraded_reason"] == result.degraded_reason


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"limit": 0}, "between 1 and 200"),
        ({"limit": 201}, "between 1 and 200"),
        ({"limit": "ten"}, "whole number"),
        ({"params": RrfParams(-0.1, 0.3, 60)}, "between 0 and 10"),
        ({"params": RrfParams(0.0, 0.0, 60)}, "above 0"),
        ({"params": RrfParams(0.7, 0.3, 0)}, "between 1 and 10000"),
        ({"mode": "fuzzy"}, "Unknown search mode"),
    ],
)
def test_invalid_search_arguments_are_refused(corpus, kwargs, message):
    with pytest.raises(InvalidInput, match=message):
        search_memories(corpus.owner.scope, "coffee", **kwargs)


# ---------------------------------------------------------------------------
# Slot upsert
# ---------------------------------------------------------------------------


def _slot_rows(user_id, slot):
    with db.admin_connection() as conn:
        return conn.execute(
            "select id, content, embedding::text, created_at, updated_at from public.memories "
            "where user_id = %s and memory_type = %s",
            (user_id, slot),
        ).fetchall()


def test_slot_upsert_keeps_one_row(new_user):
    user = new_user()
    first = memories.remember(user.scope, "Favorite Color", "teal", session_id="s-1")
    second = memories.remember(user.scope, "favorite_color", "deep orange")
    third = memories.remember(user.scope, "  FAVORITE-color ", "ochre", session_id="s-3")

    assert first.created is True and first.previous_content is None
    assert second.created is False and second.previous_content == "teal"
    assert third.created is False and third.previous_content == "deep orange"
    assert first.memory.id == second.memory.id == third.memory.id
    assert second.memory.session_id == "s-1"  # a write without a session keeps the old one
    assert third.memory.session_id == "s-3"
    rows = _slot_rows(user.user_id, "favorite_color")
    assert len(rows) == 1 and rows[0][1] == "ochre"
    assert rows[0][4] > rows[0][3]  # updated_at moved, created_at kept
    # the embedding follows the new content
    stored = np.asarray(json.loads(rows[0][2]))
    fresh = embeddings.embed_one(embeddings.memory_text("favorite_color", "ochre"))
    assert float(stored @ fresh) == pytest.approx(1.0, abs=1e-5)
    found = search_memories(user.scope, "ochre")
    assert [h.content for h in found.hits] == ["ochre"]
    assert [m.memory_type for m in memories.list_memories(user.scope)] == ["favorite_color"]


def test_slot_upsert_is_per_user(new_user):
    one, two = new_user(), new_user()
    memories.remember(one.scope, "Favorite Color", "teal")
    memories.remember(two.scope, "favorite color", "red")
    assert memories.recall(one.scope, "favorite_color").content == "teal"
    assert memories.recall(two.scope, "favorite_color").content == "red"


# ---------------------------------------------------------------------------
# The vector branch is exact per user
# ---------------------------------------------------------------------------


def test_other_users_rows_never_push_a_users_rows_out(database_uri):
    target = sign_in()
    for slot, content in [
        ("dog", "Has a border collie named Biscuit"),
        ("tea", "Drinks green tea"),
        ("car", "Drives an old red Fiat Panda"),
    ]:
        memories.remember(target.scope, slot, content)
    query = "espresso machine descaling"
    query_vector = vector_literal(embeddings.embed_one(query))
    # 2,000 rows of 40 other users, every one closer to the query than any of the target's rows
    with db.admin_connection() as conn:
        crowd = [
            row[0]
            for row in conn.execute(
                "insert into auth.users (is_anonymous) select true from generate_series(1, 40) returning id"
            ).fetchall()
        ]
        conn.execute(
            "insert into public.memories (user_id, memory_type, content, embedding) "
            "select u, 'crowd_' || g, 'espresso machine descaling tips ' || g, %s::extensions.vector "
            "from unnest(%s::uuid[]) u, generate_series(1, 50) g",
            (query_vector, crowd),
        )
        conn.execute("analyze public.memories")
    try:
        expected = expected_hybrid(target.user_id, query_vector, query, 3, 0.5, 0.5, RrfParams().k)  # the defaults
        for scope in (target.scope, target.service):
            result = search_memories(scope, query, limit=3)
            assert {h.memory_type for h in result.hits} == {"dog", "tea", "car"}
            assert sorted(h.vector_rank for h in result.hits) == [1, 2, 3]
            assert_matches(result.hits, expected)
            top = search_memories(scope, query, limit=1, mode="vector")
            assert top.hits[0].id == expected_hybrid(target.user_id, query_vector, None, 1, 1, 0, 60)[0].id
        # sanity: the crowd really is nearer (a global top-k would hold only crowd rows)
        with db.admin_connection() as conn:
            nearest_owners = conn.execute(
                "select user_id from public.memories order by embedding <=> %s::extensions.vector limit 100",
                (query_vector,),
            ).fetchall()
        assert target.user_id not in {row[0] for row in nearest_owners}
    finally:
        delete_users([*crowd, target.user_id])
