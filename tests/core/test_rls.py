"""Row Level Security, statement by statement: user A against user B's rows.

Every statement runs through core.db.transaction(Scope.for_user(A)) exactly as
the app runs it (role `authenticated` + the verified JWT claims), so the
policies and grants in supabase/migrations decide. Each refusal is paired with
the same statement on A's own rows succeeding, so "0 rows" cannot come from a
broken query.
"""

from __future__ import annotations

import json
import uuid
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import psycopg
import pytest
from psycopg.rows import dict_row

from core import db, embeddings, memories, profiles, sessions
from core.db import Scope, transaction, vector_literal
from core.errors import InvalidInput, NotFound, SessionDeleted
from core.retrieval import search_memories
from tests.support.users import sign_in, stored_rows

UNIT_VECTOR = vector_literal([1.0] + [0.0] * (embeddings.DIMENSIONS - 1))
SECRET_SLOT = "secret_plan"
SECRET_TEXT = "B's secret plan is to open a zeppelin bakery"


@pytest.fixture(scope="module")
def users(database_uri):
    """A and B, each with memories, a profile name and a session report."""
    a, b = sign_in(), sign_in()
    memories.remember(a.scope, "hometown", "A grew up in Lisbon")
    memories.remember(b.scope, SECRET_SLOT, SECRET_TEXT)
    memories.remember(b.scope, "pet", "B has a tortoise called Dash")
    profiles.update_profile(a.scope, "name", "Ana")
    profiles.update_profile(b.scope, "name", "Bruno")
    started = datetime.now(UTC) - timedelta(minutes=5)
    sessions.save_report(a.service, f"sess-a-{uuid.uuid4().hex}", {"turns": 1}, started_at=started)
    sessions.save_report(
        b.service, f"sess-b-{uuid.uuid4().hex}", {"turns": 7, "secret": SECRET_TEXT}, started_at=started
    )
    return SimpleNamespace(a=a, b=b)


def shared_counts() -> tuple:
    with db.admin_connection() as conn:
        return conn.execute(
            "select (select count(*) from public.knowledge), (select count(*) from public.orders), "
            "(select md5(string_agg(order_id || status || total::text, ',' order by order_id)) "
            " from public.orders)"
        ).fetchone()


def run_as(scope: Scope, sql: str, params=None):
    """Run one statement as `scope`; return (rowcount, rows)."""
    with transaction(scope) as cur:
        cur.execute(sql, params)
        rows = cur.fetchall() if cur.description else []
        return cur.rowcount, rows


def assert_refused(scope: Scope, sql: str, params=None, *, match: str):
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match=match):
        run_as(scope, sql, params)


@contextmanager
def as_role(role: str, claims: dict | None = None):
    """A transaction as a bare role (e.g. `anon`), which core.db never offers."""
    with db.get_pool().connection() as conn, conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        cur.execute(f"set local role {role}")
        if claims is not None:  # signed as core.db does, or auth.jwt() refuses them
            raw, mac = db.signed_claims(claims, db.claims_key())
            cur.execute(
                "select set_config('request.jwt.claims', %s, true), set_config('request.jwt.claims_mac', %s, true)",
                (raw, mac),
            )
        yield cur


# ---------------------------------------------------------------------------
# memories: full CRUD on own rows, nothing on anyone else's
# ---------------------------------------------------------------------------


def test_memories_select_sees_only_own_rows(users):
    a, b = users.a, users.b
    assert run_as(a.scope, "select * from public.memories where user_id = %s", (b.user_id,)) == (0, [])
    _, rows = run_as(a.scope, "select user_id, content from public.memories")
    assert rows and {row["user_id"] for row in rows} == {a.user_id}
    _, found = run_as(a.scope, "select * from public.memories where content ilike '%%zeppelin%%'")
    assert found == []
    # B sees the row A could not
    _, own = run_as(b.scope, "select content from public.memories where memory_type = %s", (SECRET_SLOT,))
    assert own == [{"content": SECRET_TEXT}]


