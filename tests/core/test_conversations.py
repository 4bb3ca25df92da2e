"""The conversation tier against the real embedded Postgres: storing turns, RLS,
deletion, the lexicon statistics, and match_conversation_turns_hybrid against an
independent computation (numpy for the vector branch, BM25 recomputed here from
the turns' lexemes for the text branch, RRF recomputed from the ranks)."""

from __future__ import annotations

import itertools
import json
import math
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import numpy as np
import psycopg
import pytest

from core import (
    conversations,
    db,
    embeddings,
    erasure,
    identity,
    maintenance,
    memories,
    profiles,
    sessions,
    turn_indexer,
)
from core.conversations import TurnInput
from core.date_window import DateWindow
from core.db import Scope, transaction, vector_literal
from core.errors import EmbeddingUnavailable, InvalidInput, NotFound
from core.retrieval import RrfParams, search_conversations
from tests.support.english import english_rarity
from tests.support.eval_sets import first_sessions

T0 = datetime(2024, 3, 1, 18, 0, tzinfo=UTC)

SESSION_A = [  # (speaker, content)
    ("user", "hey, got a minute?"),
    ("assistant", "Hi! What can I do for you today?"),
    ("user", "We hiked the Cedar Creek Loop on Saturday with Nora, nine miles and my legs are dead."),
    ("assistant", "That sounds like a great day outside. Were the views worth the climb?"),
    ("user", "Give me a packing list for a weekend hike."),
    ("assistant", "Layers, rain jacket, two liters of water, snacks, map, headlamp and broken-in boots."),
    ("user", "Booked my flights to Lisbon for May! TAP, flight TP 1357."),
    ("assistant", "How exciting! Do you want help putting together an itinerary?"),
]
SESSION_B = [
    ("user", "morning :)"),
    ("assistant", "Good to hear from you. How's it going?"),
    ("user", "Big news, we adopted a beagle from the shelter today! Pepper is three and asleep on the couch."),
    ("assistant", "That's wonderful, congratulations! How are the first hours going?"),
    ("user", "How do I get a dog to stop pulling on the leash?"),
    ("assistant", "Stop walking whenever the leash goes tight and reward the dog when it comes back to your side."),
    ("user", "Someone at work said the Granite Peak Trail is even prettier in the fall."),
    ("assistant", "Fall colours on a trail are hard to beat."),
    ("user", "For Lisbon we're staying at Casa Azul, five nights near the old town."),
    ("assistant", "Nice choice, staying central makes it easy to walk everywhere."),
]
QUERIES = [
    "what was the name of the trail I hiked with Nora?",
    "what's my flight number to Lisbon?",
    "what did we call the dog we adopted",
    "hotel in Lisbon",
    "trail",
    "how far did I walk in the mountains",
]


def _sign_in():
    verified = identity.verify(identity.sign_in_anonymously().access_token)
    return SimpleNamespace(
        scope=Scope.for_user(verified), user_id=verified.user_id, service=Scope.service(verified.user_id)
    )


def _turns(session_id, rows, start):
    return [
        TurnInput(session_id, i, speaker, content, start + timedelta(minutes=i))
        for i, (speaker, content) in enumerate(rows)
    ]


@pytest.fixture(scope="module")
def corpus(database_uri):
    owner, other = _sign_in(), _sign_in()
    sa, sb = f"conv-a-{owner.user_id}", f"conv-b-{owner.user_id}"
    conversations.store_turns(owner.service, _turns(sa, SESSION_A, T0))
    conversations.store_turns(owner.service, _turns(sb, SESSION_B, T0 + timedelta(days=9)))
    # Another user with the same words: a search must never see them.
    so = f"conv-o-{other.user_id}"
    conversations.store_turns(other.service, _turns(so, SESSION_A + SESSION_B, T0))
    yield SimpleNamespace(owner=owner, other=other, sa=sa, sb=sb, so=so)
    with db.admin_connection() as conn:
        conn.execute("delete from auth.users where id = any(%s)", ([owner.user_id, other.user_id],))


# ---------------------------------------------------------------------------
# The independent computation
# ---------------------------------------------------------------------------


def user_turns(user_id) -> list[dict]:
    with db.admin_connection() as conn:
        rows = conn.execute(
            "select id, session_id, embedding::text, tsvector_to_array(fts), turn_index, created_at "
            "from public.conversation_turns where user_id = %s",
            (user_id,),
        ).fetchall()
    return [
        {
            "id": r[0],
            "session_id": r[1],
            "embedding": None if r[2] is None else np.array(json.loads(r[2])),
            "lexemes": set(r[3]),
            "turn_index": r[4],
            "created_at": r[5],
        }
        for r in rows
    ]


def query_lexemes(text: str) -> list[str]:
    with db.admin_connection() as conn:
        return list(conn.execute("select tsvector_to_array(to_tsvector('english', %s))", (text,)).fetchone()[0])


def expected_hybrid(
    user_id,
    query_vector,
    query_text,
    match_count,
    wv,
    wt,
    k,
    candidates=None,
    exclude_session_id=None,
    said_since=None,
    said_before=None,
):
    candidates = candidates or min(max(match_count, 1), 200) * 4
    turns = user_turns(user_id)
    visible = [
        t
        for t in turns
        if (exclude_session_id is None or t["session_id"] != exclude_session_id)
        and (said_since is None or t["created_at"] >= said_since)
        and (said_before is None or t["created_at"] < said_before)
    ]

    vector = {}
    hybrid = wv > 0 and wt > 0  # as asked: the coverage scaling below can take the text weight to 0
    vector_factor = 1.0
    if query_vector is not None:
        # turns store half-precision embeddings and the function casts the query the same way
        q = np.asarray(json.loads(query_vector)).astype(np.float16).astype(np.float64)
        dist = {
            t["id"]: float(1 - t["embedding"] @ q / (np.linalg.norm(t["embedding"]) * np.linalg.norm(q)))
            for t in visible
            if t["embedding"] is not None
        }
        order = sorted(dist, key=lambda i: (dist[i], i))
        values = [dist[i] for i in order]
        # float32 sums in pgvector: the ranks returned are only comparable if no two distances among them
        # (and the first one left out) are near-ties
        ranked = values[: candidates + 1]
        assert all(right - left == 0 or right - left > 2e-6 for left, right in itertools.pairwise(ranked)), (
            "near-tie in the test data; change the query"
        )
        vector = {i: (rank, dist[i]) for rank, i in enumerate(order[:candidates], start=1)}
        # In a hybrid search the vector weight is scaled by how far the nearest turn stands out: the z-score
        # of its distance among the visible turns' (these users have fewer than the 1,000 it reads), full
        # from 4; with fewer than 100 turns it stays full.
        if hybrid and len(values) >= 100 and np.std(values) > 0:
            vector_factor = min(1.0, max(0.0, (np.mean(values) - values[0]) / np.std(values) / 4.0))

    text = {}
    if query_text and query_text.strip():
        # A query word weighs its English rarity plus its IDF over all of the user's turns (the
        # statistics include every session); a turn scores the sum of the kept words it contains.
        n = len(turns)
        df = {}
        unsaid = []  # the query's words this user never said
        for lexeme in set(query_lexemes(query_text)):
            count = sum(1 for t in turns if lexeme in t["lexemes"])
            if count:
                df[lexeme] = count
            else:
                unsaid.append(lexeme)
        with db.admin_connection() as conn:
            rarity = english_rarity(conn, [*df, *unsaid])
        idf = {x: rarity[x] + math.log(1 + (n - c + 0.5) / (c + 0.5)) for x, c in df.items()}
        heaviest = sorted(df, key=lambda x: (-idf[x], x))[:8]
        # words in more than 10% of the user's turns are left out, unless it is the heaviest one
        kept = [x for pos, x in enumerate(heaviest) if pos == 0 or df[x] <= 0.1 * n]
        scores = {}
        for t in visible:
            matched = [idf[x] for x in kept if x in t["lexemes"]]
            if matched:
                scores[t["id"]] = sum(matched)
        order = sorted(scores, key=lambda i: (-scores[i], i))[:candidates]
        text = {i: (rank, scores[i]) for rank, i in enumerate(order, start=1)}
        # In a hybrid search the text weight is scaled by how much of the query's word weight the best
        # text hit holds, full from half of it; an unsaid word weighs as if said in no turn.
        query_weight = sum(idf[x] for x in kept) + sum(rarity[x] + math.log(1 + (n + 0.5) / 0.5) for x in unsaid)
        if wv > 0 and query_weight > 0:
            wt *= min(1.0, max(scores.values(), default=0.0) / (0.5 * query_weight))

    wv *= vector_factor

    # In a hybrid search every candidate is also ranked in context: its embedding plus the next turn's
    # of the same session (its own alone if it is the last), and that ranking takes half the vector weight.
    context = {}
    vector_share = 1.0
    if query_vector is not None and hybrid:
        vector_share = 0.5
        by_id = {t["id"]: t for t in turns}
        by_place = {(t["session_id"], t["turn_index"]): t for t in turns}
        dist = {}
        for i in set(vector) | set(text):
            turn = by_id[i]
            if turn["embedding"] is None:
                continue
            after = by_place.get((turn["session_id"], turn["turn_index"] + 1))
            pair = turn["embedding"] + (after["embedding"] if after and after["embedding"] is not None else 0)
            q = np.asarray(json.loads(query_vector))
            dist[i] = float(1 - pair @ q / (np.linalg.norm(pair) * np.linalg.norm(q)))
        order = sorted(dist, key=lambda i: (dist[i], i))
        values = [dist[i] for i in order]
        assert all(right - left == 0 or right - left > 2e-6 for left, right in itertools.pairwise(values)), (
            "near-tie in context distances; change the query"
        )
        context = {i: (rank, dist[i]) for rank, i in enumerate(order, start=1)}

    fused = []
    for i in set(vector) | set(text):
        vr, vd = vector.get(i, (None, None))
        tr, ts = text.get(i, (None, None))
        cr, cd = context.get(i, (None, None))
        v_rrf = wv * vector_share / (k + vr) if vr else 0.0
        c_rrf = wv * 0.5 / (k + cr) if cr else 0.0
        t_rrf = wt / (k + tr) if tr else 0.0
        fused.append(
            {
                "id": i,
                "vector_rank": vr,
                "vector_distance": vd,
                "text_rank": tr,
                "text_score": ts,
                "context_rank": cr,
                "context_distance": cd,
                "vector_rrf": v_rrf,
                "context_rrf": c_rrf,
                "text_rrf": t_rrf,
                "rrf_score": v_rrf + c_rrf + t_rrf,
                "text_weight_used": wt,
                "vector_weight_used": wv,
                "vector_scaled": vector_factor < 1.0,
            }
        )
    fused.sort(key=lambda e: (-e["rrf_score"], e["vector_rank"] or math.inf, e["id"]))
    return fused[: min(max(match_count, 1), 200)]


