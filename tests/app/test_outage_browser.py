"""The database goes away under an open page and comes back: the page says so in one
sentence, keeps the visitor, and continues by itself within 5 seconds of the server
being back (no reload, no click)."""

from __future__ import annotations

import re
import time

import pytest

from core import db
from tests.support.app import start_streamlit, stop_streamlit
from tests.support.browser import wait_for_identity_cookie
from tests.support.embedded import kept_down

pytestmark = [pytest.mark.browser, pytest.mark.slow]
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
GOAL_SECONDS = 5.0


@pytest.fixture(scope="module")
def server_url(database_uri):
    process, url = start_streamlit()
    yield url
    stop_streamlit(process)


def test_the_page_recovers_by_itself_within_5_seconds_of_the_database_coming_back(server_url, new_browser_page):
    page = new_browser_page()
    page.goto(f"{server_url}/memories")
    wait_for_identity_cookie(page)
    page.get_by_text("User id:").first.wait_for(timeout=90_000)
    visitor = UUID_RE.search(page.locator('[data-testid="stSidebar"]').inner_text()).group(0)

    server = db._embedded_servers[(db.get_settings().data_dir / "pg").resolve()]
    with kept_down(server):  # nobody can start it meanwhile, not even the app's own check
        page.locator('[data-testid="stTopNavLink"]', has_text="Chat").first.click()
        page.get_by_text("The database is not reachable right now").first.wait_for(timeout=30_000)
        assert page.get_by_text("Everything saved before is safe").count() >= 1
        assert page.locator('[data-testid="stException"]').count() == 0  # a sentence, not a traceback
        time.sleep(3)  # a few failed checks while it stays down
        assert page.get_by_text("The database is not reachable right now").count() >= 1
    db.revive_embedded()  # the server is back (started here, or by the page's own check a moment earlier)
    assert db.ping()["ok"]
    back_at = time.monotonic()
    page.locator('[data-testid="stChatInputTextArea"]').wait_for(timeout=30_000)  # the Chat page itself
    recovered = time.monotonic() - back_at
    print(f"page continued {recovered:.1f} s after the database was back")
    assert page.get_by_text("The database is not reachable right now").count() == 0
    assert visitor in page.locator('[data-testid="stSidebar"]').inner_text()  # same visitor, no new identity
    assert recovered <= GOAL_SECONDS
