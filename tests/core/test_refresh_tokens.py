"""Refresh tokens of the embedded issuer: how long they last, what ends them, and
that a replay ends one family, not every device of the user."""

from __future__ import annotations

import uuid

import pytest

from core import db, identity
from core.errors import AuthError, InvalidInput

PASSWORD = "correct horse battery"


def _backdate(token: str, column: str, interval: str) -> None:
    with db.admin_connection() as conn:
        conn.execute(
            f"update auth.refresh_tokens set {column} = {column} - interval '{interval}' where token_hash = %s",
            (identity.hash_refresh_token(token),),
        )


def _family(token: str):
    with db.admin_connection() as conn:
        return conn.execute(
            "select family_id from auth.refresh_tokens where token_hash = %s", (identity.hash_refresh_token(token),)
        ).fetchone()[0]


def _email_user():
    email = f"devices-{uuid.uuid4().hex[:10]}@example.com"
    upgraded = identity.upgrade_to_email(identity.sign_in_anonymously(), email, PASSWORD)
    return email, upgraded


def _refused(token: str, code: str | None = None) -> None:
    with pytest.raises(AuthError) as info:
        identity.refresh(token)
    if code:
        assert info.value.code == code, (info.value.code, str(info.value))


def test_a_token_backdated_400_days_no_longer_refreshes(database_uri):
    session = identity.sign_in_anonymously()
    _backdate(session.refresh_token, "session_started_at", "400 days")
    _backdate(session.refresh_token, "created_at", "400 days")
    _refused(session.refresh_token, "session_expired")


def test_rotation_does_not_extend_the_absolute_lifetime(database_uri):
    session = identity.sign_in_anonymously()
    _backdate(session.refresh_token, "session_started_at", "29 days")
    for _ in range(3):  # used every day: still ends 30 days after the sign-in
        session = identity.refresh(session.refresh_token)
    with db.admin_connection() as conn:
        age = conn.execute(
            "select extract(day from now() - session_started_at) from auth.refresh_tokens where token_hash = %s",
            (identity.hash_refresh_token(session.refresh_token),),
        ).fetchone()
    assert int(age[0]) == 29
    _backdate(session.refresh_token, "session_started_at", "2 days")
    _refused(session.refresh_token, "session_expired")


def test_an_unused_token_expires_after_the_inactivity_timeout(database_uri):
    session = identity.sign_in_anonymously()
    _backdate(session.refresh_token, "created_at", "13 days")
    renewed = identity.refresh(session.refresh_token)  # 13 days idle: still fine, and the clock restarts
    _backdate(renewed.refresh_token, "created_at", "15 days")
    _refused(renewed.refresh_token, "session_expired")


def test_settings_choose_the_lifetimes(database_uri, monkeypatch):
    from core import config

    monkeypatch.setenv("REFRESH_TOKEN_INACTIVITY_DAYS", "0.5")
    config.reload_settings()
    try:
        session = identity.sign_in_anonymously()
        _backdate(session.refresh_token, "created_at", "13 hours")
        _refused(session.refresh_token, "session_expired")
    finally:
        monkeypatch.undo()
        config.reload_settings()


def test_a_replay_right_after_an_exchange_gets_a_sibling_later_ends_only_that_family(database_uri):
    email, upgraded = _email_user()
    laptop = identity.sign_in_with_password(email, PASSWORD)
    phone = identity.sign_in_with_password(email, PASSWORD)
    assert _family(laptop.refresh_token) != _family(phone.refresh_token)

    renewed = identity.refresh(laptop.refresh_token)
    sibling = identity.refresh(laptop.refresh_token)  # a second tab renewing at the same moment
    assert sibling.refresh_token != renewed.refresh_token
    assert _family(sibling.refresh_token) == _family(renewed.refresh_token) == _family(laptop.refresh_token)

    _backdate(laptop.refresh_token, "rotated_at", "1 minute")  # now it is a replay
    _refused(laptop.refresh_token, "refresh_token_already_used")
    _refused(renewed.refresh_token, "refresh_token_already_used")  # the laptop's family ended...
    _refused(sibling.refresh_token, "refresh_token_already_used")
    assert identity.refresh(phone.refresh_token).user_id == upgraded.user_id  # ...the phone's did not


def test_upgrading_to_email_revokes_every_token_issued_while_anonymous(database_uri):
    anonymous = identity.sign_in_anonymously()
    copied = identity.refresh(anonymous.refresh_token)  # a token stolen while anonymous
    browser = identity.refresh(copied.refresh_token)
    _backdate(copied.refresh_token, "rotated_at", "1 minute")
    upgraded = identity.upgrade_to_email(browser, f"up-{uuid.uuid4().hex[:8]}@example.com", PASSWORD)

    _refused(browser.refresh_token, "session_not_found")
    _refused(copied.refresh_token)
    renewed = identity.refresh(upgraded.refresh_token)  # the upgraded session itself goes on
    assert renewed.user_id == anonymous.user_id and renewed.is_anonymous is False


def test_signing_out_revokes_every_earlier_token_of_the_user(database_uri):
    email, upgraded = _email_user()
    first = identity.sign_in_with_password(email, PASSWORD)
    second = identity.sign_in_with_password(email, PASSWORD)
    identity.sign_out(first)
    for session in (first, second, upgraded):
        _refused(session.refresh_token, "session_not_found")
    assert identity.sign_in_with_password(email, PASSWORD).user_id == upgraded.user_id  # signing in again works


def test_signing_out_with_someone_elses_session_object_revokes_nothing(database_uri):
    victim, attacker = identity.sign_in_anonymously(), identity.sign_in_anonymously()
    forged = identity.AuthSession(
        access_token=attacker.access_token,
        refresh_token=attacker.refresh_token,
        expires_at=attacker.expires_at,
        user_id=victim.user_id,
        is_anonymous=True,
    )
    identity.sign_out(forged)
    assert identity.refresh(victim.refresh_token).user_id == victim.user_id


def test_changing_the_password_revokes_every_other_session(database_uri):
    email, upgraded = _email_user()
    elsewhere = identity.sign_in_with_password(email, PASSWORD)
    changed = identity.change_password(upgraded, "an even better passphrase")
    _refused(elsewhere.refresh_token, "session_not_found")
    _refused(upgraded.refresh_token, "session_not_found")
    assert identity.refresh(changed.refresh_token).user_id == upgraded.user_id
    with pytest.raises(AuthError, match="Wrong email or password"):
        identity.sign_in_with_password(email, PASSWORD)
    assert identity.sign_in_with_password(email, "an even better passphrase").user_id == upgraded.user_id
    with pytest.raises(InvalidInput, match="at least 8"):
        identity.change_password(changed, "short")
    with pytest.raises(InvalidInput, match="anonymous"):
        identity.change_password(identity.sign_in_anonymously(), "a long enough password")
