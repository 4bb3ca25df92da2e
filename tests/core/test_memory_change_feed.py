"""Changes to a user's words reach other processes through the database: each committed change to
memories or a profile name is a notification on ``memory_changes`` carrying the user id
(supabase/migrations/20261126000000_memory_change_notifications.sql), and ``follow_database`` hears them."""

from __future__ import annotations

import logging
import time
import uuid

import psycopg
import pytest

from core import db, erasure, memories, memory_changes, profiles
from tests.support.waiting import until

ZERO_VECTOR = "[" + ",".join(["0"] * 384) + "]"


def _heard(conn: psycopg.Connection, wait: float = 0.5) -> list[str]:
    return [note.payload for note in conn.notifies(timeout=wait)]


@pytest.fixture
def listening(database_uri):
    with psycopg.connect(db.service_url(), autocommit=True) as conn:
        conn.execute(f"listen {memory_changes.CHANNEL}")
        yield conn


def _insert_memory_elsewhere(user_id: uuid.UUID, slot: str, content: str) -> None:
    """What another process does: SQL straight to the table, so this process's own notify() never runs."""
    with db.admin_connection() as conn:
        conn.execute(
            "insert into public.memories (user_id, memory_type, content, embedding) values (%s, %s, %s, %s)",
            (user_id, slot, content, ZERO_VECTOR),
        )


def test_each_committed_change_to_a_users_words_is_announced_with_only_their_id(listening, new_user):
    user, other = new_user(), new_user()
    mine = str(user.user_id)
    stored = memories.remember(user.scope, "pet", "a dachshund named Pretzel").memory  # as the user (RLS)
    assert _heard(listening) == [mine]
    memories.update_memory(user.scope, stored.id, "a dachshund named Brezel")
    memories.remember(user.service, "home_city", "Albuquerque")  # the agent's service scope
    memories.delete_memory(user.scope, stored.id)
    assert _heard(listening) == [mine] * 3
    profiles.update_profile(user.scope, "name", "Siobhan")
    profiles.update_profile(user.scope, "timezone", "Europe/Lisbon")  # not a word recognition uses
    profiles.update_profile(user.scope, "name", "Siobhan")  # the same name again: nothing changed
    assert _heard(listening) == [mine]

    with db.admin_connection() as conn, pytest.raises(psycopg.errors.CheckViolation), conn.transaction():
        conn.execute(
            "insert into public.memories (user_id, memory_type, content, embedding) values (%s, 'a', 'x', %s)",
            (other.user_id, ZERO_VECTOR),
        )
        conn.execute("update public.memories set content = '' where user_id = %s", (other.user_id,))
    assert _heard(listening) == []  # rolled back: never announced

    memories.remember(user.scope, "drink", "cortado")
    memories.remember(user.scope, "allergy", "hazelnuts")
    _heard(listening)
    erasure.delete_everything(user.scope)  # "delete everything": several rows in one transaction
    assert _heard(listening) == [mine]


def test_a_process_following_the_database_hears_changes_it_did_not_make(new_user, caplog):
    user = new_user()
    seen: list[uuid.UUID | None] = []

    class Recorder:
        def memories_changed(self, user_id):
            seen.append(user_id)

    recorder = Recorder()
    memory_changes.subscribe(recorder)
    feed = memory_changes.follow_database(db.service_url())
    try:
        assert feed.listening.is_set() and memory_changes.follow_database(db.service_url()) is feed
        _insert_memory_elsewhere(user.user_id, "partner", "Thibault")
        assert until(lambda: seen == [user.user_id]), seen

        with db.admin_connection() as conn:  # a payload that is not a user id is ignored
            conn.execute("select pg_notify(%s, 'not a user')", (memory_changes.CHANNEL,))
        with caplog.at_level(logging.WARNING, logger="core.memory_changes"):
            assert until(lambda: "not a user id" in caplog.text)
        assert seen == [user.user_id]

        # the database drops the feed's connection: it comes back and tells everyone to re-read, since
        # whatever changed meanwhile was not heard
        with db.admin_connection() as conn:
            ended = conn.execute(
                "select pg_terminate_backend(pid) from pg_stat_activity where application_name = %s",
                (memory_changes.APPLICATION_NAME,),
            ).fetchall()
        assert ended and all(row[0] for row in ended)
        assert until(lambda: seen[-1:] == [None], timeout=10), seen
        assert until(feed.listening.is_set)
        _insert_memory_elsewhere(user.user_id, "drink", "cortado")
        assert until(lambda: seen[-1:] == [user.user_id]), seen
    finally:
        memory_changes.unsubscribe(recorder)
        memory_changes.stop_following()
    assert not feed.listening.is_set()
    _insert_memory_elsewhere(user.user_id, "allergy", "hazelnuts")
    time.sleep(0.5)
    assert seen[-1:] == [user.user_id] and seen.count(user.user_id) == 2  # stopped: heard no more
