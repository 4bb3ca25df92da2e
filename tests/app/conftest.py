"""Fixtures for the app's AppTest runs of the real page script (app_script.py). The browser tests
here use `streamlit_server`, `new_browser_page` and `new_mic_page` (tests/support/)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest

from tests.support.app import APP_SCRIPT, APP_TIMEOUT


@pytest.fixture
def v2_navigation(monkeypatch):
    """AppTest resets PagesManager.uses_pages_directory before every run, so with a
    `pages/` folder each rerun after the first would execute the page alone, as a
    v1 multipage app. A real server runs the entry script's st.navigation once and
    stays in v2 mode (streamlit/commands/navigation.py sets the flag to False);
    mirror that so the tests exercise what the browser gets."""
    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init)


def _state(at: AppTest, key: str):
    try:
        return at.session_state[key]
    except KeyError:
        return None


def _shows_waiting(at: AppTest) -> bool:
    return any(status.label.startswith(("Starting the agent", "Thinking")) for status in at.get("status"))


def settle(at: AppTest, timeout: float = APP_TIMEOUT) -> AppTest:
    """Run the page again while it shows the agent starting or thinking, until it shows the conversation
    with everything sent answered. The chat page never waits in a run; in the browser a polling fragment
    draws it again when the agent is done."""
    deadline = time.monotonic() + timeout
    while _shows_waiting(at):
        assert time.monotonic() < deadline, "the chat did not settle"
        chat = _state(at, "u_chat_session")
        if chat is not None and not (chat.ready.done() and not chat.busy):
            time.sleep(0.1)
        at.run()
    return at


@pytest.fixture
def app(database_uri, v2_navigation) -> Callable[..., AppTest]:
    """Factory: a fresh AppTest of app_script.py (a new browser session), already run once."""
    created: list[AppTest] = []

    def make(page: str | None = None, *, settled: bool = True) -> AppTest:
        at = AppTest.from_file(str(APP_SCRIPT), default_timeout=APP_TIMEOUT)
        if page:  # land on that page directly (our url paths are the file names)
            at.switch_page(page)
        at.run()
        created.append(at)
        return settle(at) if settled else at

    yield make
    # End the conversations these browser sessions opened (their reports are saved).
    for at in created:
        chat = at.session_state.get("u_chat_session", None)
        if chat is not None:
            chat.close().result(timeout=60)