def call_sql(
    scope, query_vector, query_text, user_id, match_count, wv, wt, k, candidates=None, exclude=None, window=(None, None)
):
    with transaction(scope) as cur:
        cur.execute(
            "select * from public.match_conversation_turns_hybrid("
            "%s::extensions.vector, %s, %s, %s, %s, %s, %s, 'any', %s, %s, %s, %s)",
            (query_vector, query_text, user_id, match_count, wv, wt, k, candidates, exclude, *window),
        )
        return cur.fetchall()


def assert_matches(actual, expected):
    rows = [row if isinstance(row, dict) else row.__dict__ for row in actual]
    assert [r["id"] for r in rows] == [e["id"] for e in expected]
    for row, e in zip(rows, expected, strict=True):
        assert row["vector_rank"] == e["vector_rank"] and row["text_rank"] == e["text_rank"]
        assert row["context_rank"] == e["context_rank"]
        for key, tol in (("vector_distance", 1e-6), ("text_score", 1e-9), ("context_distance", 1e-6)):
            if e[key] is None:
                assert row[key] is None
            else:
                assert row[key] == pytest.approx(e[key], abs=tol, rel=1e-9)
        for key in ("text_rrf", "text_weight_used"):
            assert row[key] == pytest.approx(e[key], rel=1e-12, abs=1e-15)
        # the vector weight's z-score sums float32 distances in SQL, float64 here
        exact = not e["vector_scaled"]
        for key in ("vector_rrf", "context_rrf", "rrf_score", "vector_weight_used"):
            assert row[key] == pytest.approx(e[key], rel=1e-12 if exact else 1e-5, abs=1e-15)


# ---------------------------------------------------------------------------
# Search agrees with the independent computation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize(
    "match_count,wv,wt,k,candidates",
    [
        (10, 0.5, 0.5, 60, None),
        (5, 0.7, 0.3, 60, None),
        (3, 1.0, 1.0, 1, 4),
        (18, 0.2, 2.0, 10, 100),
        (1, 1.0, 0.0, 60, None),
        (7, 0.0, 1.0, 60, 3),
    ],
)
def test_sql_function_matches_independent_computation(corpus, query, match_count, wv, wt, k, candidates):
    owner = corpus.owner
    qv = vector_literal(embeddings.embed_one(query))
    actual = call_sql(owner.scope, qv, query, owner.user_id, match_count, wv, wt, k, candidates)
    assert actual
    assert_matches(actual, expected_hybrid(owner.user_id, qv, query, match_count, wv, wt, k, candidates))
    assert {r["session_id"] for r in actual} <= {corpus.sa, corpus.sb}


def test_text_branch_weights_rare_words_over_common_ones(new_user):
    user = new_user()
    filler = [("assistant", f"Happy to help with question number {i}.") for i in range(36)]
    rows_in = [
        *filler,
        ("user", "The Cedar trail was muddy."),
        ("user", "Another trail run today."),
        ("user", "Trail shoes are worn out."),
        ("user", "Pepper slept all day."),
    ]
    conversations.store_turns(Scope.service(user.user_id), _turns(f"idf-{user.user_id}", rows_in, T0))
    # "trail" is in 3 of 40 turns, "pepper" in 1: each matching turn shares one word with the query,
    # and the one with the rarer word comes first.
    rows = call_sql(user.scope, None, "trail Pepper", user.user_id, 20, 0.0, 1.0, 60)
    assert next(r["content"] for r in rows) == "Pepper slept all day." and len(rows) == 4
    assert rows[0]["text_score"] > rows[1]["text_score"] == rows[2]["text_score"] == rows[3]["text_score"]
    assert_matches(rows, expected_hybrid(user.user_id, None, "trail Pepper", 20, 0.0, 1.0, 60))


def test_a_word_rare_in_english_outweighs_small_talk_said_as_often(new_user):
    user = new_user()
    rows_in = [
        ("user", "The neighbours are drilling again."),  # first: it would win a tie on row order
        ("user", "The vet prescribed Gabapentin for the paw."),
        *[("assistant", f"Happy to help with question number {i}.") for i in range(10)],
    ]
    conversations.store_turns(Scope.service(user.user_id), _turns(f"eng-{user.user_id}", rows_in, T0))
    # Both words are in one of this user's 12 turns: the per-user IDF alone ties them. English
    # rarity does not: "drilling" is an everyday word, "Gabapentin" is not in the table at all.
    rows = call_sql(user.scope, None, "drilling Gabapentin", user.user_id, 10, 0.0, 1.0, 60)
    assert [r["content"] for r in rows] == [rows_in[1][1], rows_in[0][1]]
    with db.admin_connection() as conn:
        rarity = english_rarity(conn, ["drill", "gabapentin"])
        floor = conn.execute("select max(rarity)::float8 from public.english_word_rarity").fetchone()[0]
    assert rarity["gabapentin"] == floor and rarity["drill"] < floor
    assert rows[0]["text_score"] - rows[1]["text_score"] == pytest.approx(floor - rarity["drill"], abs=1e-6)
    assert_matches(rows, expected_hybrid(user.user_id, None, "drilling Gabapentin", 10, 0.0, 1.0, 60))