def test_memories_insert_for_another_user_is_refused(users):
    a, b = users.a, users.b
    before = stored_rows(b.user_id)
    assert_refused(
        a.scope,
        "insert into public.memories (user_id, memory_type, content, embedding) "
        "values (%s, 'planted', 'planted by A', %s::extensions.vector)",
        (b.user_id, UNIT_VECTOR),
        match="row-level security",
    )
    assert stored_rows(b.user_id) == before
    # the same insert for A itself is allowed
    count, rows = run_as(
        a.scope,
        "insert into public.memories (user_id, memory_type, content, embedding) "
        "values (%s, 'own_insert', 'fine', %s::extensions.vector) returning user_id",
        (a.user_id, UNIT_VECTOR),
    )
    assert count == 1 and rows[0]["user_id"] == a.user_id
    memories.forget(a.scope, "own_insert")


def test_memories_update_and_delete_of_another_users_rows_touch_nothing(users):
    a, b = users.a, users.b
    before = stored_rows(b.user_id)
    assert run_as(a.scope, "update public.memories set content = 'hacked' where user_id = %s", (b.user_id,))[0] == 0
    assert (
        run_as(a.scope, "update public.memories set content = 'hacked' where memory_type = %s", (SECRET_SLOT,))[0] == 0
    )
    assert run_as(a.scope, "delete from public.memories where user_id = %s", (b.user_id,))[0] == 0
    own_count = len(stored_rows(a.user_id)["memories"])
    assert own_count > 0
    assert run_as(a.scope, "delete from public.memories")[0] == own_count  # a blanket delete reaches A's rows only
    assert stored_rows(b.user_id) == before
    memories.remember(a.scope, "hometown", "A grew up in Lisbon")  # restore what the blanket delete removed


def test_memories_cannot_be_handed_to_another_user(users):
    a, b = users.a, users.b
    mine = memories.remember(a.scope, "gift", "A's row").memory
    assert_refused(
        a.scope,
        "update public.memories set user_id = %s where id = %s",
        (b.user_id, mine.id),
        match="row-level security",
    )
    assert memories.recall(a.scope, "gift").id == mine.id
    assert [m for m in stored_rows(b.user_id)["memories"] if m["memory_type"] == "gift"] == []
    memories.forget(a.scope, "gift")


def test_hybrid_function_with_another_users_id_returns_nothing(users):
    a, b = users.a, users.b
    query_vector = vector_literal(embeddings.embed_one(SECRET_TEXT))
    sql = "select * from public.match_memories_hybrid(%s::extensions.vector, %s, %s, %s)"
    assert run_as(a.scope, sql, (query_vector, SECRET_TEXT, b.user_id, 50)) == (0, [])
    assert run_as(a.scope, sql, (None, "zeppelin bakery", b.user_id, 50)) == (0, [])
    # positive controls: B finds it as B, and A finds A's own rows as A
    _, as_b = run_as(b.scope, sql, (query_vector, SECRET_TEXT, b.user_id, 50))
    assert as_b[0]["content"] == SECRET_TEXT
    _, as_a = run_as(a.scope, sql, (query_vector, SECRET_TEXT, a.user_id, 50))
    assert as_a and all(row["content"] != SECRET_TEXT for row in as_a)


# ---------------------------------------------------------------------------
# profiles: read and update own (allowed columns only); no insert/delete
# ---------------------------------------------------------------------------


def test_profiles_created_by_trigger_for_anonymous_users(database_uri):
    user = sign_in()
    with db.admin_connection() as conn:
        is_anonymous, profile_id = conn.execute(
            "select u.is_anonymous, p.id from auth.users u left join public.profiles p on p.id = u.id where u.id = %s",
            (user.user_id,),
        ).fetchone()
    assert is_anonymous is True and profile_id == user.user_id
    assert profiles.get_profile(user.scope).id == user.user_id


def test_profiles_select_sees_only_own_row(users):
    a, b = users.a, users.b
    assert run_as(a.scope, "select * from public.profiles where id = %s", (b.user_id,)) == (0, [])
    _, rows = run_as(a.scope, "select id, name from public.profiles")
    assert rows == [{"id": a.user_id, "name": "Ana"}]


