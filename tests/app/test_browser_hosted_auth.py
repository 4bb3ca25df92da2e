"""The app on Supabase Auth, the way a user runs it: `streamlit run` with
SUPABASE_URL / SUPABASE_ANON_KEY pointing at the Supabase Auth stand-in
(tests/support/supabase_standin.py, real HTTP on 127.0.0.1), the embedded Postgres as
the database, and headless Chromium as the visitor.

Covered: a new visitor is signed in anonymously by the auth server and keeps the
identity across reloads; saves it with an email (with and without Supabase's
confirmation email) and signs in with it in another browser to find the same
memories; a session the server expired or revoked leads to a clear re-sign-in;
anonymous sign-ins turned off, or the auth server down, is one sentence on the
page. Never a traceback.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.support.app import start_streamlit, stop_streamlit
from tests.support.browser import (
    TURN_TIMEOUT_MS,
    answered_turns,
    open_page,
    send,
    user_id_of,
    wait_for_app,
    wait_for_identity_cookie,
)
from tests.support.supabase_standin import SupabaseAuthStandIn
from ui.auth import COOKIE_NAME

pytestmark = [pytest.mark.browser, pytest.mark.slow]
PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def hosted(database_uri, tmp_path_factory):
    """(stand-in, app url): one app server for the module; tests flip the stand-in's switches."""
    standin = SupabaseAuthStandIn(mailer_autoconfirm=True, anonymous_sign_ins_per_hour=None).start()
    log = tmp_path_factory.mktemp("hosted-auth") / "streamlit.log"
    process, url = start_streamlit(standin.env(), log_path=log)
    try:
        yield standin, url
    finally:
        stop_streamlit(process)
        standin.stop()
        text = log.read_text(errors="replace")
        assert "Traceback" not in text, f"the app logged a traceback:\n{text[-4000:]}"


@pytest.fixture
def standin(hosted):
    standin, _ = hosted
    yield standin
    standin.anonymous_sign_ins, standin.mailer_autoconfirm, standin.disable_signup = True, True, False


def sidebar(page):
    return page.locator('[data-testid="stSidebar"]')


def expect_user(page, user_id: str) -> None:
    """Wait until the sidebar names this user (a rerun replaces the sidebar's elements one by one)."""
    expect(sidebar(page)).to_contain_text(f"User id: {user_id}", timeout=30_000)


