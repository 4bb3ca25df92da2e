"""Delete everything about me (core.erasure), run as the user under RLS: every table with a user column,
found from the catalog (so a table added later cannot be forgotten; the conversation tier's turns and word
statistics among them), holds 0 rows for the user; the
profile keeps its row with every field cleared; the user's pending report files are gone; another user's
data is untouched. Per-session delete on the Sessions page: only one's own."""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest

from agent import reports
from core import conversations, db, erasure, memories, profiles, sessions, turn_indexer
from core.errors import NotFound, SessionDeleted
from core.profiles import preload
from tests.support.users import sign_in


def _user_columns() -> list[tuple[str, str]]:
    """(table, column) of every column in `public` that references auth.users, or is called user_id."""
    with db.admin_connection() as conn:
        rows = conn.execute(
            """
            select distinct cl.relname, att.attname
            from pg_constraint con
            join pg_class cl on cl.oid = con.conrelid
            join pg_namespace ns on ns.oid = cl.relnamespace
            join pg_attribute att on att.attrelid = con.conrelid and att.attnum = any(con.conkey)
            where con.contype = 'f' and con.confrelid = 'auth.users'::regclass and ns.nspname = 'public'
            union
            select c.table_name, c.column_name from information_schema.columns c
            join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
            where c.table_schema = 'public' and c.column_name = 'user_id' and t.table_type = 'BASE TABLE'
            """
        ).fetchall()
    return sorted((str(table), str(column)) for table, column in rows)


def _rows_for(table: str, column: str, user_id: uuid.UUID) -> int:
    with db.admin_connection() as conn:
        return conn.execute(f'select count(*) from public."{table}" where "{column}" = %s', (user_id,)).fetchone()[0]


def _fill(user) -> None:
    memories.remember(user.scope, "diet", "vegetarian")
    memories.remember(user.scope, "dog_name", "Pixel")
    profiles.update_profile(user.scope, "name", "Jo")
    profiles.update_profile(user.scope, "timezone", "Europe/Lisbon")
    profiles.update_profile(user.scope, "preferences", json.dumps({"units": "metric"}))
    for n in range(2):
        session_id = f"erase-{user.user_id}-{n}"
        conversations.store_turn(db.Scope.service(user.user_id), session_id, 0, "user", "call me Jo, my dog is Pixel")
        conversations.store_turn(db.Scope.service(user.user_id), session_id, 1, "assistant", "Nice to meet you, Jo!")
        sessions.save_report(db.Scope.service(user.user_id), session_id, {"transcript": ["call me Jo"]})


def _pending(user_id: uuid.UUID, sub: str = "", session_id: str = "s") -> object:
    directory = erasure.pending_reports_dir() / sub
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{uuid.uuid4().hex}.json"
    path.write_text(json.dumps({"user_id": str(user_id), "session_id": session_id, "report": {"said": "call me Jo"}}))
    return path


def test_turns_still_waiting_in_the_indexer_are_erased_too(database_uri):
    """The indexer stores a turn once turns stop arriving for a moment: deleting everything stores what it
    holds first, so a turn said just before is erased with the rest instead of arriving after."""
    user = sign_in()
    indexer = turn_indexer.get_indexer()
    assert indexer.submit(user.user_id, f"erase-queued-{user.user_id}", 0, "user", "my locker code is 4417")

    erased = erasure.delete_everything(user.scope)

    assert erased.turns == 1  # it was stored, then erased
    assert indexer.flush(30)
    assert _rows_for("conversation_turns", "user_id", user.user_id) == 0


def test_delete_everything_leaves_no_row_about_the_user(database_uri):
    user, other = sign_in(), sign_in()
    _fill(user)
    _fill(other)
    mine, theirs, set_aside = _pending(user.user_id), _pending(other.user_id), _pending(user.user_id, "rejected")
    columns = _user_columns()
    assert ("memories", "user_id") in columns and ("sessions", "user_id") in columns
    assert ("profiles", "id") in columns
    before = {tc: _rows_for(*tc, user.user_id) for tc in columns}
    assert before[("memories", "user_id")] == 2 and before[("sessions", "user_id")] == 2
    assert before[("conversation_turns", "user_id")] == 4 and before[("conversation_lexicon_totals", "user_id")] == 1

    erased = erasure.delete_everything(user.scope)  # as the user: RLS decides

    assert erased.rows == {"memories": 2, "sessions": 2} and erased.turns == 4
    assert erased.profile_cleared and erased.pending_reports == 2
    for table, column in columns:
        if (table, column) == ("profiles", "id"):
            continue  # the account's own row stays; its fields are checked below
        assert _rows_for(table, column, user.user_id) == 0, f"{table}.{column} still holds rows for the user"
    profile = profiles.get_profile(user.scope)
    assert (profile.name, profile.email, profile.timezone, profile.preferred_language) == (None, None, None, None)
    assert profile.preferences == {}
    loaded = preload(db.Scope.service(user.user_id))
    assert loaded.profile.name is None and not loaded.memories
    assert not mine.exists() and not set_aside.exists() and theirs.exists()
    # the other user's data is untouched
    assert {tc: _rows_for(*tc, other.user_id) for tc in columns} == before | {("profiles", "id"): 1}
    assert profiles.get_profile(other.scope).name == "Jo"
    theirs.unlink()


