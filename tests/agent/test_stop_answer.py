"""Stopping an answer (Conversation.stop, the chat page's Stop button) with a model that is slow to answer:
the real openai plugin over HTTP to the OpenAI-compatible stand-in, the real runtime and database."""

from __future__ import annotations

import time

import pytest

from agent.chat_format import user_words
from agent.conversation import SESSION_DELETED
from agent.session import STOPPED_MESSAGE, STOPPED_NOTE
from core import config, db, erasure, memories, sessions, turn_indexer
from core.errors import SessionDeleted
from ui.report_view import read_report


@pytest.fixture
def slow_llm(monkeypatch, llm_server):
    for name, value in llm_server.env().items():
        monkeypatch.setenv(name, value)
    config.reload_settings()
    yield llm_server
    monkeypatch.undo()
    config.reload_settings()


def _asked(server, words: str, timeout: float = 30.0) -> None:
    """Wait until the model has been asked `words` (the request is on its way, the answer not)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(words in user_words(m.get("content")) for r in server.chat_requests() for m in r.messages):
            return
        time.sleep(0.05)
    raise AssertionError(f"the model was never asked {words!r}")


def test_a_stopped_answer_ends_the_turn_and_the_next_message_is_asked_on_its_own(runtime, new_user, slow_llm):
    user = new_user()
    chat = runtime.open_conversation("tab-stop", user.user_id)
    assert chat.ready.result(timeout=60)
    assert chat.stop().result(timeout=10) is False  # nothing is being answered: nothing to stop

    slow_llm.fail("slow", times=1)  # the model holds this answer for 20 s
    pending = chat.send("where is order 1001?")
    _asked(slow_llm, "where is order 1001?")
    assert chat.stop().result(timeout=10) is True
    stopped = pending.result(timeout=15)  # the turn ends now, not when the model's answer would come (20 s)
    assert stopped.stopped and stopped.reply == "" and stopped.error is None and stopped.problems == []
    notes = [e for e in stopped.events if e["type"] == "error"]
    assert [(e["message"], e["kind"]) for e in notes] == [(STOPPED_MESSAGE, "stopped")]

    # the next message is a question of its own: the stopped one is followed by the note, not merged into it
    answered = chat.send("where is order 1002?").result(timeout=60)
    assert "1002" in answered.reply and not answered.stopped and answered.error is None
    last = slow_llm.chat_requests()[-1].messages
    said = [(m["role"], user_words(m.get("content")) if m["role"] == "user" else m.get("content")) for m in last]
    stopped_at = said.index(("user", "where is order 1001?"))
    assert said[stopped_at + 1] == ("assistant", STOPPED_NOTE)
    assert ("user", "where is order 1002?") in said[stopped_at + 2 :]

    # the note is for the model only: the transcript and the report say what the visitor saw
    report = chat.close().result(timeout=60)
    section = report["playground"]
    assert STOPPED_NOTE not in [line["text"] for line in section["transcript"]]
    view = read_report(sessions.get_session(user.scope, chat.session_id).report)
    assert view.stopped == 1 and view.errors == []


SLOW_ANSWER_SECONDS = 8  # how long the model holds the answer being deleted; the deletion must not wait for it


def _nothing_of(user, session_id: str, slow_llm) -> None:
    """Once the stopped answer would have come: no row of the session, no turn, no memory, none pointing at it."""
    time.sleep(SLOW_ANSWER_SECONDS + 2)
    assert turn_indexer.flush_queued()
    assert sessions.list_sessions(user.scope) == [] and memories.list_memories(user.scope) == []
    with db.admin_connection() as conn:
        for table in ("sessions", "conversation_turns", "memories"):
            left = conn.execute(f"select count(*) from public.{table} where session_id = %s", (session_id,))
            assert left.fetchone()[0] == 0, table


def test_deleting_a_session_stops_its_answer_in_flight_and_nothing_of_it_comes_back(runtime, new_user, slow_llm):
    """What Delete this session does (ui.erase.delete_session): end the session's conversation, then delete it.
    Ending it waited for the answer a slow model was preparing: its tool call then remembered what the visitor
    had said, the message sent after it was answered, and the facts extracted at the end were remembered too,
    all under the session the visitor was deleting. Now the answer stops at once and nothing of it is kept."""
    slow_llm.slow_seconds = SLOW_ANSWER_SECONDS
    user = new_user()
    chat = runtime.open_conversation("tab-delete", user.user_id)
    assert chat.ready.result(timeout=60)
    session_id = chat.session_id
    slow_llm.fail("slow", times=1)
    in_flight = chat.send("my favorite color is teal")
    waiting = chat.send("my dog is called Pixel")
    _asked(slow_llm, "my favorite color is teal")

    for ending in runtime.close_session(user.user_id, session_id):
        ending.result(timeout=SLOW_ANSWER_SECONDS / 2)  # not waiting for the model's answer
    stopped = in_flight.result(timeout=5)
    assert stopped.reply == "" and stopped.tool_calls == []
    with pytest.raises(SessionDeleted):
        waiting.result(timeout=5)  # sent before the deletion, never answered
    erasure.delete_session(user.scope, session_id)

    _nothing_of(user, session_id, slow_llm)
    asked = [user_words(m.get("content")) for r in slow_llm.chat_requests() for m in r.messages]
    assert not any("Pixel" in words for words in asked)  # nor asked, nor extracted from


def test_a_session_deleted_in_another_process_stops_its_answer_in_flight_here(runtime, new_user, slow_llm):
    """Deleted on another app process's Sessions page: the database feed tells this one (session_deleted),
    and the answer running here stops then, instead of writing its memory when the model answers."""
    slow_llm.slow_seconds = SLOW_ANSWER_SECONDS
    user = new_user()
    chat = runtime.open_conversation("tab-deleted-elsewhere", user.user_id)
    assert chat.ready.result(timeout=60)
    session_id = chat.session_id
    slow_llm.fail("slow", times=1)
    in_flight = chat.send("my favorite color is teal")
    _asked(slow_llm, "my favorite color is teal")

    erasure.delete_session(user.scope, session_id)
    runtime.session_deleted(user.user_id, session_id)  # what core.session_deletions hands this process
    assert chat.closed and chat.close_reason == SESSION_DELETED
    chat.close().result(timeout=SLOW_ANSWER_SECONDS / 2)
    assert in_flight.result(timeout=5).tool_calls == []
    _nothing_of(user, session_id, slow_llm)
