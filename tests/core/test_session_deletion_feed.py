"""A deleted session reaches whatever runs it, in any process: each deleted session row is a notification on
``session_deletions`` naming its user and id (supabase/migrations/20261127120000_session_deletion_notifications.sql),
the process's database feed hands it to ``core.session_deletions``' listeners, and a turn the database skipped
because its session was deleted tells them too."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import psycopg
import pytest

from core import conversations, db, erasure, memory_changes, session_deletions, sessions
from core.conversations import TurnInput
from core.errors import EmbeddingUnavailable
from tests.support.waiting import until

ZERO_VECTOR = "[" + ",".join(["0"] * 384) + "]"


def _turn(session_id: str, index: int = 0) -> TurnInput:
    return TurnInput(session_id, index, "user", f"turn {index} of {session_id}", datetime.now(UTC))


def _open_session(user, session_id: str) -> None:
    """What a running conversation has written so far: its session row and a turn."""
    assert conversations.store_turns(user.service, [_turn(session_id)], embed=_no_embedding)


def _no_embedding(texts):
    raise EmbeddingUnavailable("not needed here")


class Recorder:
    def __init__(self) -> None:
        self.heard: list[tuple[uuid.UUID | None, str | None]] = []

    def session_deleted(self, user_id, session_id) -> None:
        self.heard.append((user_id, session_id))


@pytest.fixture
def recorder():
    listener = Recorder()
    session_deletions.subscribe(listener)
    yield listener
    session_deletions.unsubscribe(listener)


@pytest.fixture
def listening(database_uri):
    with psycopg.connect(db.service_url(), autocommit=True) as conn:
        conn.execute(f"listen {session_deletions.CHANNEL}")
        yield conn


def _heard(conn: psycopg.Connection, wait: float = 0.5) -> list[dict]:
    return [json.loads(note.payload) for note in conn.notifies(timeout=wait)]


def test_each_deleted_session_is_announced_with_its_user_and_id_on_commit_only(listening, new_user):
    user, other = new_user(), new_user()
    for name in ("s-one", "s-two", "s-three"):
        _open_session(user, f"{name}-{user.user_id}")
    _open_session(other, f"s-theirs-{other.user_id}")
    mine = str(user.user_id)

    sessions.delete_session(user.scope, f"s-one-{user.user_id}")  # as the user, under RLS
    assert _heard(listening) == [{"user_id": mine, "session_id": f"s-one-{user.user_id}"}]

    with pytest.raises(RuntimeError), db.transaction(user.scope) as cur:  # rolled back: nothing was deleted
        cur.execute("delete from public.sessions where session_id = %s", (f"s-two-{user.user_id}",))
        raise RuntimeError("changed my mind")
    assert _heard(listening) == []

    erasure.delete_everything(user.scope)  # one per session, none of another user's
    assert sorted(note["session_id"] for note in _heard(listening)) == [
        f"s-three-{user.user_id}",
        f"s-two-{user.user_id}",
    ]

    with db.admin_connection() as conn:  # a deleted account takes its sessions along: they are announced too
        conn.execute("delete from auth.users where id = %s", (other.user_id,))
    assert _heard(listening) == [{"user_id": str(other.user_id), "session_id": f"s-theirs-{other.user_id}"}]


def test_a_process_following_the_database_hears_sessions_deleted_elsewhere(new_user, recorder, caplog):
    user = new_user()
    session_id = f"elsewhere-{user.user_id}"
    _open_session(user, session_id)
    feed = memory_changes.follow_database(db.service_url())
    try:
        with db.admin_connection() as conn:  # another process: SQL straight to the table
            conn.execute("delete from public.sessions where session_id = %s", (session_id,))
        assert until(lambda: recorder.heard == [(user.user_id, session_id)]), recorder.heard

        with db.admin_connection() as conn:  # a payload that names no user and session is ignored
            conn.execute("select pg_notify(%s, 'not json')", (session_deletions.CHANNEL,))
            conn.execute("select pg_notify(%s, %s)", (session_deletions.CHANNEL, json.dumps({"user_id": "x"})))
        assert until(lambda: caplog.text.count("does not name a user and a session") == 2)
        assert recorder.heard == [(user.user_id, session_id)]

        # the feed's connection dropped: deletions meanwhile were not heard, so every listener is asked to check
        with db.admin_connection() as conn:
            conn.execute(
                "select pg_terminate_backend(pid) from pg_stat_activity where application_name = %s",
                (memory_changes.APPLICATION_NAME,),
            )
        assert until(lambda: recorder.heard[-1:] == [(None, None)], timeout=10), recorder.heard
    finally:
        memory_changes.stop_following()
    assert not feed.listening.is_set()


def test_a_turn_of_a_deleted_session_tells_this_process_without_the_feed(new_user, recorder):
    """The database skips a late turn of a deleted session; whatever here still runs it hears that, also
    when no feed runs (or it missed the notification)."""
    user = new_user()
    session_id = f"late-{user.user_id}"
    _open_session(user, session_id)
    sessions.delete_session(user.scope, session_id)
    assert recorder.heard == []  # nothing follows the database in this test
    assert conversations.store_turns(user.service, [_turn(session_id, 1)], embed=_no_embedding) == []
    assert recorder.heard == [(user.user_id, session_id)]
    _open_session(user, f"alive-{user.user_id}")  # a turn that is stored tells nobody
    assert recorder.heard == [(user.user_id, session_id)]


def test_a_failing_listener_does_not_keep_the_others_from_hearing(recorder, caplog):
    class Broken:
        def session_deleted(self, user_id, session_id):
            raise RuntimeError("broken listener")

    broken = Broken()
    session_deletions.subscribe(broken)
    try:
        someone = uuid.uuid4()
        session_deletions.notify(someone, "s-1")
    finally:
        session_deletions.unsubscribe(broken)
    assert recorder.heard == [(someone, "s-1")]
    assert "a session_deleted listener failed" in caplog.text and "broken listener" in caplog.text