def test_a_turn_is_also_ranked_with_the_turn_that_followed_it(new_user):
    user = new_user()
    rows_in = [
        ("user", "Booked it for the third of March, finally."),  # what was booked is only in the reply
        ("assistant", "Nice, your dentist check-up is on the third of March."),
        ("user", "Also, the neighbours are drilling again."),
        ("assistant", "That sounds noisy."),
        *[("user", f"Just thinking out loud, note {i}.") for i in range(8)],
    ]
    conversations.store_turns(Scope.service(user.user_id), _turns(f"ctx-{user.user_id}", rows_in, T0))
    asked = "when did I book the dentist?"
    qv = vector_literal(embeddings.embed_one(asked))
    rows = call_sql(user.scope, qv, asked, user.user_id, 14, 0.5, 0.5, 2)
    assert_matches(rows, expected_hybrid(user.user_id, qv, asked, 14, 0.5, 0.5, 2))
    booked = next(r for r in rows if r["content"] == rows_in[0][1])
    # with its reply the user's line is about the dentist: nearer the question than alone
    assert booked["context_distance"] < booked["vector_distance"] - 0.05
    assert booked["context_rank"] < booked["vector_rank"]
    assert booked["vector_rrf"] == pytest.approx(0.25 / (2 + booked["vector_rank"]))
    assert booked["context_rrf"] == pytest.approx(0.25 / (2 + booked["context_rank"]))
    # the session's last turn has no reply: in context it is itself (a float query instead of a half one)
    last = next(r for r in rows if r["content"] == rows_in[-1][1])
    assert last["context_distance"] == pytest.approx(last["vector_distance"], abs=2e-3)
    # one branch alone ranks as before: no context, the whole weight on the branch
    for wv, wt in ((1.0, 0.0), (0.0, 1.0)):
        alone = call_sql(user.scope, qv if wv else None, asked, user.user_id, 14, wv, wt, 2)
        assert alone and all(r["context_rank"] is None and r["context_rrf"] == 0 for r in alone)
        assert_matches(alone, expected_hybrid(user.user_id, qv if wv else None, asked, 14, wv, wt, 2))


def test_text_weight_follows_how_much_of_the_question_the_best_word_match_holds(new_user):
    user = new_user()
    rows_in = [
        ("user", "Quick update: the neighbours are drilling again."),  # small talk sharing the asking word
        ("user", "My doctor says I must keep away from sesame and poppy."),  # the answer, in other words
        *[("assistant", f"Happy to help with question number {i}.") for i in range(10)],
    ]
    conversations.store_turns(Scope.service(user.user_id), _turns(f"cov-{user.user_id}", rows_in, T0))
    asked = "Quick, remind me which seeds I should avoid?"
    qv = vector_literal(embeddings.embed_one(asked))
    rows = call_sql(user.scope, qv, asked, user.user_id, 5, 0.5, 0.5, 2)
    # Only "quick" matches a turn; "remind", "seeds" and "avoid" were never said, and still weigh in the
    # question: the text ranking's best row holds a small share of it, so it counts for less.
    used = rows[0]["text_weight_used"]
    assert 0 < used < 0.25 and {r["text_weight_used"] for r in rows} == {used}
    drilling = next(r for r in rows if "drilling" in r["content"])
    assert drilling["text_rank"] == 1 and drilling["text_rrf"] == pytest.approx(used / (2 + 1))
    assert_matches(rows, expected_hybrid(user.user_id, qv, asked, 5, 0.5, 0.5, 2))
    # A question whose words a turn holds keeps the full weight; so does a text-only search.
    named = "sesame and poppy"
    full = call_sql(user.scope, vector_literal(embeddings.embed_one(named)), named, user.user_id, 5, 0.5, 0.5, 2)
    assert full[0]["text_weight_used"] == 0.5 and "sesame" in full[0]["content"]
    text_only = call_sql(user.scope, None, asked, user.user_id, 5, 0.0, 0.5, 2)
    assert text_only[0]["text_weight_used"] == 0.5 and text_only[0]["text_rrf"] == pytest.approx(0.5 / 3)


# One user with a long history: the first four sessions of c01 in the conversational dev set (136 turns,
# more than the 100 from which the vector weight follows how far the nearest turn stands out).
LONG_QUERIES = [
    "flight number to Bangkok",  # said once, in so many words: the nearest turn stands out
    "What's the project I'm leading called?",  # nothing is near: the vector branch counts for less
    "what did I have for dinner",
    "TP 2163",
    "how was the weather",
]


@pytest.fixture(scope="module")
def long_history(database_uri):
    user = _sign_in()
    mine = first_sessions("c01", 4)
    conversations.store_turns(
        user.service,
        [
            TurnInput(t["session"], t["turn"], t["speaker"], t["content"], datetime.fromisoformat(t["date"] + "+00:00"))
            for t in mine
        ],
    )
    yield SimpleNamespace(user=user, turns=mine)
    with db.admin_connection() as conn:
        conn.execute("delete from auth.users where id = %s", (user.user_id,))


@pytest.mark.parametrize("query", LONG_QUERIES)
@pytest.mark.parametrize(
    "match_count,wv,wt,k,candidates",
    [(10, 0.5, 0.5, 2, None), (5, 0.7, 0.3, 60, None), (3, 1.0, 0.0, 2, None), (7, 0.0, 1.0, 2, 3)],
)
def test_sql_function_matches_independent_computation_over_a_long_history(
    long_history, query, match_count, wv, wt, k, candidates
):
    user = long_history.user
    assert len(long_history.turns) == 136
    qv = vector_literal(embeddings.embed_one(query))
    actual = call_sql(user.scope, qv if wv else None, query, user.user_id, match_count, wv, wt, k, candidates)
    assert actual
    expected = expected_hybrid(user.user_id, qv if wv else None, query, match_count, wv, wt, k, candidates)
    assert_matches(actual, expected)


def test_vector_weight_follows_how_far_the_nearest_turn_stands_out(long_history, corpus):
    user = long_history.user

    def search(query, wv=0.5, wt=0.5):
        qv = vector_literal(embeddings.embed_one(query))
        return call_sql(user.scope, qv, query, user.user_id, 10, wv, wt, 2)

    # Said once in so many words: the nearest turn stands far out from the other 135, full weight.
    stands_out = search("flight number to Bangkok")
    assert {r["vector_weight_used"] for r in stands_out} == {0.5}
    assert "TP 2163" in stands_out[0]["content"]
    # Nothing is near this question: the vector branch's order is mostly noise and counts for less, and the
    # turn that names the project comes first, by its words. At full weight an assistant's stock line,
    # the vector branch's nearest, would have.
    asked = search("What's the project I'm leading called?")
    used = asked[0]["vector_weight_used"]
    assert 0 < used < 0.4 and {r["vector_weight_used"] for r in asked} == {used}
    assert "Project Obsidian" in asked[0]["content"] and asked[0]["text_rank"] == 1
    for row in asked:
        assert row["vector_rrf"] == pytest.approx(used / 2 / (2 + row["vector_rank"]) if row["vector_rank"] else 0)
        assert row["context_rrf"] == pytest.approx(used / 2 / (2 + row["context_rank"]) if row["context_rank"] else 0)

    def at_full_weight(row):
        return row["rrf_score"] + (0.5 - used) / 2 * sum(
            1 / (2 + row[rank]) for rank in ("vector_rank", "context_rank") if row[rank]
        )

    before = max(asked, key=at_full_weight)
    assert before["vector_rank"] == 1 and "Project Obsidian" not in before["content"]
    # One branch alone ranks as before, with the weight asked for.
    assert {r["vector_weight_used"] for r in search("What's the project I'm leading called?", 1.0, 0.0)} == {1.0}
    # Among fewer than 100 turns a z-score says too little: the owner's 18 turns allow at most √17 ≈ 4.1, and
    # these questions' nearest turns reach 2.1 to 3.2, yet the weight stays full.
    owner = corpus.owner
    for query in QUERIES:
        qv = vector_literal(embeddings.embed_one(query))
        rows = call_sql(owner.scope, qv, query, owner.user_id, 5, 0.5, 0.5, 2)
        assert {r["vector_weight_used"] for r in rows} == {0.5}


def test_common_words_are_left_out_unless_nothing_else_is_left(corpus):
    owner = corpus.owner
    # "assistant" is in half of the owner's turns: alone it still ranks its turns ...
    alone = call_sql(owner.scope, None, "assistant", owner.user_id, 50, 0.0, 1.0, 60)
    assert len(alone) == sum(1 for speaker, _ in SESSION_A + SESSION_B if speaker == "assistant")
    # ... next to a rarer word it is dropped: only the rare word's turns match
    rows = call_sql(owner.scope, None, "assistant Lisbon", owner.user_id, 50, 0.0, 1.0, 60)
    assert rows and all("Lisbon" in r["content"] for r in rows)
    assert_matches(rows, expected_hybrid(owner.user_id, None, "assistant Lisbon", 50, 0.0, 1.0, 60))