def test_profiles_update_of_another_user_touches_nothing(users):
    a, b = users.a, users.b
    before = stored_rows(b.user_id)
    assert run_as(a.scope, "update public.profiles set name = 'Mallory' where id = %s", (b.user_id,))[0] == 0
    assert run_as(a.scope, "update public.profiles set name = 'Mallory'")[0] == 1  # only A's own row
    assert stored_rows(b.user_id) == before
    profiles.update_profile(a.scope, "name", "Ana")


def test_profiles_id_cannot_be_changed(users):
    a, b = users.a, users.b
    assert_refused(
        a.scope,
        "update public.profiles set id = %s where id = %s",
        (uuid.uuid4(), a.user_id),
        match="permission denied",
    )
    assert_refused(
        a.scope, "update public.profiles set id = %s where id = %s", (b.user_id, a.user_id), match="permission denied"
    )
    assert_refused(
        a.scope, "update public.profiles set created_at = now() where id = %s", (a.user_id,), match="permission denied"
    )
    assert profiles.get_profile(a.scope).id == a.user_id


def test_profiles_insert_and_delete_are_refused(users):
    a, b = users.a, users.b
    before = stored_rows(b.user_id)
    assert_refused(
        a.scope, "insert into public.profiles (id, name) values (%s, 'x')", (a.user_id,), match="permission denied"
    )
    assert_refused(a.scope, "delete from public.profiles where id = %s", (b.user_id,), match="permission denied")
    assert_refused(a.scope, "delete from public.profiles where id = %s", (a.user_id,), match="permission denied")
    assert stored_rows(b.user_id) == before
    assert stored_rows(a.user_id)["profile"] is not None


# ---------------------------------------------------------------------------
# knowledge and orders: shared, read-only for users
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "table,key,insert,update",
    [
        (
            "knowledge",
            "id",
            "insert into public.knowledge (title, content, embedding) "
            f"values ('planted', 'x', '{UNIT_VECTOR}'::extensions.vector)",
            "update public.knowledge set content = 'defaced'",
        ),
        (
            "orders",
            "order_id",
            "insert into public.orders (order_id, customer_name, status, total, placed_at) "
            "values ('X-1', 'Mallory', 'shipped', 1, now())",
            "update public.orders set status = 'cancelled'",
        ),
    ],
)
def test_shared_tables_are_read_only_for_users(users, table, key, insert, update):
    a = users.a
    before = shared_counts()
    count, rows = run_as(a.scope, f"select {key} from public.{table}")
    assert count > 0 and len(rows) == before[0 if table == "knowledge" else 1]
    assert_refused(a.scope, insert, match="permission denied")
    assert_refused(a.scope, update, match="permission denied")
    assert_refused(a.scope, f"delete from public.{table}", match="permission denied")
    assert shared_counts() == before


def test_english_word_rarity_is_read_only_for_users(users):
    count, rows = run_as(users.a.scope, "select lexeme from public.english_word_rarity where lexeme = 'drill'")
    assert count == 1 and rows
    for sql in (
        "insert into public.english_word_rarity (lexeme, rarity) values ('planted', 1)",
        "update public.english_word_rarity set rarity = 99",
        "delete from public.english_word_rarity",
    ):
        assert_refused(users.a.scope, sql, match="permission denied")
    with db.admin_connection() as conn:
        assert conn.execute("select count(*) from public.english_word_rarity").fetchone()[0] == 5000


# ---------------------------------------------------------------------------
# sessions: users read their own; only the service writes
# ---------------------------------------------------------------------------


def test_sessions_select_sees_only_own_reports(users):
    a, b = users.a, users.b
    assert run_as(a.scope, "select * from public.sessions where user_id = %s", (b.user_id,)) == (0, [])
    _, rows = run_as(a.scope, "select user_id, report from public.sessions")
    assert len(rows) == 1 and rows[0]["user_id"] == a.user_id
    assert all(SECRET_TEXT not in json.dumps(row["report"]) for row in rows)
    assert [s.user_id for s in sessions.list_sessions(a.scope)] == [a.user_id]


