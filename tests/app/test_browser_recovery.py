"""A page whose Streamlit frontend crashed (the app unmounted, a white page) reloads by itself, as the
same visitor, and does not reload again within a minute (ui/recovery.py). The crash itself is a
Streamlit race that cannot be triggered on purpose; what it leaves is the same as removing the app's
root from the document, which is what the test does."""

from __future__ import annotations

import pytest

from tests.support.browser import open_page, user_id_of, wait_for_app, wait_for_identity_cookie

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CRASH = "() => document.querySelector('[data-testid=stApp]').remove()"
RECOVERIES = "() => Number(sessionStorage.getItem('mpRecoveries') || 0)"


def test_a_page_whose_frontend_crashed_reloads_as_the_same_visitor(streamlit_server, new_browser_page):
    page = new_browser_page((1440, 900))
    page.goto(streamlit_server)
    wait_for_identity_cookie(page)
    visitor = user_id_of(page)
    open_page(page, "Memories")
    assert page.evaluate(RECOVERIES) == 0

    with page.expect_event("load", timeout=15_000):
        page.evaluate(CRASH)
    wait_for_app(page)
    assert user_id_of(page) == visitor  # the cookie brought the same visitor back
    assert page.url.rstrip("/").endswith("/memories")  # to the page they were on
    page.get_by_role("heading", name="Memories").first.wait_for(timeout=60_000)
    assert page.evaluate(RECOVERIES) == 1

    # a second crash within the minute is left as it is: never a reload loop
    page.evaluate(CRASH)
    page.wait_for_timeout(5_000)
    assert page.locator('[data-testid="stApp"]').count() == 0
    assert page.evaluate(RECOVERIES) == 1