def test_turns_holding_the_same_words_score_alike_and_go_by_id_among_many_matches(new_user):
    user = new_user()
    rows_in = [("assistant", f"Happy to help with question number {i}.") for i in range(400)]
    # three query words in 40, 40 and 30 of 490 turns (all kept: under 10%); 100 turns hold one or two
    for i in range(30):
        rows_in[i] = ("user", f"Pepper chased a ball, day {i}.")
        rows_in[100 + i] = ("user", f"The trail was muddy, day {i}.")
        rows_in[200 + i] = ("user", f"The Cedar lodge was closed, day {i}.")
    for i in range(10):  # 10 turns holding two of the words: the same two, so they tie
        rows_in[300 + i] = ("user", f"Pepper came along on the trail, day {i}.")
    rows_in += [("assistant", f"Noted, item {i}.") for i in range(90)]
    rng = np.random.default_rng(5)

    def cheap_vectors(texts):  # the text branch does not read them; the model is not needed here
        vectors = rng.normal(size=(len(texts), 384))
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    conversations.store_turns(
        Scope.service(user.user_id), _turns(f"ties-{user.user_id}", rows_in, T0), embed=cheap_vectors
    )
    asked = "Pepper trail Cedar"
    rows = call_sql(user.scope, None, asked, user.user_id, 50, 0.0, 1.0, 2)
    assert_matches(rows, expected_hybrid(user.user_id, None, asked, 50, 0.0, 1.0, 2))
    both = [r for r in rows if "came along" in r["content"]]
    assert [r["text_rank"] for r in both] == list(range(1, 11))
    assert len({r["text_score"] for r in both}) == 1 and [r["id"] for r in both] == sorted(r["id"] for r in both)


def test_all_terms_mode_needs_every_word(corpus):
    owner = corpus.owner
    with transaction(owner.scope) as cur:
        cur.execute(
            "select content from public.match_conversation_turns_hybrid(null, %s, %s, 10, 0, 1, 60, 'all')",
            ("Lisbon flight", owner.user_id),
        )
        both = [r["content"] for r in cur.fetchall()]
        cur.execute(
            "select count(*) as n from public.match_conversation_turns_hybrid(null, %s, %s, 10, 0, 1, 60, 'all')",
            ("the of and", owner.user_id),
        )  # only stop words: no query, no hits
        nothing = cur.fetchone()["n"]
    assert both == ["Booked my flights to Lisbon for May! TAP, flight TP 1357."] and nothing == 0


def test_exclude_session_leaves_out_the_current_conversation(corpus):
    owner = corpus.owner
    query = "Lisbon"
    qv = vector_literal(embeddings.embed_one(query))
    rows = call_sql(owner.scope, qv, query, owner.user_id, 50, 0.5, 0.5, 60, None, corpus.sb)
    assert rows and all(r["session_id"] == corpus.sa for r in rows)
    assert_matches(rows, expected_hybrid(owner.user_id, qv, query, 50, 0.5, 0.5, 60, exclude_session_id=corpus.sb))
    hits = search_conversations(owner.scope, query, limit=5, exclude_session_id=corpus.sa).hits
    assert hits and all(h.session_id == corpus.sb for h in hits)


WINDOWS = {
    "session a's day": (T0, T0 + timedelta(days=1)),
    "from session b on": (T0 + timedelta(days=9), None),
    "before both": (None, T0),
    "three turns of session a": (T0 + timedelta(minutes=3), T0 + timedelta(minutes=6)),
}


@pytest.mark.parametrize("window", WINDOWS.values(), ids=WINDOWS.keys())
@pytest.mark.parametrize(("wv", "wt"), [(0.5, 0.5), (1.0, 0.0), (0.0, 1.0)], ids=["hybrid", "vector", "text"])
def test_a_window_of_time_keeps_both_branches_to_the_turns_said_in_it(corpus, window, wv, wt):
    """[said_since, said_before) filters each branch's candidates; the word statistics stay those of every turn
    (the independent computation's IDF counts all of them)."""
    owner = corpus.owner
    query = "Lisbon trail"
    qv = vector_literal(embeddings.embed_one(query))
    rows = call_sql(owner.scope, qv, query, owner.user_id, 50, wv, wt, 60, None, None, window)
    assert_matches(rows, expected_hybrid(owner.user_id, qv, query, 50, wv, wt, 60, None, None, *window))
    since, before = window
    assert all(
        (since is None or r["created_at"] >= since) and (before is None or r["created_at"] < before) for r in rows
    )
    said = {r["content"] for r in rows}
    if window == WINDOWS["before both"]:
        assert rows == []
    elif window == WINDOWS["three turns of session a"] and wt == 0.0:  # the vector branch ranks every turn in it
        assert said == {content for _, content in SESSION_A[3:6]}
    elif window == WINDOWS["from session b on"]:
        assert {r["session_id"] for r in rows} == {corpus.sb}
        assert any("Granite Peak Trail" in content for content in said)


def test_search_through_core_keeps_to_the_days_asked_for(corpus):
    owner = corpus.owner
    question = "what was the name of the trail I hiked with Nora?"
    everywhere = search_conversations(owner.scope, question, limit=3).hits
    assert "Cedar Creek Loop" in everywhere[0].content  # said on T0, in session a
    days_of_b = DateWindow(T0.date() + timedelta(days=9), T0.date() + timedelta(days=9), said_as="that day")
    found = search_conversations(owner.scope, question, limit=3, window=days_of_b)
    assert found.hits and all(h.session_id == corpus.sb for h in found.hits)
    assert any("Granite Peak Trail" in h.content for h in found.hits)  # the trail said that day
    assert found.as_dict()["window"] == (T0.date() + timedelta(days=9)).isoformat()
    # RLS still applies inside the window: another user asking for the owner's turns finds nothing
    with transaction(corpus.other.scope) as cur:
        cur.execute(
            "select count(*) as n from public.match_conversation_turns_hybrid(null, 'Lisbon trail', %s, "
            "10, 0, 1, 60, 'any', null, null, %s, null)",
            (owner.user_id, T0 - timedelta(days=1)),
        )
        assert cur.fetchone()["n"] == 0


def test_search_through_core_returns_the_functions_numbers_and_dates(corpus):
    owner = corpus.owner
    params = RrfParams(0.5, 0.5, 20)
    result = search_conversations(
        owner.scope, "what did we call the dog we adopted", limit=5, params=params, candidates=50
    )
    assert result.mode == "hybrid" and not result.degraded
    top = result.hits[0]
    assert "Pepper" in top.content and top.speaker == "user" and top.session_id == corpus.sb
    assert top.created_at == T0 + timedelta(days=9, minutes=2)
    qv = vector_literal(embeddings.embed_one(result.query))
    assert_matches(result.hits, expected_hybrid(owner.user_id, qv, result.query, 5, 0.5, 0.5, 20, 50))
    assert result.as_dict()["hits"][0]["created_at"] == top.created_at.isoformat()


def test_embedding_failure_falls_back_to_text(corpus):
    def broken(_text):
        raise EmbeddingUnavailable("the model could not be loaded")

    result = search_conversations(corpus.owner.scope, "flight number", limit=3, embed=broken)
    assert result.mode == "text" and "the model could not be loaded" in result.degraded_reason
    assert "TP 1357" in result.hits[0].content
    assert all(h.vector_rank is None and h.rrf_score == h.text_rrf > 0 for h in result.hits)


# ---------------------------------------------------------------------------
# Row level security
# ---------------------------------------------------------------------------


def test_owner_reads_own_turns_and_another_user_reads_none(corpus):
    owner, other = corpus.owner, corpus.other
    with transaction(owner.scope) as cur:
        cur.execute("select count(*) as n, count(distinct user_id) as users from public.conversation_turns")
        mine = cur.fetchone()
    assert mine == {"n": len(SESSION_A) + len(SESSION_B), "users": 1}
    with transaction(other.scope) as cur:
        cur.execute("select count(*) as n from public.conversation_turns where user_id = %s", (owner.user_id,))
        assert cur.fetchone()["n"] == 0
        cur.execute("select count(*) as n from public.conversation_lexemes where user_id = %s", (owner.user_id,))
        assert cur.fetchone()["n"] == 0
        # the search function runs as the caller: asking for the owner's turns finds nothing
        cur.execute(
            "select count(*) as n from public.match_conversation_turns_hybrid(null, 'Lisbon flight', %s)",
            (owner.user_id,),
        )
        assert cur.fetchone()["n"] == 0
    assert conversations.list_turns(other.scope, corpus.sa) == []
    assert len(conversations.list_turns(owner.scope, corpus.sa)) == len(SESSION_A)


