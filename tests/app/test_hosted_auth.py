"""The identity gate on Supabase Auth, through AppTest runs of the real entry
point: the hosted issuer talks to the Supabase Auth stand-in over HTTP, the
database is the embedded Postgres. The paths a browser reaches only after
waiting (an access token refused mid-session) are driven here by clearing the
app's 30-second verification cache; tests/test_browser_hosted_auth.py covers
the same flows in Chromium."""

from __future__ import annotations

import pytest

from core import identity
from core.errors import AuthUnavailable

PASSWORD = "correct horse battery"


def _visitor(at):
    return at.session_state["mp_visitor"]


def _notice(at) -> str:
    """The identity notice, as shown at the top of the sidebar."""
    notice = at.session_state.get("mp_auth_notice", "")
    assert not notice or any(w.value == notice for w in at.sidebar.warning)
    return notice


def _next_request_asks_the_server():
    identity._verified_cache.clear()  # what 30 seconds of a page left open do


def test_an_access_token_the_server_calls_expired_is_refreshed_silently(supabase_auth, app):
    at = app()
    visitor = _visitor(at)
    supabase_auth.advance_clock(3700)  # the auth server's clock is an hour ahead of the app's
    _next_request_asks_the_server()
    at.run()
    assert not at.exception and not at.error
    assert _visitor(at).user_id == visitor.user_id and not _notice(at)
    assert _visitor(at).auth.refresh_token != visitor.auth.refresh_token  # renewed
    assert supabase_auth.paths().count("POST /auth/v1/signup") == 1


def test_a_revoked_anonymous_session_says_it_cannot_come_back(supabase_auth, app):
    at = app()
    visitor = _visitor(at)
    supabase_auth.revoke_sessions(visitor.user_id)
    _next_request_asks_the_server()
    at.run()
    assert not at.exception
    assert _visitor(at).user_id != visitor.user_id and _visitor(at).is_anonymous
    assert (
        "Your session has ended: the session was signed out, for example from another device. An anonymous "
        "identity cannot be signed into again" in _notice(at)
    )
    assert "resign_email" not in " ".join(str(k) for k in at.session_state)  # no sign-in form: nothing to sign into


def test_an_expired_email_session_offers_sign_in_and_gets_the_identity_back(supabase_auth, app):
    at = app()
    visitor = _visitor(at)
    at.text_input(key="upgrade_email").input("pat@example.com")
    at.text_input(key="upgrade_password").input(PASSWORD)
    at.button(key="FormSubmitter:upgrade_form-Save with this email").click()
    at.run()
    assert _visitor(at).email == "pat@example.com"

    supabase_auth.expire_sessions(visitor.user_id)
    _next_request_asks_the_server()
    at.run()
    assert not at.exception
    assert "Your session as pat@example.com has ended: the session expired. Sign in again" in _notice(at)
    assert _visitor(at).user_id != visitor.user_id
    assert at.text_input(key="resign_email").value == "pat@example.com"

    at.text_input(key="resign_password").input(PASSWORD)
    at.button(key="FormSubmitter:resign_form-Sign in").click()
    at.run()
    assert not at.exception and not _notice(at)
    assert _visitor(at).user_id == visitor.user_id and _visitor(at).email == "pat@example.com"


def test_an_unreachable_auth_server_keeps_the_identity(supabase_auth, app):
    at = app()
    visitor = _visitor(at)
    port = int(supabase_auth.url.rsplit(":", 1)[1])
    supabase_auth.stop()
    _next_request_asks_the_server()
    at.run()
    assert not at.exception
    assert any(e.value.startswith(f"Supabase Auth is not reachable at {supabase_auth.url}") for e in at.error)
    assert at.session_state["mp_auth_session"] == visitor.auth  # nothing replaced during the outage
    assert [b.label for b in at.button if b.key == "auth_retry"] == ["Try again"]

    supabase_auth.start(port)
    at.run()
    assert not at.error
    assert _visitor(at).user_id == visitor.user_id and not _notice(at)


def test_refreshing_against_a_stopped_server_is_unavailable_not_refused(supabase_auth):
    session = identity.sign_in_anonymously()
    supabase_auth.stop()
    with pytest.raises(AuthUnavailable):
        identity.refresh(session.refresh_token)


def test_a_reload_whose_cookie_lags_one_rotation_behind_still_sees_a_revocation(supabase_auth, app, monkeypatch):
    """The browser's cookie is written by a component after the run, so a reload right after
    "Save with this email" can present the token the upgrade rotated away. Restoring that within the
    reuse interval hands over the family's newer session; that session must be checked with Supabase
    then, not taken from this server's memory or its 30-second verification cache."""
    from ui import auth as ui_auth

    at = app()
    visitor = _visitor(at)
    cookie_before_upgrade = visitor.auth.refresh_token
    at.text_input(key="upgrade_email").input("lee@example.com")
    at.text_input(key="upgrade_password").input(PASSWORD)
    at.button(key="FormSubmitter:upgrade_form-Save with this email").click()
    at.run()
    assert _visitor(at).email == "lee@example.com"  # the open page verified (and cached) the upgraded token

    # A reload before anything is revoked gets the same account back: the lagging cookie is not a replay.
    monkeypatch.setattr(ui_auth, "_read_cookie", lambda: cookie_before_upgrade)
    reloaded = app()
    assert not reloaded.exception and not _notice(reloaded)
    assert _visitor(reloaded).user_id == visitor.user_id and _visitor(reloaded).email == "lee@example.com"

    supabase_auth.revoke_sessions(visitor.user_id)  # "sign out everywhere" on another device
    supabase_auth.requests.clear()
    reloaded = app()  # a new browser session with the same lagging cookie, seconds later
    assert not reloaded.exception
    assert _notice(reloaded).startswith(
        "Your previous identity could not be restored: the session was signed out, for example from another device."
    )
    assert _visitor(reloaded).user_id != visitor.user_id and _visitor(reloaded).is_anonymous
    assert "GET /auth/v1/user" in supabase_auth.paths() or "POST /auth/v1/token" in supabase_auth.paths()


def test_a_lagging_cookie_whose_newer_session_the_server_calls_expired_is_refreshed_once(supabase_auth):
    from ui import auth as ui_auth

    first, _, family = ui_auth.restore_or_sign_in(None)
    second, notice, _ = ui_auth.restore_or_sign_in(first.refresh_token)  # rotated; the cookie still holds `first`
    assert notice is None and second.refresh_token != first.refresh_token
    supabase_auth.advance_clock(3700)  # server clock an hour ahead: `second` looks expired
    supabase_auth.requests.clear()
    again, notice, same_family = ui_auth.restore_or_sign_in(first.refresh_token)
    assert notice is None and same_family == family and again.user_id == first.user_id
    assert supabase_auth.paths() == ["GET /auth/v1/user", "POST /auth/v1/token"]  # asked, refused, refreshed once
    assert again.refresh_token not in (first.refresh_token, second.refresh_token)
    assert identity.verify(again.access_token, use_cache=False).user_id == first.user_id