def test_a_user_deletes_one_of_their_sessions_and_never_someone_elses(database_uri):
    user, other = sign_in(), sign_in()
    sessions.save_report(db.Scope.service(user.user_id), f"one-{user.user_id}", {"x": 1})
    sessions.save_report(db.Scope.service(other.user_id), f"one-{other.user_id}", {"x": 1})
    with pytest.raises(NotFound):
        sessions.delete_session(user.scope, f"one-{other.user_id}")
    assert sessions.get_session(other.scope, f"one-{other.user_id}")
    sessions.delete_session(user.scope, f"one-{user.user_id}")
    assert sessions.list_sessions(user.scope) == []


def test_deleting_one_session_takes_its_queued_turns_and_waiting_report_and_nothing_else(database_uri):
    """A turn still in the indexer would otherwise be stored after the deletion and bring the session back
    (its row is made by the first turn stored), and a report waiting on disk would be saved again."""
    user = sign_in()
    doomed, kept = f"doomed-{user.user_id}", f"kept-{user.user_id}"
    indexer = turn_indexer.get_indexer()
    for session_id in (doomed, kept):
        assert indexer.submit(user.user_id, session_id, 0, "user", f"my locker code is 4417 ({session_id})")
    assert indexer.flush(30)
    assert indexer.submit(user.user_id, doomed, 1, "user", "and the spare key is under the mat")  # still queued
    waiting, other_session = _pending(user.user_id, session_id=doomed), _pending(user.user_id, session_id=kept)

    assert erasure.delete_session(user.scope, doomed) == 2  # both turns: the queued one was stored first

    assert indexer.flush(30)
    assert [record.session_id for record in sessions.list_sessions(user.scope)] == [kept]
    assert _rows_for("conversation_turns", "user_id", user.user_id) == 1
    assert not waiting.exists() and other_session.exists()
    with pytest.raises(NotFound):
        erasure.delete_session(user.scope, doomed)  # gone, and not brought back
    other_session.unlink()


def test_a_deleted_session_stays_deleted_when_a_call_still_running_it_saves_later(database_uri):
    """A LiveKit worker (another process the app cannot reach) still runs the session its owner deletes: when
    the call ends it stores its last turns and saves its report. Those writes are skipped, so the session does
    not come back; the same holds after "delete everything". Another user's session ids are not affected."""
    user, other = sign_in(), sign_in()
    service = db.Scope.service(user.user_id)
    live = f"erase-live-{user.user_id}"
    conversations.store_turn(service, live, 0, "user", "my locker code is 4417")
    erasure.delete_session(user.scope, live)  # as the user, under RLS

    assert sessions.was_deleted(service, live)
    with pytest.raises(SessionDeleted):
        conversations.store_turn(service, live, 1, "assistant", "Got it: 4417.")
    assert conversations.store_turns(service, [conversations.TurnInput(live, 2, "user", "and 5521")]) == []
    with pytest.raises(SessionDeleted):
        sessions.save_report(service, live, {"transcript": ["my locker code is 4417"]})
    assert [s.session_id for s in sessions.list_sessions(user.scope)] == []
    assert _rows_for("conversation_turns", "user_id", user.user_id) == 0

    # a report of it kept on disk during an outage is dropped when retried, not saved and not rejected
    _pending(user.user_id, session_id=live)
    assert reports.flush_pending() == 0
    assert not [p for p in erasure.pending_reports_dir().rglob("*.json") if str(user.user_id) in p.read_text()]
    assert sessions.list_sessions(user.scope) == []

    # "delete everything" does the same for every session it deleted
    other_live = f"erase-live-2-{user.user_id}"
    conversations.store_turn(service, other_live, 0, "user", "my dog is Pixel")
    erasure.delete_everything(user.scope)
    assert reports.save(user.user_id, other_live, {"transcript": ["my dog is Pixel"]}) is None
    assert sessions.list_sessions(user.scope) == []

    # the user's new sessions, and the other user's, are stored as ever
    conversations.store_turn(service, f"erase-new-{user.user_id}", 0, "user", "hello again")
    conversations.store_turn(db.Scope.service(other.user_id), f"erase-other-{other.user_id}", 0, "user", "hi")
    assert len(sessions.list_sessions(user.scope)) == 1 and len(sessions.list_sessions(other.scope)) == 1
    assert not sessions.was_deleted(db.Scope.service(other.user_id), live)

    # the user cannot read or write the list of deleted ids themselves
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.transaction(user.scope) as cur:
        cur.execute("select * from memory_playground_private.deleted_sessions")