@pytest.mark.parametrize(
    "statement",
    [
        "insert into public.conversation_turns (user_id, session_id, turn_index, speaker, content) "
        "values (%(uid)s, %(sid)s, 99, 'user', 'planted by the client')",
        "update public.conversation_turns set embedding = null where user_id = %(uid)s",
        # deleting their own turns is allowed (forgetting a memory does it: see the tests below), but not
        # touching the word statistics that the triggers keep
        "delete from public.conversation_lexemes where user_id = %(uid)s",
        "insert into public.conversation_lexemes (user_id, lexeme, turn_count) values (%(uid)s, 'x', 1)",
    ],
)
def test_authenticated_users_cannot_insert_or_change_turns_even_their_own(corpus, statement):
    owner = corpus.owner
    before = len(user_turns(owner.user_id))
    with pytest.raises(psycopg.errors.InsufficientPrivilege), transaction(owner.scope) as cur:
        cur.execute(statement, {"uid": owner.user_id, "sid": corpus.sa})
    assert len(user_turns(owner.user_id)) == before


def test_turns_are_written_by_the_service_only(corpus):
    with pytest.raises(InvalidInput, match="written by the service"):
        conversations.store_turn(corpus.owner.scope, corpus.sa, 50, "user", "hello")


def test_a_session_of_another_user_is_refused_and_nothing_is_written(corpus):
    before = len(user_turns(corpus.owner.user_id))
    with pytest.raises(InvalidInput, match="belongs to another user"):
        conversations.store_turns(
            corpus.owner.service,
            [TurnInput(f"fresh-{corpus.owner.user_id}", 0, "user", "hi"), TurnInput(corpus.so, 99, "user", "sneaky")],
        )
    assert len(user_turns(corpus.owner.user_id)) == before
    with pytest.raises(NotFound):
        sessions.get_session(corpus.owner.service, f"fresh-{corpus.owner.user_id}")


def test_turn_text_is_immutable_and_storing_again_is_idempotent(corpus):
    owner = corpus.owner
    again = conversations.store_turn(owner.service, corpus.sa, 2, "user", SESSION_A[2][1])
    assert again.content == SESSION_A[2][1] and len(conversations.list_turns(owner.scope, corpus.sa)) == len(SESSION_A)
    with pytest.raises(InvalidInput, match="different text"):
        conversations.store_turn(owner.service, corpus.sa, 2, "user", "We hiked somewhere else")
    with pytest.raises(psycopg.errors.CheckViolation), transaction(owner.service) as cur:
        cur.execute("update public.conversation_turns set content = 'rewritten' where id = %s", (again.id,))


@pytest.mark.parametrize(
    "turn, message",
    [
        (TurnInput("s", -1, "user", "x"), "turn index"),
        (TurnInput("s", 0, "", "x"), "speaker"),
        (TurnInput("s", 0, "user", "   "), "turn text is empty"),
        (TurnInput("s", 0, "user", "x" * 8001), "too long"),
        (TurnInput("s", 0, "user", "x", datetime(2024, 1, 1)), "timezone"),
    ],
)
def test_bad_turns_are_refused_with_a_clear_message(corpus, turn, message):
    with pytest.raises(InvalidInput, match=message):
        conversations.store_turns(corpus.owner.service, [turn])


# ---------------------------------------------------------------------------
# Embedding later, deletion, statistics
# ---------------------------------------------------------------------------


def lexicon(user_id) -> tuple[dict, tuple]:
    with db.admin_connection() as conn:
        stats = dict(
            conn.execute(
                "select lexeme, turn_count from public.conversation_lexemes where user_id = %s", (user_id,)
            ).fetchall()
        )
        totals = conn.execute(
            "select turn_count from public.conversation_lexicon_totals where user_id = %s", (user_id,)
        ).fetchone()
    return stats, totals


def recount(user_id) -> tuple[dict, tuple]:
    counts: dict[str, int] = {}
    turns = user_turns(user_id)
    for t in turns:
        for lexeme in t["lexemes"]:
            counts[lexeme] = counts.get(lexeme, 0) + 1
    return counts, ((len(turns),) if turns else None)


def test_a_turn_whose_embedding_failed_is_kept_found_by_text_and_embedded_later(new_user):
    user = new_user()
    service = Scope.service(user.user_id)
    sid = f"emb-{user.user_id}"

    def broken(_texts):
        raise EmbeddingUnavailable("model offline")

    turn = conversations.store_turn(service, sid, 0, "user", "My parking spot at work is C117.", embed=broken)
    assert not turn.embedded
    found = search_conversations(user.scope, "parking spot", limit=3)
    assert [h.id for h in found.hits] == [turn.id] and found.hits[0].vector_rank is None

    assert conversations.embed_pending(service) == 1
    assert conversations.get_turn(service, turn.id).embedded
    assert conversations.embed_pending(service) == 0
    found = search_conversations(user.scope, "where do I park", limit=3)
    assert found.hits[0].id == turn.id and found.hits[0].vector_rank == 1


def test_an_opening_is_kept_in_the_transcript_and_never_embedded_nor_searched(new_user):
    """The agent's greeting, said before the user's first message, holds nothing the user told it: stored for
    the transcript, never embedded, never found by a search of past turns (the agent's, the Sessions page's)."""
    user = new_user()
    service = Scope.service(user.user_id)
    sid = f"opening-{user.user_id}"
    greeting = "Hi! I'm the Memory Playground agent. Tell me something and I'll remember it, or ask about coffee."
    stored = conversations.store_turns(
        service,
        [
            TurnInput(sid, 0, "assistant", greeting, T0, opening=True),
            TurnInput(sid, 1, "user", "I paid 4 dollars for my coffee this morning.", T0 + timedelta(seconds=30)),
            TurnInput(sid, 2, "assistant", "Noted: 4 dollars for coffee.", T0 + timedelta(seconds=40)),
        ],
    )
    assert [(t.opening, t.embedded) for t in stored] == [(True, False), (False, True), (False, True)]
    assert conversations.list_turns(user.scope, sid) == stored  # the transcript keeps it (as the user: RLS)
    assert conversations.embed_pending(service) == 0  # not waiting for an embedding either
    for scope in (service, user.scope):
        for mode in ("hybrid", "vector", "text"):
            for query in (greeting, "what can you do for me?", "what did I pay for coffee?"):
                found = search_conversations(scope, query, mode=mode, limit=10, fold_repeats=False)
                assert stored[0].id not in {hit.id for hit in found.hits}, (mode, query)
                assert found.hits or mode == "text", (mode, query)
    # the database keeps it so: an opening cannot be embedded, nor become a turn searched
    with pytest.raises(psycopg.errors.CheckViolation), transaction(service) as cur:
        cur.execute(
            "update public.conversation_turns set embedding = %s::extensions.halfvec where id = %s",
            (vector_literal(embeddings.embed_one(greeting)), stored[0].id),
        )
    with pytest.raises(psycopg.errors.CheckViolation), transaction(service) as cur:
        cur.execute("update public.conversation_turns set opening = false where id = %s", (stored[0].id,))
    with pytest.raises(InvalidInput, match="not the user's"):
        conversations.store_turns(service, [TurnInput(sid, 3, "user", "hello?", opening=True)])


def test_statistics_follow_inserts_and_deletes(new_user):
    user = new_user()
    service = Scope.service(user.user_id)
    first, second = f"stats-1-{user.user_id}", f"stats-2-{user.user_id}"
    conversations.store_turns(service, _turns(first, SESSION_A, T0))
    conversations.store_turns(service, _turns(second, SESSION_B, T0))
    conversations.store_turn(service, second, len(SESSION_B), "user", "Pepper chewed my hiking boots")
    assert lexicon(user.user_id) == recount(user.user_id)
    assert lexicon(user.user_id)[0]["pepper"] == 2

    sessions.delete_session(user.scope, second)  # as the owner: RLS allows, the turns cascade
    assert conversations.list_turns(user.scope, second) == []
    assert lexicon(user.user_id) == recount(user.user_id)
    assert "pepper" not in lexicon(user.user_id)[0]
    assert lexicon(user.user_id)[1] == (len(SESSION_A),)

    with pytest.raises(NotFound):
        sessions.delete_session(user.scope, second)
    assert sessions.delete_all_sessions(user.scope) == 1
    assert user_turns(user.user_id) == []
    assert lexicon(user.user_id) == ({}, None)  # no turns left: no totals row either