def test_sessions_cannot_be_written_by_users_even_their_own_but_they_can_delete_their_own(users):
    """Only the service writes reports; a user can delete their own and nobody else's."""
    a, b = users.a, users.b
    own_id = stored_rows(a.user_id)["sessions"][0]["session_id"]
    before_a, before_b = stored_rows(a.user_id), stored_rows(b.user_id)
    assert_refused(
        a.scope,
        "insert into public.sessions (session_id, user_id) values (%s, %s)",
        (f"forged-{uuid.uuid4().hex}", a.user_id),
        match="permission denied",
    )
    assert_refused(
        a.scope,
        "insert into public.sessions (session_id, user_id) values (%s, %s)",
        (f"forged-{uuid.uuid4().hex}", b.user_id),
        match="permission denied",
    )
    assert_refused(
        a.scope, "update public.sessions set report = '{}' where session_id = %s", (own_id,), match="permission denied"
    )
    assert_refused(
        a.scope, "update public.sessions set report = '{}' where user_id = %s", (b.user_id,), match="permission denied"
    )
    # Owners may delete their own sessions (tests/core/test_conversations.py); another user's are invisible.
    b_session = stored_rows(b.user_id)["sessions"][0]["session_id"]
    assert run_as(a.scope, "delete from public.sessions where user_id = %s", (b.user_id,))[0] == 0
    assert run_as(a.scope, "delete from public.sessions where session_id = %s", (b_session,))[0] == 0
    assert stored_rows(a.user_id) == before_a and stored_rows(b.user_id) == before_b
    with pytest.raises(InvalidInput, match="written by the service"):
        sessions.save_report(a.scope, f"as-user-{uuid.uuid4().hex}", {"x": 1})
    own = before_a["sessions"][0]
    assert run_as(a.scope, "delete from public.sessions")[0] == len(before_a["sessions"])  # a blanket delete: A's only
    assert stored_rows(b.user_id) == before_b
    # a deleted session stays deleted: a late report of it is not kept (tests/core/test_erasure.py)
    with pytest.raises(SessionDeleted):
        sessions.save_report(Scope.service(a.user_id), own["session_id"], own["report"])
    with db.admin_connection() as conn:  # the fixture's data is shared by later tests: undo the deletion as the owner
        conn.execute("delete from memory_playground_private.deleted_sessions where user_id = %s", (a.user_id,))
    sessions.save_report(  # restore what the blanket delete removed
        Scope.service(a.user_id), own["session_id"], own["report"], room_name=own["room_name"]
    )


# ---------------------------------------------------------------------------
# auth schema, anon, missing claims, no leaking between pooled transactions
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "select * from auth.users",
        "select token_hash from auth.refresh_tokens",
        "update auth.users set is_anonymous = false",
        "create table public.planted (id int)",
        "create function public.planted() returns int language sql as 'select 1'",
    ],
)
def test_users_cannot_reach_auth_tables_or_create_objects(users, sql):
    assert_refused(users.a.scope, sql, match="permission denied")


@pytest.mark.parametrize("table", ["profiles", "knowledge", "memories", "orders", "sessions", "english_word_rarity"])
def test_anon_role_reads_nothing(users, table):
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"), as_role("anon") as cur:
        cur.execute(f"select * from public.{table}")
    # even with another user's claims in hand, anon is still anon
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"),
        as_role("anon", {"sub": str(users.b.user_id), "role": "anon"}) as cur,
    ):
        cur.execute(f"select * from public.{table}")


def test_anon_role_cannot_call_the_search_functions(users):
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"), as_role("anon") as cur:
        cur.execute("select * from public.match_memories_hybrid(null, 'zeppelin', %s)", (users.b.user_id,))
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"), as_role("anon") as cur:
        cur.execute("select * from public.match_knowledge(%s::extensions.vector)", (UNIT_VECTOR,))


