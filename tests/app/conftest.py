"""Fixtures for the app's AppTest runs of the real entry point (streamlit_app.py). The browser tests
here use `streamlit_server`, `new_browser_page` and `new_mic_page` (tests/support/)."""

from __future__ import annotations

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


@pytest.fixture
def app(database_uri, v2_navigation) -> Callable[..., AppTest]:
    """Factory: a fresh AppTest of streamlit_app.py (a new browser session), already run once."""
    created: list[AppTest] = []

    def make(page: str | None = None) -> AppTest:
        at = AppTest.from_file(str(APP_SCRIPT), default_timeout=APP_TIMEOUT)
        if page:  # land on that page directly (our url paths are the file names)
            at.switch_page(page)
        at.run()
        created.append(at)
        return at

    yield make
    # End the conversations these browser sessions opened (their reports are saved).
    for at in created:
        chat = at.session_state.get("u_chat_session", None)
        if chat is not None:
            chat.close().result(timeout=60)