FORGET_SESSION = [
    ("user", "My favorite color is Teal, by the way."),
    ("assistant", "Got it, I'll remember that your favorite color is teal."),
    ("user", "The teal-green scarf was a gift."),  # whole word: "teal" before a hyphen counts
    ("user", "Steal the show at the gala!"),  # not a whole word: stays
    ("user", "My usual is an oat  flat white."),
    ("assistant", "An oat flat white, noted."),
    ("user", "I like oatmeal and a flat white."),  # not the phrase: stays
]


def test_forgetting_a_memory_deletes_its_mentions_in_past_turns_and_only_those(new_user):
    user, other = new_user(), new_user()
    service = Scope.service(user.user_id)
    sid = f"forget-{user.user_id}"
    conversations.store_turns(service, _turns(sid, FORGET_SESSION, T0))
    conversations.store_turns(Scope.service(other.user_id), _turns(f"forget-{other.user_id}", FORGET_SESSION, T0))
    memories.remember(service, "favorite_color", "teal")
    memories.remember(service, "usual_order", "oat flat white")

    forgotten = memories.forget(service, "favorite_color")  # the agent's tool: the service, scoped to the user
    assert forgotten.memory.content == "teal" and forgotten.mentions_removed == 3
    left = [t.content for t in conversations.list_turns(user.scope, sid)]
    assert left == [FORGET_SESSION[i][1] for i in (3, 4, 5, 6)]

    usual = memories.recall(user.scope, "usual_order")
    deleted = memories.delete_memory(user.scope, usual.id)  # the Memories page: as the user, under RLS
    assert deleted.mentions_removed == 2
    assert [t.content for t in conversations.list_turns(user.scope, sid)] == [FORGET_SESSION[i][1] for i in (3, 6)]
    assert not search_conversations(user.scope, "teal", limit=5, mode="text").hits
    assert lexicon(user.user_id) == recount(user.user_id)  # the word statistics follow
    # the other user said the same things: nothing of theirs is touched
    assert len(conversations.list_turns(other.scope, f"forget-{other.user_id}")) == len(FORGET_SESSION)


PAID = "I paid $5 for coffee and $10 for lunch"
# a fresh-clone walkthrough: the fact told in one session, asked about in the next
PAID_TOLD = [
    ("user", PAID),
    ("assistant", "Got it, I'll remember that you paid $5 for coffee and $10 for lunch."),  # said back: goes
    ("user", "I paid $7 for coffee and $10 for lunch the day before."),  # another amount: stays
    ("assistant", "They paid $5 for coffee and $10 for lunch, you said?"),  # not the user: stays
    ("user", "We paid $5 for coffee and $10 for lunch at the airport."),  # "we" is not "I": stays
]
PAID_ASKED = [
    ("user", "what did I pay for coffee?"),  # asks, says nothing of it: stays
    ("assistant", "You told me you paid $5 for coffee and $10 for lunch."),  # said back: goes
    ("user", "you paid $5 for coffee, right?"),  # part of it: stays
    ("assistant", "You told me: \u201cI paid $5 for coffee and $10 for lunch\u201d."),  # quoted: goes
]


def test_deleting_a_memory_takes_the_agents_replies_that_say_it_back_and_nothing_else(new_user):
    """The agent repeats what it is told in the other person ("you paid" for "I paid"): deleting the memory
    left those replies in the conversation tier, where a search for "coffee" still found them. They go with
    it now, on the Memories page (as the user, RLS) and through the agent's forget alike; what differs from
    the fact in any other word stays, and the count shown before is what goes, said by whose it is."""
    user, other = new_user(), new_user()
    service = Scope.service(user.user_id)
    told, asked = f"told-{user.user_id}", f"asked-{user.user_id}"
    conversations.store_turns(service, _turns(told, PAID_TOLD, T0))
    conversations.store_turns(service, _turns(asked, PAID_ASKED, T0 + timedelta(days=1)))
    conversations.store_turns(Scope.service(other.user_id), _turns(f"told-{other.user_id}", PAID_TOLD, T0))
    paid = memories.remember(service, "note_paid_5_coffee", PAID).memory
    memories.remember(Scope.service(other.user_id), "note_paid_5_coffee", PAID)

    assert conversations.mention_count(user.scope, [PAID]) == conversations.MentionCount(yours=1, agents=3, repeated=2)
    assert memories.delete_memory(user.scope, paid.id).mentions_removed == 4  # the Memories page, as the user
    assert [t.content for t in conversations.list_turns(user.scope, told)] == [PAID_TOLD[i][1] for i in (2, 3, 4)]
    assert [t.content for t in conversations.list_turns(user.scope, asked)] == [PAID_ASKED[i][1] for i in (0, 2)]
    gone = {PAID_TOLD[0][1], PAID_TOLD[1][1], PAID_ASKED[1][1], PAID_ASKED[3][1]}
    found = search_conversations(user.scope, "what did I pay for coffee and lunch", limit=10).hits
    assert found and not gone & {hit.content for hit in found}  # the search finds the rest, none of these
    assert lexicon(user.user_id) == recount(user.user_id)
    assert len(conversations.list_turns(other.scope, f"told-{other.user_id}")) == len(PAID_TOLD)  # theirs stay

    # the agent's forget (the scoped service) goes by the same rule
    conversations.store_turns(Scope.service(other.user_id), _turns(f"asked-{other.user_id}", PAID_ASKED, T0))
    assert memories.forget(Scope.service(other.user_id), "note_paid_5_coffee").mentions_removed == 4
    assert [t.content for t in conversations.list_turns(other.scope, f"asked-{other.user_id}")] == [
        PAID_ASKED[0][1],
        PAID_ASKED[2][1],
    ]


def test_what_says_a_memory_back_in_the_other_person():
    """core.conversations.Mentions: a text, or the text with each first-person word in the second person and
    back (contractions written out first), as whole words; any other difference is another statement."""
    says = conversations.Mentions(["I'm allergic to cats", "my dog is Rex", "I wake up at 7 am", "you owe me lunch"])
    said = [
        "You\u2019re allergic to cats, noted.",  # a curly apostrophe, written out: "you are"
        "So you are allergic to cats?",
        "I am allergic to cats",  # the user's own words, written out
        "Your dog is Rex!",
        "you wake up at 7 am",  # "am" after a number is no verb: it stays "am"
        "I owe you lunch",
        "You said we owe you lunch",  # "we" for the "you" who owes: said back
    ]
    not_said = [
        "they are allergic to cats",
        "you were allergic to cats",
        "my dog is Rexford",
        "his dog is Rex",
        "you wake up at 7 are",
        "I owe lunch",
        "what is my dog's name?",
    ]
    assert [bool(says(string)) for string in said] == [True] * len(said)
    assert [bool(says(string)) for string in not_said] == [False] * len(not_said)
    assert says.among(not_said + said) == list(range(len(not_said), len(not_said) + len(said)))
    exact = conversations.Mentions(["I'm allergic to cats"], other_person=False)
    assert exact("I am allergic to cats") and not exact("you're allergic to cats")
    assert conversations.other_person_text("I paid $5, my treat") == "you paid $5, your treat"
    assert conversations.other_person_text("I'm vegan") == "you are vegan"
    assert conversations.other_person_text("navy blue") is None
    assert conversations.Mentions.key_word("you did it yourselves") == "did"  # a word either person says
    assert conversations.Mentions.key_word("I've been to Rome") in ("been", "rome")  # and "I've" does not hold "have"


SECRET = "my password hint is *star* and _under_"


