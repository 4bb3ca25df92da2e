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