def no_traceback(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0
    assert "Traceback" not in page.locator('[data-testid="stApp"]').inner_text()


def open_popover(page, label: str, submit: str):
    """The sidebar popover `label` (opened unless it already is), found by its form's `submit` button."""
    body = page.locator('[data-testid="stPopoverBody"]').filter(has=page.get_by_role("button", name=submit, exact=True))
    if not body.is_visible():
        sidebar(page).get_by_role("button", name=re.compile(label)).click()
    body.wait_for(timeout=30_000)
    return body


def save_with_email(page, email: str) -> None:
    popover = open_popover(page, "Save my memories with an email", "Save with this email")
    popover.get_by_role("textbox", name="Email").fill(email)
    popover.get_by_role("textbox", name=re.compile("Password")).fill(PASSWORD)
    popover.get_by_role("button", name="Save with this email").click()
    wait_for_app(page)


def sign_in(page, email: str) -> None:
    popover = open_popover(page, "Sign in with email", "Sign in")
    popover.get_by_role("textbox", name="Email").fill(email)
    popover.get_by_role("textbox", name="Password").fill(PASSWORD)
    popover.get_by_role("button", name="Sign in").click()
    wait_for_app(page)


def test_a_new_visitor_is_signed_in_by_supabase_auth_and_keeps_the_identity(hosted, standin, new_browser_page):
    _, url = hosted
    page = new_browser_page((1600, 1000))
    signups_before = standin.paths().count("POST /auth/v1/signup")
    page.goto(url)
    wait_for_identity_cookie(page)
    visitor = user_id_of(page)

    assert standin.paths().count("POST /auth/v1/signup") == signups_before + 1
    assert standin.users[visitor]["is_anonymous"] is True
    expect(sidebar(page)).to_contain_text("anonymous")
    expect(sidebar(page)).to_contain_text("Auth · Supabase Auth")  # the sidebar's "Running on" row

    page.reload()
    wait_for_identity_cookie(page)
    expect_user(page, visitor)
    assert standin.paths().count("POST /auth/v1/signup") == signups_before + 1  # restored, not a new user
    no_traceback(page)


def test_save_with_email_then_sign_in_elsewhere_finds_the_same_memories(hosted, standin, new_browser_page):
    _, url = hosted
    page = new_browser_page((1600, 1000))
    page.goto(url)
    wait_for_identity_cookie(page)
    visitor = user_id_of(page)
    answered_turns(page).first.wait_for(timeout=TURN_TIMEOUT_MS)  # the agent's greeting
    assert "teal" in send(page, "my favorite color is teal").lower()

    save_with_email(page, "robin@example.com")
    expect(sidebar(page)).to_contain_text("robin@example.com", timeout=30_000)
    expect_user(page, visitor)
    assert standin.users[visitor]["email"] == "robin@example.com"
    no_traceback(page)

    elsewhere = new_browser_page((1600, 1000))
    elsewhere.goto(url)
    wait_for_identity_cookie(elsewhere)
    assert user_id_of(elsewhere) != visitor  # a new anonymous visitor until they sign in
    sign_in(elsewhere, "robin@example.com")
    expect(sidebar(elsewhere)).to_contain_text("robin@example.com", timeout=30_000)
    expect_user(elsewhere, visitor)
    open_page(elsewhere, "Memories")
    expect(elsewhere.locator('[class*="st-key-u_memcard_"]').filter(has_text="favorite_color")).to_contain_text(
        "teal", timeout=TURN_TIMEOUT_MS
    )
    no_traceback(elsewhere)


def test_save_with_email_waits_for_the_confirmation_link(hosted, standin, new_browser_page):
    """Supabase's hosted default ("Confirm email" on): the address counts once its link is opened."""
    _, url = hosted
    standin.mailer_autoconfirm = False
    page = new_browser_page((1600, 1000))
    page.goto(url)
    wait_for_identity_cookie(page)
    visitor = user_id_of(page)

    save_with_email(page, "casey@example.com")
    expect(sidebar(page)).to_contain_text("Confirm casey@example.com", timeout=30_000)
    expect(sidebar(page)).to_contain_text("anonymous")
    assert standin.users[visitor]["new_email"] == "casey@example.com"
    no_traceback(page)

    elsewhere = new_browser_page((1600, 1000))
    elsewhere.goto(url)
    wait_for_identity_cookie(elsewhere)
    sign_in(elsewhere, "casey@example.com")  # too early: the address is not the account's yet
    expect(elsewhere.get_by_text("Supabase Auth refused: Invalid login credentials")).to_be_visible(timeout=30_000)
    assert user_id_of(elsewhere) != visitor

    assert standin.confirm_email("casey@example.com") == 303  # the visitor opens the emailed link
    sign_in(elsewhere, "casey@example.com")
    expect(sidebar(elsewhere)).to_contain_text("casey@example.com", timeout=30_000)
    expect_user(elsewhere, visitor)

    page.reload()  # the first browser now shows the confirmed account too
    wait_for_identity_cookie(page)
    expect_user(page, visitor)
    expect(sidebar(page)).to_contain_text("casey@example.com")
    expect(sidebar(page)).not_to_contain_text("Confirm casey@example.com")
    no_traceback(page)
    no_traceback(elsewhere)


def _email_user_with_a_memory(url, standin, new_browser_page, email):
    page = new_browser_page((1600, 1000))
    page.goto(url)
    wait_for_identity_cookie(page)
    visitor = user_id_of(page)
    answered_turns(page).first.wait_for(timeout=TURN_TIMEOUT_MS)
    assert "lisbon" in send(page, "I live in Lisbon").lower()
    save_with_email(page, email)
    expect(sidebar(page)).to_contain_text(email, timeout=30_000)
    return page, visitor


def test_a_session_revoked_at_supabase_leads_to_a_clear_sign_in_again(hosted, standin, new_browser_page):
    _, url = hosted
    page, visitor = _email_user_with_a_memory(url, standin, new_browser_page, "revoked@example.com")

    standin.revoke_sessions(visitor)  # e.g. "sign out everywhere" on another device
    page.reload()
    wait_for_identity_cookie(page)
    expect(sidebar(page)).to_contain_text(
        "Your previous identity could not be restored: the session was signed out, for example from another device",
        timeout=30_000,
    )
    assert user_id_of(page) != visitor  # a new anonymous visitor meanwhile, never the old tokens
    no_traceback(page)

    sign_in(page, "revoked@example.com")
    expect(sidebar(page)).to_contain_text("revoked@example.com", timeout=30_000)
    expect_user(page, visitor)
    expect(sidebar(page)).not_to_contain_text("could not be restored")
    open_page(page, "Memories")
    expect(page.locator('[class*="st-key-u_memcard_"]').filter(has_text="Lisbon")).to_have_count(
        1, timeout=TURN_TIMEOUT_MS
    )
    no_traceback(page)


def test_a_session_that_expires_while_the_page_is_open_offers_to_sign_in_again(hosted, standin, new_browser_page):
    _, url = hosted
    page, visitor = _email_user_with_a_memory(url, standin, new_browser_page, "expired@example.com")

    standin.expire_sessions(visitor)
    # The app trusts a verified token for 30 s (reruns would otherwise each ask Supabase); after that the
    # next interaction asks again, the server refuses the token and the refresh token.
    page.wait_for_timeout(31_000)
    open_page(page, "Memories")
    expect(sidebar(page)).to_contain_text(
        "Your session as expired@example.com has ended: the session expired", timeout=30_000
    )
    assert user_id_of(page) != visitor
    resign = page.locator('[class*="st-key-resign_card"]')
    expect(resign.get_by_role("textbox", name="Email")).to_have_value("expired@example.com")
    resign.get_by_role("textbox", name="Password").fill(PASSWORD)
    resign.get_by_role("button", name="Sign in").click()
    wait_for_app(page)
    expect(sidebar(page)).to_contain_text("expired@example.com", timeout=30_000)
    expect_user(page, visitor)
    expect(page.locator('[class*="st-key-u_memcard_"]').filter(has_text="Lisbon")).to_have_count(
        1, timeout=TURN_TIMEOUT_MS
    )
    no_traceback(page)


def test_anonymous_sign_ins_turned_off_is_one_sentence_and_saved_accounts_can_still_sign_in(
    hosted, standin, new_browser_page
):
    _, url = hosted
    account = standin.new_user(email="saved@example.com", password=PASSWORD)
    standin.anonymous_sign_ins = False
    page = new_browser_page((1600, 1000))
    page.goto(url)
    wait_for_app(page)
    alert = page.locator('[data-testid="stAlertContentError"] [data-testid="stMarkdownContainer"]')
    expect(alert).to_have_text(
        re.compile(
            r"^Supabase Auth at http://127\.0\.0\.1:\d+ has anonymous sign-ins turned "
            r"off; enable them in the Supabase dashboard under Authentication → Sign "
            r"In / Providers\.$"
        ),
        timeout=30_000,
    )
    no_traceback(page)

    gate = page.locator('[class*="st-key-gate_sign_in"]')
    gate.get_by_role("textbox", name="Email").fill("saved@example.com")
    gate.get_by_role("textbox", name="Password").fill(PASSWORD)
    gate.get_by_role("button", name="Sign in").click()
    wait_for_identity_cookie(page)
    expect_user(page, account["id"])
    expect(sidebar(page)).to_contain_text("saved@example.com")
    no_traceback(page)


def test_auth_server_down_is_one_sentence_and_the_page_recovers(hosted, standin, new_browser_page):
    _, url = hosted
    port = int(standin.url.rsplit(":", 1)[1])
    standin.stop()
    try:
        page = new_browser_page((1600, 1000))
        page.goto(url)
        wait_for_app(page)
        alert = page.locator('[data-testid="stAlertContentError"] [data-testid="stMarkdownContainer"]')
        expect(alert).to_have_text(
            re.compile(
                rf"^Supabase Auth is not reachable at http://127\.0\.0\.1:{port} "
                r"\(Connection refused\); check SUPABASE_URL, or try again in a moment if it is "
                r"correct\.$"
            ),
            timeout=30_000,
        )
        # no identity was invented during the outage
        assert COOKIE_NAME not in {cookie["name"] for cookie in page.context.cookies()}
        no_traceback(page)
    finally:
        standin.start(port)
    page.get_by_role("button", name="Try again").click()
    wait_for_identity_cookie(page)
    assert standin.users[user_id_of(page)]["is_anonymous"] is True
    no_traceback(page)