def test_a_withheld_turn_keeps_its_place_without_its_words_and_no_search_finds_it(new_user):
    """A message the agent does not keep (a secret) is stored withheld: its place in the transcript, the marker
    instead of its words, no embedding and no words to search. Before, "what is my password hint?" found it in
    the conversation tier and the agent read the secret back."""
    user = new_user()
    service = Scope.service(user.user_id)
    sid = f"secret-{user.user_id}"
    said = [
        TurnInput(sid, 0, "assistant", "Hi! What can I do for you today?", T0),
        TurnInput(sid, 1, "user", SECRET, T0, withheld=True),
        TurnInput(sid, 2, "assistant", "I'd rather not keep passwords, PINs, card or ID numbers.", T0),
        TurnInput(sid, 3, "user", "The star of the show was under the stage lights.", T0),
    ]
    stored = conversations.store_turns(service, said)
    assert [(t.content, t.withheld, t.embedded) for t in stored[1:2]] == [(conversations.WITHHELD_TEXT, True, False)]
    assert conversations.store_turns(service, said[1:2]) == stored[1:2]  # stored again: the same turn
    listed = conversations.list_turns(user.scope, sid)  # as the user: RLS
    assert [t.turn_index for t in listed] == [0, 1, 2, 3] and listed[1] == stored[1]
    row = next(r for r in user_turns(user.user_id) if r["id"] == stored[1].id)
    assert row["embedding"] is None and row["lexemes"] == set()  # nothing to find it by
    with db.admin_connection() as conn:  # nowhere in its row
        (text,) = conn.execute(
            "select t::text from public.conversation_turns t where id = %s", (stored[1].id,)
        ).fetchone()
    assert "star" not in text and "under" not in text

    for query in (SECRET, "what is my password hint?", "star and under", "not kept password secret"):
        for mode in ("hybrid", "text", "vector"):
            hits = search_conversations(user.scope, query, limit=10, mode=mode).hits
            assert stored[1].id not in {hit.id for hit in hits}, (query, mode)
    assert conversations.embed_pending(service) == 0  # nothing embeds it later
    with pytest.raises(psycopg.errors.CheckViolation), transaction(service) as cur:
        cur.execute(
            "update public.conversation_turns set embedding = (select embedding from public.conversation_turns "
            "where id = %s) where id = %s",
            (stored[0].id, stored[1].id),
        )
    with pytest.raises(psycopg.errors.CheckViolation), transaction(service) as cur:  # nor is it ever un-withheld
        cur.execute("update public.conversation_turns set withheld = false where id = %s", (stored[1].id,))
    assert lexicon(user.user_id) == recount(user.user_id)
    # a memory whose text the marker happens to hold takes no withheld turn with it
    assert conversations.count_mentions(user.scope, ["another secret"]) == 0
    # one turn stored as it happens is withheld the same way (and is no opening: a user's turn cannot be)
    alone = conversations.store_turn(service, sid, 4, "user", SECRET, withheld=True)
    assert (alone.content, alone.withheld, alone.opening) == (conversations.WITHHELD_TEXT, True, False)
    assert not alone.embedded


def test_a_mention_still_waiting_in_the_turn_indexer_is_deleted_with_the_memory(new_user):
    """The indexer stores turns once they stop arriving for a moment: deleting a memory stores what it holds
    first, so a mention said just before is deleted instead of arriving after and bringing the detail back."""
    user = new_user()
    service = Scope.service(user.user_id)
    sid = f"queued-{user.user_id}"
    memories.remember(service, "locker_code", "4417")
    indexer = turn_indexer.get_indexer()
    assert indexer.submit(user.user_id, sid, 0, "user", "My locker code is 4417, remember it.")

    locker = memories.recall(user.scope, "locker_code")
    assert memories.delete_memory(user.scope, locker.id).mentions_removed == 1  # the Memories page

    assert indexer.flush(30)
    assert conversations.list_turns(user.scope, sid) == []


def test_deleting_all_memories_deletes_the_mentions_of_each(new_user):
    user = new_user()
    service = Scope.service(user.user_id)
    sid = f"all-{user.user_id}"
    conversations.store_turns(service, _turns(sid, FORGET_SESSION, T0))
    memories.remember(service, "favorite_color", "teal")
    memories.remember(service, "usual_order", "oat flat white")
    assert memories.delete_all(user.scope).memories == 2  # the Memories page, as the user
    assert [t.content for t in conversations.list_turns(user.scope, sid)] == [FORGET_SESSION[i][1] for i in (3, 6)]
    assert lexicon(user.user_id) == recount(user.user_id)


def test_a_forgotten_text_too_short_to_match_safely_deletes_no_turns(new_user):
    user = new_user()
    service = Scope.service(user.user_id)
    sid = f"short-{user.user_id}"
    conversations.store_turns(service, _turns(sid, [("user", "Jo is fine. Call me Jo."), ("user", "no")], T0))
    memories.remember(service, "nickname", "Jo")
    assert memories.forget(service, "nickname").mentions_removed == 0
    assert len(conversations.list_turns(user.scope, sid)) == 2


def test_a_forgotten_text_of_only_stop_words_deletes_no_turns(new_user):
    """'my favorite color is the' stores "the": deleting it must not take every turn that says "the"."""
    user = new_user()
    service = Scope.service(user.user_id)
    sid = f"stop-{user.user_id}"
    conversations.store_turns(service, _turns(sid, FORGET_SESSION, T0))
    memories.remember(service, "favorite_color", "the")
    memories.remember(service, "mood", "it is what it is")
    assert conversations.count_mentions(user.scope, ["the", "it is what it is"]) == 0
    assert memories.forget(service, "favorite_color").mentions_removed == 0
    mood = memories.recall(user.scope, "mood")
    assert memories.delete_memory(user.scope, mood.id).mentions_removed == 0
    assert len(conversations.list_turns(user.scope, sid)) == len(FORGET_SESSION)


def test_the_count_shown_before_deleting_is_what_deleting_removes(new_user):
    """The Memories page says how many messages go before it asks to confirm: the same rule, counted once
    per turn even when a turn mentions two of the memories."""
    user, other = new_user(), new_user()
    service = Scope.service(user.user_id)
    sid = f"count-{user.user_id}"
    said = [*FORGET_SESSION, ("user", "A teal mug for my oat flat white, please.")]
    conversations.store_turns(service, _turns(sid, said, T0))
    conversations.store_turns(Scope.service(other.user_id), _turns(f"count-{other.user_id}", said, T0))
    memories.remember(service, "favorite_color", "teal")
    memories.remember(service, "usual_order", "oat flat white")

    assert conversations.count_mentions(user.scope, ["teal"]) == 4
    assert conversations.count_mentions(user.scope, ["oat flat white"]) == 3
    both = conversations.count_mentions(user.scope, ["teal", "oat flat white"])
    assert both == 6  # the last turn mentions both: one message
    assert conversations.count_mentions(other.scope, ["teal"]) == 4  # each user counts only their own
    assert memories.delete_all(user.scope) == memories.DeletedAll(2, both)
    assert len(conversations.list_turns(user.scope, sid)) == len(said) - both
    assert len(conversations.list_turns(other.scope, f"count-{other.user_id}")) == len(said)


def test_users_can_delete_only_their_own_turns(corpus, new_user):
    intruder = new_user()
    with transaction(intruder.scope) as cur:
        cur.execute("delete from public.conversation_turns where user_id = %s", (corpus.owner.user_id,))
        assert cur.rowcount == 0
        cur.execute("delete from public.conversation_turns")
        assert cur.rowcount == 0
    assert len(conversations.list_turns(corpus.owner.scope, corpus.sa)) == len(SESSION_A)


def test_another_user_cannot_delete_my_session(corpus, new_user):
    intruder = new_user()
    with pytest.raises(NotFound):
        sessions.delete_session(intruder.scope, corpus.sa)
    assert sessions.delete_all_sessions(intruder.scope) == 0
    assert len(conversations.list_turns(corpus.owner.scope, corpus.sa)) == len(SESSION_A)


def test_deleting_the_user_deletes_turns_and_statistics(new_user):
    user = new_user()
    conversations.store_turns(Scope.service(user.user_id), _turns(f"gone-{user.user_id}", SESSION_A, T0))
    with db.admin_connection() as conn:
        conn.execute("delete from auth.users where id = %s", (user.user_id,))
    assert user_turns(user.user_id) == [] and lexicon(user.user_id) == ({}, None)


def test_embedding_text_includes_the_speaker():
    assert conversations.embedding_text("user", "I adopted a beagle") == "user: I adopted a beagle"


def test_the_same_text_twice_in_a_batch_gets_one_vector():
    """A greeting said in every session, embedded in batches of turns of other lengths (padded differently),
    came out up to 9e-8 apart per copy on this machine's CPU, and equal turns ranked in no reproducible order:
    `long_history`'s first four sessions, as core.conversations.store_turns embeds them."""
    texts = [conversations.embedding_text(t["speaker"], t["content"]) for t in first_sessions("c01", 4)]
    vectors = embeddings.embed(texts)
    assert vectors.shape == (len(texts), embeddings.DIMENSIONS) and vectors.dtype == np.float32
    first = {}
    for position, text in enumerate(texts):
        first.setdefault(text, position)
    copies = [(first[text], position) for position, text in enumerate(texts) if first[text] != position]
    assert len(copies) > 20 and len(set(texts)) < len(texts)
    assert all(np.array_equal(vectors[a], vectors[b]) for a, b in copies)
    assert len({vectors[position].tobytes() for position in first.values()}) == len(first)  # the rest differ