def test_the_ids_of_deleted_sessions_are_forgotten_after_30_days(database_uri):
    user = sign_in()
    service = db.Scope.service(user.user_id)
    old, recent = f"erase-old-{user.user_id}", f"erase-recent-{user.user_id}"
    for session_id in (old, recent):
        conversations.store_turn(service, session_id, 0, "user", "hello")
        erasure.delete_session(user.scope, session_id)
    with db.admin_connection() as conn:
        conn.execute(
            "update memory_playground_private.deleted_sessions set deleted_at = now() - interval '31 days' "
            "where session_id = %s",
            (old,),
        )
        assert sessions.prune_deleted(conn) >= 1
        assert sessions.prune_deleted(conn, 0.5) == 0  # a fraction of a day works too; nothing that old is left
    assert not sessions.was_deleted(service, old) and sessions.was_deleted(service, recent)


def test_owners_learn_which_of_their_sessions_they_deleted_and_of_no_one_elses(database_uri):
    """What the Memories page asks (a memory outlives the session that wrote it), as the user under RLS."""
    user, other = sign_in(), sign_in()
    gone, kept = f"erase-gone-{user.user_id}", f"erase-kept-{user.user_id}"
    theirs = f"erase-theirs-{other.user_id}"
    for owner, session_id in ((user, gone), (user, kept), (other, theirs)):
        conversations.store_turn(owner.service, session_id, 0, "user", "hello")
    erasure.delete_session(user.scope, gone)
    erasure.delete_session(other.scope, theirs)
    asked = [gone, kept, theirs, "never-stored"]
    assert sessions.deleted_ids(user.scope, asked) == {gone}  # as the user: only their own
    assert sessions.deleted_ids(user.service, asked) == {gone}
    assert sessions.deleted_ids(other.scope, asked) == {theirs}
    assert sessions.deleted_ids(user.scope, []) == set()


def test_a_memory_written_under_a_deleted_session_is_refused(database_uri):
    """An answer still running a session its owner deleted (or the facts extracted when it ends) writes no
    memory under it: as the service or as the user, a new slot or an existing one. What the session wrote
    before it was deleted stays the visitor's, and can still be edited."""
    user = sign_in()
    gone, kept = f"erase-mem-gone-{user.user_id}", f"erase-mem-kept-{user.user_id}"
    for session_id in (gone, kept):
        conversations.store_turn(user.service, session_id, 0, "user", "my dog is Pixel")
    before = memories.remember(user.service, "dog_name", "Pixel", session_id=gone).memory
    erasure.delete_session(user.scope, gone)

    for scope in (user.service, user.scope):
        with pytest.raises(SessionDeleted):
            memories.remember(scope, "locker_code", "4417", session_id=gone)  # a new slot
        with pytest.raises(SessionDeleted):
            memories.remember(scope, "dog_name", "Biscuit", session_id=gone)  # an existing one
    assert [(m.memory_type, m.content) for m in memories.list_memories(user.scope)] == [("dog_name", "Pixel")]
    with db.admin_connection() as conn:
        pointing = conn.execute("select count(*) from public.memories where session_id = %s", (gone,)).fetchone()[0]
    assert pointing == 1  # only the one written before the deletion

    edited = memories.update_memory(user.scope, before.id, "Pixel the corgi")
    assert edited.content == "Pixel the corgi"
    assert memories.remember(user.service, "dog_name", "Biscuit", session_id=kept).memory.session_id == kept
    assert memories.remember(user.scope, "locker_code", "4417").memory.session_id is None
    with db.admin_connection() as conn:  # nor can a memory be moved onto the deleted session
        conn.execute("update public.memories set session_id = %s where user_id = %s", (gone, user.user_id))
    assert {m.session_id for m in memories.list_memories(user.scope)} == {kept, None}