@pytest.mark.parametrize("table,key", [("profiles", "id"), ("memories", "user_id"), ("sessions", "user_id")])
def test_authenticated_without_claims_sees_no_private_rows(users, table, key):
    with as_role("authenticated") as cur:
        cur.execute(f"select count(*) as n from public.{table}")
        assert cur.fetchone()["n"] == 0
    # with B's claims set, exactly B's rows
    with as_role("authenticated", {"sub": str(users.b.user_id), "role": "authenticated"}) as cur:
        cur.execute(f"select distinct {key} as owner from public.{table}")
        assert [row["owner"] for row in cur.fetchall()] == [users.b.user_id]


def test_scope_for_user_refuses_claims_for_someone_else(users):
    mismatched = SimpleNamespace(user_id=users.a.user_id, claims={**users.b.verified.claims})
    with pytest.raises(InvalidInput, match="do not match"):
        Scope.for_user(mismatched)


def test_role_and_claims_do_not_leak_to_the_next_borrower(users):
    run_as(users.a.scope, "select 1")
    pool = db.get_pool()
    for _ in range(pool.max_size):  # every pooled connection, in turn
        with pool.connection() as conn:
            user, claims = conn.execute("select current_user, current_setting('request.jwt.claims', true)").fetchone()
            assert user != "authenticated"
            assert not claims


# ---------------------------------------------------------------------------
# The service scope bypasses RLS; the code's own filter is what keeps users apart
# ---------------------------------------------------------------------------


def test_service_scope_bypasses_rls_so_raw_sql_sees_everyone(users):
    a, b = users.a, users.b
    _, rows = run_as(
        a.service, "select distinct user_id from public.memories where user_id in (%s, %s)", (a.user_id, b.user_id)
    )
    assert {row["user_id"] for row in rows} == {a.user_id, b.user_id}


def test_memory_services_with_service_scope_never_touch_another_user(users):
    a, b = users.a, users.b
    service_a = a.service
    before_b = stored_rows(b.user_id)
    secret_id = next(m["id"] for m in before_b["memories"] if m["memory_type"] == SECRET_SLOT)

    assert {m.memory_type for m in memories.list_memories(service_a)} == {
        m["memory_type"] for m in stored_rows(a.user_id)["memories"]
    }
    with pytest.raises(NotFound):
        memories.recall(service_a, SECRET_SLOT)
    with pytest.raises(NotFound):
        memories.forget(service_a, SECRET_SLOT)
    with pytest.raises(NotFound):
        memories.delete_memory(service_a, secret_id)
    with pytest.raises(NotFound):
        memories.update_memory(service_a, secret_id, "overwritten by A")
    found = search_memories(service_a, "zeppelin bakery secret plan", limit=50)
    assert all(hit.content != SECRET_TEXT for hit in found.hits)
    assert all(m["memory_type"] != SECRET_SLOT for m in memories.export(service_a)["memories"])

    # writing A's slot of the same name creates A's row and leaves B's alone
    written = memories.remember(service_a, SECRET_SLOT, "A's own plan")
    assert written.created is True and written.previous_content is None
    own_count = len(stored_rows(a.user_id)["memories"])
    assert own_count >= 2
    assert memories.delete_all(service_a).memories == own_count
    assert stored_rows(a.user_id)["memories"] == []
    assert stored_rows(b.user_id) == before_b
    memories.remember(a.scope, "hometown", "A grew up in Lisbon")


def test_profile_and_session_services_with_service_scope_stay_in_their_lane(users):
    a, b = users.a, users.b
    before_b = stored_rows(b.user_id)
    b_session = before_b["sessions"][0]["session_id"]

    profiles.update_profile(a.service, "timezone", "Europe/Lisbon")
    assert profiles.get_profile(a.service).timezone == "Europe/Lisbon"
    with pytest.raises(NotFound):
        sessions.get_session(a.service, b_session)
    with pytest.raises(InvalidInput, match="belongs to another user"):
        sessions.save_report(a.service, b_session, {"overwritten": True})
    assert [s.user_id for s in sessions.list_sessions(a.service)] == [a.user_id]
    assert stored_rows(b.user_id) == before_b
