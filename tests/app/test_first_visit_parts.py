"""The first visit's parts in AppTest (the browser tests are tests/app/test_first_visit.py): a message sent
while the agent is still starting is shown at once, kept, and answered when the agent is ready; the sidebar
lists what the server is still warming up."""

from __future__ import annotations

import concurrent.futures

from agent import get_runtime, warmup
from core import memories
from core.config import get_settings
from tests.app.conftest import settle


def _user_bubbles(at) -> list[str]:
    return [m.value for message in at.chat_message if message.name == "user" for m in message.markdown]


def test_a_message_sent_while_the_agent_starts_is_shown_kept_and_answered(app, monkeypatch):
    runtime = get_runtime()
    loading = concurrent.futures.Future()  # the runtime's warm-up is still loading: a new conversation waits
    monkeypatch.setattr(runtime, "warm", loading)
    at = app(settled=False)
    chat = at.session_state["u_chat_session"]
    assert not chat.ready.done()
    assert any(status.label.startswith("Starting the agent") for status in at.get("status"))

    at.chat_input(key="u_chat_input").set_value("my favorite color is vermilion").run()
    assert _user_bubbles(at) == ["my favorite color is vermilion"]  # shown at once
    assert at.session_state["u_chat_outbox"] == ["my favorite color is vermilion"]  # kept, not yet sent
    at.run()  # a rerun (a poll) changes nothing
    assert _user_bubbles(at) == ["my favorite color is vermilion"]
    # ending now left the message to start a new conversation at once, without a word of the end
    assert at.button(key="u_chat_end").disabled

    loading.set_result(None)
    settle(at)
    assert not at.button(key="u_chat_end").disabled
    assert _user_bubbles(at) == ["my favorite color is vermilion"]  # once
    assistant = [m.value for message in at.chat_message if message.name == "assistant" for m in message.markdown]
    assert any("vermilion" in text for text in assistant)
    visitor = at.session_state["mp_visitor"]
    assert memories.recall(visitor.scope, "favorite_color").content == "vermilion"


def test_the_sidebar_lists_what_the_server_is_still_warming_up(app, monkeypatch):
    monkeypatch.setattr(warmup, "_warmup", warmup.Warmup(get_settings()))  # not started: every part waits
    at = app()
    shown = " ".join(caption.value for caption in at.sidebar.caption)
    assert "Warming up" in shown
    for label in ("the database", "the embedding model", "the agent", "the voice models"):
        assert label in shown
