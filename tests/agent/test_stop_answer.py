"""Stopping an answer (Conversation.stop, the chat page's Stop button) with a model that is slow to answer:
the real openai plugin over HTTP to the OpenAI-compatible stand-in, the real runtime and database."""

from __future__ import annotations

import time

import pytest

from agent.chat_format import user_words
from agent.session import STOPPED_MESSAGE, STOPPED_NOTE
from core import config, sessions
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