def test_turn_embeddings_are_stored_in_half_precision(corpus):
    turn = conversations.list_turns(corpus.owner.scope, corpus.sa)[2]
    with db.admin_connection() as conn:
        stored, kind = conn.execute(
            "select embedding::text, pg_typeof(embedding)::text from public.conversation_turns where id = %s",
            (turn.id,),
        ).fetchone()
    expected = embeddings.embed([conversations.embedding_text(turn.speaker, turn.content)])[0]
    assert kind == "extensions.halfvec" or kind == "halfvec"
    values = np.array(json.loads(stored))
    # half-precision numbers (printed with 8 significant digits)
    assert np.allclose(values.astype(np.float16).astype(np.float64), values, rtol=1e-7, atol=0)
    assert np.allclose(values, expected, atol=1e-3) and not np.array_equal(values, expected)


def test_delete_everything_as_the_user_deletes_memories_sessions_and_turns_and_nobody_elses(corpus, new_user):
    user = new_user()
    service = Scope.service(user.user_id)
    memories.remember(service, "favorite_color", "teal")
    conversations.store_turns(service, _turns(f"all-1-{user.user_id}", SESSION_A, T0))
    conversations.store_turns(service, _turns(f"all-2-{user.user_id}", SESSION_B, T0))
    sessions.save_report(service, f"all-2-{user.user_id}", {"playground": {}})
    others_turns = len(user_turns(corpus.owner.user_id))

    deleted = erasure.delete_everything(user.scope)  # as the user: RLS decides what goes
    assert deleted.rows == {"memories": 1, "sessions": 2} and deleted.turns == len(SESSION_A) + len(SESSION_B)
    assert user_turns(user.user_id) == [] and lexicon(user.user_id) == ({}, None)
    assert sessions.list_sessions(user.scope) == [] and memories.list_memories(user.scope) == []
    assert len(user_turns(corpus.owner.user_id)) == others_turns  # another user's turns are untouched
    again = erasure.delete_everything(user.scope)
    assert again.rows == {"memories": 0, "sessions": 0} and again.turns == 0


def test_cleanup_of_abandoned_anonymous_users_removes_their_turns(new_user):
    abandoned, active = new_user(), new_user()
    for user in (abandoned, active):
        conversations.store_turns(Scope.service(user.user_id), _turns(f"kept-{user.user_id}", SESSION_A, T0))
    with db.admin_connection() as conn:
        conn.execute(
            "update auth.users set created_at = now() - interval '90 days', "
            "last_sign_in_at = now() - interval '90 days' where id = %s",
            (abandoned.user_id,),
        )
    maintenance.cleanup(older_than_days=30)
    assert user_turns(abandoned.user_id) == [] and lexicon(abandoned.user_id) == ({}, None)
    with db.admin_connection() as conn:
        assert (
            conn.execute("select count(*) from public.sessions where user_id = %s", (abandoned.user_id,)).fetchone()[0]
            == 0
        )
    assert len(user_turns(active.user_id)) == len(SESSION_A)  # a user seen recently keeps everything


def test_turns_left_without_an_embedding_are_embedded_by_the_cleanup_run(new_user):
    user = new_user()

    def broken(_texts):
        raise EmbeddingUnavailable("model offline")

    turn = conversations.store_turn(
        Scope.service(user.user_id),
        f"left-{user.user_id}",
        0,
        "user",
        "The spare key is under the blue pot.",
        embed=broken,
    )
    assert not turn.embedded  # as a process that exited before its retry pass leaves it
    removed = maintenance.cleanup(older_than_days=3650)
    assert removed["turns_embedded"] >= 1
    assert conversations.get_turn(user.scope, turn.id).embedded


def _told(service, **fields) -> None:
    """Profile details as the agent's update_profile tool sets them."""
    for field, value in fields.items():
        profiles.update_profile(service, field, value)


def test_deleting_all_memories_clears_the_profile_details_the_agent_learned_but_not_the_email(new_user):
    """To the user, "call me Ada" is a memory: after Delete all memories the agent must not greet them by it."""
    user = new_user()
    service = Scope.service(user.user_id)
    _told(service, name="Ada", timezone="Europe/Lisbon", email="ada@example.com", preferences={"units": "metric"})
    memories.remember(service, "favorite_color", "teal")
    assert memories.learned_profile(user.scope) == {
        "name": "Ada",
        "timezone": "Europe/Lisbon",
        "preferences": {"units": "metric"},
    }
    assert memories.delete_all(user.scope) == memories.DeletedAll(1, 0, profile_cleared=True)  # as the user, RLS
    profile = profiles.get_profile(user.scope)
    assert (profile.name, profile.timezone, profile.preferences) == (None, None, {})
    assert profile.email == "ada@example.com"
    assert memories.learned_profile(user.scope) == {}
    assert memories.delete_all(user.scope) == memories.DeletedAll(0, 0, profile_cleared=False)


def test_forgetting_the_name_slot_clears_the_profile_name_and_only_that(new_user):
    user = new_user()
    service = Scope.service(user.user_id)
    _told(service, name="Ada", timezone="Europe/Lisbon")
    memories.remember(service, "name", "Ada")
    memories.remember(service, "favorite_color", "teal")
    memories.forget(service, "favorite_color")
    assert profiles.get_profile(user.scope).name == "Ada"  # another slot: the name stays
    memories.forget(service, "name")  # the agent's tool, as the scoped service
    assert profiles.get_profile(user.scope).name is None
    assert profiles.get_profile(user.scope).timezone == "Europe/Lisbon"
    profiles.update_profile(service, "name", "Ada")
    memories.remember(service, "name", "Ada")
    named = memories.recall(user.scope, "name")
    memories.delete_memory(user.scope, named.id)  # the Memories page, as the user
    assert profiles.get_profile(user.scope).name is None
    assert memories.clear_learned_profile(user.scope) is True
    assert profiles.get_profile(user.scope).timezone is None


def test_counting_and_deleting_the_mentions_of_many_memories_finds_exactly_theirs(new_user):
    """A visitor with many memories and a long history: the Memories page counts the mentions of every
    memory on each view. With more texts than Postgres keeps compiled regular expressions (32), `~* any`
    recompiled each pattern on every turn (150 texts over 1,200 turns took about 9 s; 1,500 over 20,000
    never finished), so turns are now narrowed by their words first: the same turns must be found. (How
    long it takes is not asserted here: see docs/APP.md for the heavy visitor's figures.)"""
    user = new_user()
    service = Scope.service(user.user_id)

    def no_model(texts):  # stored without embeddings (they are made later): only the text matters here
        raise EmbeddingUnavailable("not needed for this test")

    said = [("user", f"note {i}: the weather on day {i} was mild") for i in range(1197)]
    said += [("user", "my oat flat white was cold"), ("assistant", "Noted: an oat flat white."), ("user", "Teal!")]
    for start in range(0, len(said), 400):
        rows = [TurnInput("many", i, s, c, T0) for i, (s, c) in enumerate(said) if start <= i < start + 400]
        conversations.store_turns(service, rows, embed=no_model)
    texts = [f"reminder number {i} about lunch" for i in range(148)] + ["oat flat white", "teal"]
    for index, text in enumerate(texts):
        memories.remember(service, f"slot_{index}", text, embed=lambda _t: np.eye(384, dtype=np.float32)[0])

    assert conversations.count_mentions(user.scope, texts) == 3
    assert conversations.count_mentions(user.scope, ["oat flat white"]) == 2  # whole words, any case
    assert memories.delete_all(user.scope).mentions_removed == 3
    assert len(conversations.list_turns(user.scope, "many")) == 1197


def test_one_rule_for_one_string_and_for_many():
    """core.conversations.Mentions decides for one report string (calling it) and for a visitor's turns
    (`among`, through a word index) by the same rule: whole words, any case, any spaces between them."""
    texts = ["oat flat white", "Teal", "C++ (old)", "note 7", "!!"]
    strings = [
        "my OAT  flat white was cold",  # any case, any run of spaces
        "oat flat whites are popular",  # not as whole words
        "teal.",
        "Tealish",
        "I code in c++ (old) style",
        "note 17 and note 71",
        "see note 7, please",
        "so !! there",  # a text of symbols only: tried on every string
        "",
        "white flat oat",  # every word, not the text
    ]
    says = conversations.Mentions(texts)
    assert says.among(strings) == [i for i, string in enumerate(strings) if says(string)] == [0, 2, 4, 6, 7]
    assert not conversations.Mentions([]) and conversations.Mentions([]).among(strings) == []
