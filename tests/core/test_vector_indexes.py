"""A heavy user's own HNSW index (core.vector_indexes, public.nearest_conversation_turns) against the real
embedded Postgres: the maintenance job builds it from the threshold on, the search reads it (pg_stat counts
the scans) and still answers what the exact ranking answers, a window of days reads exactly, RLS still
decides, and the job drops what is no longer needed and rebuilds what a failed build left."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import numpy as np
import pytest

from core import conversations, db, identity, vector_indexes
from core.conversations import TurnInput
from core.date_window import DateWindow
from core.db import Scope, vector_literal
from core.retrieval import search_conversations

HEAVY_TURNS = 2_000
# above every other test's users (the most turns any has is about 1,200), so only this module's get one
MIN_TURNS = 1_500
T0 = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
SESSION_TURNS = 50


def _sign_in():
    verified = identity.verify(identity.sign_in_anonymously().access_token)
    return SimpleNamespace(
        scope=Scope.for_user(verified), user_id=verified.user_id, service=Scope.service(verified.user_id)
    )


def _unit(rng, n):
    v = rng.standard_normal((n, 384)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _store(user, count, rng):
    """`count` turns in sessions of 50, a turn a minute, each with its own random unit vector."""
    vectors = _unit(rng, count)
    turns = [
        TurnInput(
            f"vi-{user.user_id}-{i // SESSION_TURNS}",
            i % SESSION_TURNS,
            "user",
            f"note {i} about lunch",
            T0 + timedelta(minutes=i),
        )
        for i in range(count)
    ]
    stored = conversations.store_turns(user.service, turns, embed=lambda texts: vectors[: len(texts)])
    # store_turns embeds the batch in order: turn i has vectors[i]
    return {turn.id: vectors[i] for i, turn in enumerate(stored)}


def _exact(vectors_by_id, query, ids=None):
    """The ids by cosine distance, nearest first (ties by id), as the exact branch ranks them."""
    items = [(float(1 - vectors_by_id[i] @ query), i) for i in (ids if ids is not None else vectors_by_id)]
    return [i for _, i in sorted(items)]


# this transaction's index scans of an index (there is no pg_stat_xact view of indexes)
SCANS = "select coalesce(pg_stat_get_xact_numscans(to_regclass('public.' || %s)), 0) as scans"


def _exists(name):
    with db.admin_connection() as conn:
        return conn.execute("select to_regclass(%s) is not null", (f"public.{name}",)).fetchone()[0]


def _vector_branch(user_id, query, *, exclude=None, since=None, before=None, depth=40):
    """The search's vector branch as the service, and how many times it scanned the user's index (this
    transaction's count: exact, no waiting for the statistics to be flushed)."""
    name = vector_indexes.index_name(user_id)
    with db.admin_connection() as conn, conn.transaction():
        conn.execute("set local role service_role")
        rows = conn.execute(
            "select id, distance from public.nearest_conversation_turns("
            "%s, %s::extensions.halfvec(384), %s, %s, %s, %s)",
            (user_id, vector_literal(query), depth, exclude, since, before),
        ).fetchall()
        conn.execute("reset role")
        scans = conn.execute(SCANS, (name,)).fetchone()[0]
    return rows, scans


@pytest.fixture(scope="module")
def heavy(database_uri):
    rng = np.random.default_rng(11)
    user, light = _sign_in(), _sign_in()
    # Statistics taken before the heavy user's turns, and kept so while the module runs: the planner then
    # thinks the user has a handful of turns, as it does of a user who grew since the last analyze.
    with db.admin_connection() as conn:
        conn.execute("alter table public.conversation_turns set (autovacuum_enabled = off)")
        conn.execute("analyze public.conversation_turns")
    vectors = _store(user, HEAVY_TURNS, rng)
    _store(light, 60, rng)
    changes = vector_indexes.keep_vector_indexes(MIN_TURNS)
    with db.admin_connection() as conn:
        session_of = dict(
            conn.execute("select id, session_id from public.conversation_turns where user_id = %s", (user.user_id,))
        )
    yield SimpleNamespace(
        user=user,
        light=light,
        vectors=vectors,
        session_of=session_of,
        changes=changes,
        rng=rng,
        index=vector_indexes.index_name(user.user_id),
    )
    with db.admin_connection() as conn:
        conn.execute("delete from auth.users where id = any(%s)", ([user.user_id, light.user_id],))
        conn.execute("alter table public.conversation_turns reset (autovacuum_enabled)")
    vector_indexes.keep_vector_indexes(MIN_TURNS)  # drops this module's index with its user


def test_the_job_builds_an_index_for_the_heavy_user_only(heavy):
    assert heavy.user.user_id in heavy.changes.built
    assert heavy.light.user_id not in heavy.changes.built
    with db.admin_connection() as conn:
        [sql_name] = conn.execute(
            "select public.conversation_turns_vector_index_name(%s)", (heavy.user.user_id,)
        ).fetchone()
        definition = conn.execute(
            "select i.indisvalid, pg_get_indexdef(i.indexrelid) from pg_index i where i.indexrelid = to_regclass(%s)",
            (f"public.{heavy.index}",),
        ).fetchone()
        light_index = conn.execute(
            "select to_regclass(%s)", (f"public.{vector_indexes.index_name(heavy.light.user_id)}",)
        ).fetchone()[0]
    assert sql_name == heavy.index  # the search and the job name it alike
    valid, ddl = definition
    assert valid and "USING hnsw" in ddl and str(heavy.user.user_id) in ddl
    assert light_index is None
    # run again: nothing to do
    again = vector_indexes.keep_vector_indexes(MIN_TURNS)
    assert heavy.user.user_id not in again.built and heavy.index not in again.dropped


def test_the_search_reads_the_heavy_users_index_and_finds_the_exact_top_ten(heavy):
    # the planner's statistics do not know the user's 2,000 turns yet (the fixture)
    for query in _unit(heavy.rng, 5):
        rows, scans = _vector_branch(heavy.user.user_id, query)
        assert scans == 1
        assert len(rows) == 40
        # every distance is the turn's own (half precision), nearest first
        for turn_id, distance in rows:
            assert distance == pytest.approx(1 - heavy.vectors[turn_id] @ query, abs=2e-3)
        assert [d for _, d in rows] == sorted(d for _, d in rows)
        assert len({i for i, _ in rows[:10]} & set(_exact(heavy.vectors, query)[:10])) >= 9
    # The whole search through core, as the service: its vector ranks are the branch's.
    query = _unit(heavy.rng, 1)[0]
    found = search_conversations(heavy.user.service, "lunch", mode="vector", limit=10, embed=lambda _: query)
    assert [h.vector_rank for h in found.hits] == list(range(1, 11))
    assert len({h.id for h in found.hits} & set(_exact(heavy.vectors, query)[:10])) >= 9


def test_a_window_of_days_and_a_light_user_rank_exactly_without_the_index(heavy):
    # with statistics that know the heavy user's size (their graph then looks cheap to the planner)
    with db.admin_connection() as conn:
        conn.execute("analyze public.conversation_turns")
    query = _unit(heavy.rng, 1)[0]
    since, until = DateWindow.from_dates("2025-01-06", "2025-01-06").bounds()  # the first 900 turns
    rows, scans = _vector_branch(heavy.user.user_id, query, since=since, before=until)
    on_the_day = _ids_said_between(heavy.user.user_id, since, until)
    assert len(on_the_day) == 900
    assert [i for i, _ in rows] == _exact(heavy.vectors, query, on_the_day)[:40]
    assert scans == 0
    light, scans = _vector_branch(heavy.light.user_id, query, depth=10)
    assert len(light) == 10 and [d for _, d in light] == sorted(d for _, d in light) and scans == 0
    # and without a window, the heavy user's graph is still what is read
    assert _vector_branch(heavy.user.user_id, query)[1] == 1


def _ids_said_between(user_id, since, until):
    with db.admin_connection() as conn:
        rows = conn.execute(
            "select id from public.conversation_turns where user_id = %s and created_at >= %s and created_at < %s",
            (user_id, since, until),
        ).fetchall()
    return [r[0] for r in rows]


def test_the_session_going_on_is_left_out_through_the_index(heavy):
    query = _unit(heavy.rng, 1)[0]
    [(nearest, _)], _ = _vector_branch(heavy.user.user_id, query, depth=1)
    with db.admin_connection() as conn:
        [session_id] = conn.execute(
            "select session_id from public.conversation_turns where id = %s", (nearest,)
        ).fetchone()
    rows, scans = _vector_branch(heavy.user.user_id, query, exclude=session_id)
    assert scans == 1 and len(rows) == 40
    assert nearest not in {i for i, _ in rows}
    assert all(heavy.session_of[i] != session_id for i, _ in rows)


def test_as_a_user_rls_still_decides(heavy):
    query = _unit(heavy.rng, 1)[0]
    own = search_conversations(heavy.user.scope, "lunch", mode="vector", limit=5, embed=lambda _: query)
    assert len(own.hits) == 5 and all(h.id in heavy.vectors for h in own.hits)
    assert len({h.id for h in own.hits} & set(_exact(heavy.vectors, query)[:5])) >= 4
    # as the user, the branch reads their graph, under their RLS
    with db.transaction(heavy.user.scope) as cur:
        cur.execute(
            "select id from public.nearest_conversation_turns(%s, %s::extensions.halfvec(384), 40)",
            (heavy.user.user_id, vector_literal(query)),
        )
        assert len({r["id"] for r in cur.fetchall()} & set(heavy.vectors)) == 40
        cur.execute(SCANS, (heavy.index,))
        assert cur.fetchone()["scans"] == 1
    # another signed-in user naming the heavy user's id gets none of their turns
    with db.transaction(heavy.light.scope) as cur:
        cur.execute(
            "select id from public.nearest_conversation_turns(%s, %s::extensions.halfvec(384), 40)",
            (heavy.user.user_id, vector_literal(query)),
        )
        assert cur.fetchall() == []
        cur.execute(
            "select id from public.match_conversation_turns_hybrid(%s::extensions.vector, 'lunch', %s)",
            (vector_literal(query), heavy.user.user_id),
        )
        assert cur.fetchall() == []


def test_the_job_drops_what_is_not_needed_and_rebuilds_a_broken_index(heavy):
    # a concurrent build that was interrupted leaves an invalid index: the search does not read it, the job
    # replaces it
    with db.admin_connection() as conn:
        conn.execute(
            "update pg_catalog.pg_index set indisvalid = false where indexrelid = to_regclass(%s)",
            (f"public.{heavy.index}",),
        )
    query = _unit(heavy.rng, 1)[0]
    rows, scans = _vector_branch(heavy.user.user_id, query)
    assert scans == 0 and [i for i, _ in rows] == _exact(heavy.vectors, query)[:40]
    changes = vector_indexes.keep_vector_indexes(MIN_TURNS)
    assert heavy.index in changes.dropped and heavy.user.user_id in changes.built
    assert _vector_branch(heavy.user.user_id, query)[1] == 1
    # a user with fewer than half of the threshold's turns: dropped
    changes = vector_indexes.keep_vector_indexes(HEAVY_TURNS * 2 + 2)
    assert heavy.index in changes.dropped and not _exists(heavy.index)
    assert _vector_branch(heavy.user.user_id, query)[1] == 0
    # between half the threshold and the threshold: one it has stays, none is built
    changes = vector_indexes.keep_vector_indexes(HEAVY_TURNS * 2)
    assert heavy.user.user_id not in changes.built and not _exists(heavy.index)
    changes = vector_indexes.keep_vector_indexes(MIN_TURNS)
    assert heavy.user.user_id in changes.built and _exists(heavy.index)
    changes = vector_indexes.keep_vector_indexes(HEAVY_TURNS * 2)
    assert heavy.index not in changes.dropped and _exists(heavy.index)


def test_an_index_that_cannot_be_built_leaves_the_search_exact_and_the_job_running(heavy, monkeypatch, capsys):
    from core.__main__ import _cleanup
    from core.config import get_settings

    with db.admin_connection() as conn:
        conn.execute(f"drop index public.{heavy.index}")
    monkeypatch.setattr(vector_indexes, "HNSW_OPTIONS", "m = 1")  # refused by pgvector: m is at least 2
    changes = vector_indexes.keep_vector_indexes(MIN_TURNS)
    assert heavy.user.user_id in changes.failed and heavy.user.user_id not in changes.built
    query = _unit(heavy.rng, 1)[0]
    rows, scans = _vector_branch(heavy.user.user_id, query)
    assert scans == 0 and [i for i, _ in rows] == _exact(heavy.vectors, query)[:40]
    # `python -m core cleanup` (which `make run` runs) says so and goes on
    monkeypatch.setattr(get_settings(), "vector_index_min_turns", MIN_TURNS)
    _cleanup(None)
    # (other tests' heavy users, if any, fail the same way)
    assert re.search(r"index\(es\) built, \d+ dropped, [1-9]\d* could not be built", capsys.readouterr().out)
    monkeypatch.undo()
    assert heavy.user.user_id in vector_indexes.keep_vector_indexes(MIN_TURNS).built


def test_the_cleanup_job_keeps_the_indexes(heavy, monkeypatch):
    from core import maintenance
    from core.config import get_settings

    with db.admin_connection() as conn:
        conn.execute(f"drop index public.{heavy.index}")
    monkeypatch.setattr(get_settings(), "vector_index_min_turns", MIN_TURNS)
    removed = maintenance.cleanup()
    assert removed["vector_indexes_built"] >= 1 and _exists(heavy.index)
    assert _vector_branch(heavy.user.user_id, _unit(heavy.rng, 1)[0])[1] == 1
