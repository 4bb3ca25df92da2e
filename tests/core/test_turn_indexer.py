"""core.turn_indexer against the real embedded Postgres and the real embedding model: turns are queued and
stored on the indexer's thread, never lost when the model or the database fails for a while."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from core import conversations, embeddings
from core.db import Scope
from core.errors import DatabaseUnavailable, EmbeddingUnavailable
from core.retrieval import search_conversations
from core.turn_indexer import TurnIndexer

T0 = datetime(2026, 11, 16, 18, 0, tzinfo=UTC)


@pytest.fixture
def indexers():
    made: list[TurnIndexer] = []

    def make(**kwargs) -> TurnIndexer:
        indexer = TurnIndexer(**kwargs)
        made.append(indexer)
        return indexer

    yield make
    for indexer in made:
        indexer.close(timeout=5)


def _submit(indexer, user, session_id, lines, start=T0):
    for index, (speaker, text) in enumerate(lines):
        when = start + timedelta(seconds=index)
        assert indexer.submit(user.user_id, session_id, index, speaker, text, created_at=when)


LINES = [
    ("assistant", "Hi! What can I do for you today?"),
    ("user", "We hiked the Cedar Creek Loop on Saturday with Nora, nine miles."),
    ("assistant", "That sounds like a great day outside."),
    ("user", "My parking spot at work is C117."),
]


def test_submit_returns_while_the_embedding_is_still_running(new_user, indexers):
    user = new_user()
    release = threading.Event()
    embedding_started = threading.Event()

    def slow_embed(texts):
        embedding_started.set()
        assert release.wait(30), "the test never released the embedder"
        return embeddings.embed(texts)

    indexer = indexers(embed=slow_embed)
    session_id = f"slow-{user.user_id}"
    assert indexer.submit(user.user_id, session_id, 0, "user", LINES[1][1], created_at=T0)
    assert embedding_started.wait(30)  # the indexer's thread is inside the embedder...
    # ...and the caller got control back and can queue the next turn meanwhile
    assert indexer.submit(user.user_id, session_id, 1, "assistant", LINES[2][1], created_at=T0)
    assert conversations.list_turns(user.scope, session_id) == []  # nothing is stored before the embedding
    release.set()
    assert indexer.flush(60)
    stored = conversations.list_turns(user.scope, session_id)  # read as the user: RLS
    assert [(t.turn_index, t.speaker, t.content, t.embedded) for t in stored] == [
        (0, "user", LINES[1][1], True),
        (1, "assistant", LINES[2][1], True),
    ]
    assert stored[0].created_at == T0


def test_an_embedding_that_fails_once_is_stored_found_by_text_and_embedded_by_the_retry_pass(new_user, indexers):
    user = new_user()
    calls = []

    def fails_once(texts):
        calls.append(list(texts))
        if len(calls) == 1:
            raise EmbeddingUnavailable("the model is not loaded yet")
        return embeddings.embed(texts)

    indexer = indexers(embed=fails_once, retry_seconds=3600)  # the pass runs on flush here, not on a timer
    session_id = f"flaky-{user.user_id}"
    _submit(indexer, user, session_id, LINES)
    assert indexer.flush(60, embed_pending=False)
    stored = conversations.list_turns(user.scope, session_id)
    assert len(stored) == len(LINES) and not any(t.embedded for t in stored)  # stored anyway, not lost
    assert indexer.stats["users_awaiting_embeddings"] == 1
    # meanwhile the text branch finds them
    found = search_conversations(user.scope, "parking spot", limit=1)
    assert found.hits[0].content == LINES[3][1] and found.hits[0].vector_rank is None

    assert indexer.embed_pending() == len(LINES)  # the retry pass, with the model working again
    assert all(t.embedded for t in conversations.list_turns(user.scope, session_id))
    assert indexer.stats["users_awaiting_embeddings"] == 0
    found = search_conversations(user.scope, "where do I leave the car at the office", limit=1)
    assert found.hits[0].content == LINES[3][1] and found.hits[0].vector_rank == 1


def test_the_retry_pass_runs_by_itself_on_the_thread(new_user, indexers):
    user = new_user()
    failed = []

    def fails_once(texts):
        if not failed:
            failed.append(True)
            raise EmbeddingUnavailable("model offline")
        return embeddings.embed(texts)

    indexer = indexers(embed=fails_once, retry_seconds=0.2)
    session_id = f"timer-{user.user_id}"
    _submit(indexer, user, session_id, LINES[:2])
    deadline = datetime.now(UTC) + timedelta(seconds=60)
    while datetime.now(UTC) < deadline:
        turns = conversations.list_turns(user.scope, session_id)
        if len(turns) == 2 and all(t.embedded for t in turns):
            break
        threading.Event().wait(0.1)
    assert failed and all(t.embedded for t in conversations.list_turns(user.scope, session_id))


def test_a_failed_insert_is_retried_in_order_and_nothing_is_lost(new_user, indexers, monkeypatch):
    user = new_user()
    real_store = conversations.store_turns
    outages = []

    def store_with_an_outage(scope, turns, **kwargs):
        if len(outages) < 2:  # the database is unreachable for the first two attempts
            outages.append(len(turns))
            raise DatabaseUnavailable("The database is not reachable right now.")
        return real_store(scope, turns, **kwargs)

    monkeypatch.setattr(conversations, "store_turns", store_with_an_outage)
    indexer = indexers(first_pause_seconds=0.05)
    session_id = f"outage-{user.user_id}"
    _submit(indexer, user, session_id, LINES)
    assert indexer.flush(60)
    assert len(outages) == 2
    stored = conversations.list_turns(user.scope, session_id)
    assert [(t.turn_index, t.content) for t in stored] == [(i, text) for i, (_, text) in enumerate(LINES)]
    assert indexer.stats["stored"] == len(LINES) and indexer.stats["dropped"] == 0


def test_a_turn_the_database_refuses_is_dropped_alone_and_logged(new_user, indexers, caplog):
    owner, other = new_user(), new_user()
    foreign_session = f"theirs-{owner.user_id}"
    conversations.store_turn(Scope.service(owner.user_id), foreign_session, 0, "user", "my own words")
    indexer = indexers()
    mine = f"mine-{other.user_id}"
    with caplog.at_level(logging.ERROR, logger="core.turn_indexer"):
        assert indexer.submit(other.user_id, mine, 0, "user", "first words", created_at=T0)
        assert indexer.submit(other.user_id, foreign_session, 1, "user", "a forged session", created_at=T0)
        assert indexer.submit(other.user_id, mine, 1, "assistant", "second words", created_at=T0)
        assert indexer.flush(60)
    assert [t.content for t in conversations.list_turns(other.scope, mine)] == ["first words", "second words"]
    assert [t.content for t in conversations.list_turns(owner.scope, foreign_session)] == ["my own words"]
    assert indexer.stats["dropped"] == 1
    assert any("refused, not stored" in record.getMessage() for record in caplog.records)


def test_empty_turns_are_not_queued(new_user, indexers):
    user = new_user()
    indexer = indexers()
    assert not indexer.submit(user.user_id, "s", 0, "user", "   ")
    assert indexer.stats["queued"] == 0


def test_the_indexer_embeds_once_no_turn_has_arrived_for_a_moment_and_flush_does_not_wait(new_user, indexers):
    """A user's turn arrives just as the agent embeds the same words for its recall (one text at a time):
    the indexer waits until turns stop arriving, so the reply does not queue behind it."""
    user = new_user()
    embedded_at: list[float] = []

    def timed_embed(texts):
        embedded_at.append(time.monotonic())
        return embeddings.embed(texts)

    indexer = indexers(embed=timed_embed, settle_seconds=3.0)
    session_id = f"settle-{user.user_id}"
    assert indexer.submit(user.user_id, session_id, 0, "user", LINES[1][1], created_at=T0)
    time.sleep(0.3)
    assert indexer.submit(user.user_id, session_id, 1, "assistant", LINES[2][1], created_at=T0)
    second_submit = time.monotonic()
    deadline = time.monotonic() + 30
    while not embedded_at and time.monotonic() < deadline:
        time.sleep(0.05)
    assert embedded_at, "the indexer never embedded the turns"
    assert embedded_at[0] >= second_submit + 2.9  # the second turn started the wait again
    assert len(embedded_at) == 1  # and both went in one batch
    assert indexer.flush(30)

    patient = indexers(embed=timed_embed, settle_seconds=600.0)
    assert patient.submit(user.user_id, session_id, 2, "user", LINES[3][1], created_at=T0)
    assert patient.flush(30)  # flush stores now, whatever the settle time
    assert [t.turn_index for t in conversations.list_turns(user.scope, session_id)] == [0, 1, 2]
