"""Several app processes, one database: two `streamlit run` processes on the same
embedded database, one browser whose tabs and reloads alternate between them.

Access tokens here live 60 s, so every run of a page renews its session (the
renewal margin is 120 s), and the auth server's reuse interval is 0: a tab that
presented a token another process had already exchanged would end the family
and be signed out. The tabs stay signed in only because the hand-offs between
sessions live in Postgres, where both processes see them."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.support.app import start_streamlit, stop_streamlit
from tests.support.browser import open_page, wait_for_app, wait_for_identity_cookie

# On 2026-11-26 one fresh-clone run ended here with the second tab signed out for "its sign-in token was
# presented twice": two processes renewed the same family at once. The exchange now holds a lock shared by
# the processes (ui/auth.py, core/session_store.family_lock), so this test gets no second try.
pytestmark = [pytest.mark.browser, pytest.mark.slow]
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIMEOUT_MS = 90_000
ENDED = re.compile("could not be restored|session has ended|has ended")


@pytest.fixture(scope="module")
def two_servers(database_uri):
    env = {"ACCESS_TOKEN_TTL_SECONDS": "60", "REFRESH_TOKEN_REUSE_SECONDS": "0"}
    first = start_streamlit(env)
    try:
        second = start_streamlit(env)
    except Exception:
        stop_streamlit(first[0])
        raise
    yield first[1], second[1]
    stop_streamlit(first[0])
    stop_streamlit(second[0])


def user_id_of(page) -> str:
    page.get_by_text("User id:").first.wait_for(timeout=TIMEOUT_MS)
    match = UUID_RE.search(page.locator('[data-testid="stSidebar"]').inner_text())
    assert match, "no user id in the sidebar"
    return match.group(0)


def assert_signed_in_as(page, user_id: str) -> None:
    assert user_id_of(page) == user_id, page.locator('[data-testid="stSidebar"]').inner_text()
    assert not page.get_by_text(ENDED).count(), page.locator('[data-testid="stSidebar"]').inner_text()


def go(page, url: str, title: str | None = None) -> None:
    page.goto(url if title is None else f"{url}/{title.lower()}")
    wait_for_identity_cookie(page)


def click_nav(page, title: str) -> None:
    # the shared helper clicks again when Streamlit dropped a click that landed during a rerun (here every run
    # renews the 60 s token, and until 2026-12-07 each new token cost a rerun); a fresh-clone run on
    # 2026-11-27 waited 90 s for the Chat heading after one click
    open_page(page, title)


def test_one_browser_across_two_app_processes_keeps_its_identity_and_memories(two_servers, browser):
    a, b = two_servers
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    try:
        first = context.new_page()
        go(first, a)
        visitor = user_id_of(first)
        box = first.locator('[data-testid="stChatInputTextArea"]')
        box.fill("my favorite color is teal")
        box.press("Enter")
        first.locator('[class*="st-key-chat_turn_"]', has_text="teal").first.wait_for(timeout=TIMEOUT_MS)

        # a second tab of the same browser, served by the other process
        second = context.new_page()
        go(second, b, "Memories")
        assert_signed_in_as(second, visitor)
        expect(second.locator('[class*="st-key-u_memcard_"]', has_text="favorite_color")).to_contain_text(
            "teal", timeout=30_000
        )

        # both tabs keep working, each on its own process, while each run rotates the shared tokens
        for round_ in range(3):
            click_nav(first, "Memories" if round_ % 2 == 0 else "Chat")
            assert_signed_in_as(first, visitor)
            click_nav(second, "Chat" if round_ % 2 == 0 else "Memories")
            assert_signed_in_as(second, visitor)

        # reloads alternate between the processes: the cookie brings the same identity back each time,
        # also when a reload lands before the previous page's cookie write (no wait in between)
        for index, url in enumerate([a, b, a, b]):
            first.goto(f"{url}/memories")
            if index % 2:
                wait_for_identity_cookie(first)
            else:
                wait_for_app(first)
            assert_signed_in_as(first, visitor)
        expect(first.locator('[class*="st-key-u_memcard_"]', has_text="favorite_color")).to_contain_text(
            "teal", timeout=30_000
        )
        click_nav(second, "Memories")
        assert_signed_in_as(second, visitor)
    finally:
        context.close()
