"""Hosted identity, tested at Supabase Auth's HTTP contract.

Supabase Auth (GoTrue) cannot run here, so a small stand-in speaks the part of
its API core.identity uses -- POST /auth/v1/signup, GET /auth/v1/user,
POST /auth/v1/token (refresh_token, password), PUT /auth/v1/user,
POST /auth/v1/logout -- checks the apikey header, signs its own HS256 tokens
with its own secret, rotates refresh tokens and refuses reuse. core.identity
talks to it through the real supabase_auth client.
"""

from __future__ import annotations

import json
import socket
import time
import uuid

import jwt
import pytest

from core import config, identity
from core.db import Scope
from core.errors import AuthError, InvalidInput
from tests.supabase_standin import ANON_KEY, SupabaseAuthStandIn

PASSWORD = "correct horse battery"


@pytest.fixture
def fake_auth(monkeypatch):
    with SupabaseAuthStandIn() as standin:
        for name, value in standin.env().items():
            monkeypatch.setenv(name, value)
        config.reload_settings()
        identity._verified_cache.clear()
        try:
            yield standin
        finally:
            monkeypatch.undo()
            config.reload_settings()
            identity._verified_cache.clear()


def test_settings_select_the_hosted_issuer(fake_auth):
    settings = config.get_settings()
    assert settings.hosted_auth is True and settings.mode_label == "hosted"
    assert isinstance(identity._issuer(), identity.SupabaseAuthIssuer)


def test_anonymous_sign_in_goes_through_signup(fake_auth):
    session = identity.sign_in_anonymously()

    assert fake_auth.paths() == ["POST /auth/v1/signup"]
    request = fake_auth.requests[0]
    assert request["apikey"] == ANON_KEY
    assert str(session.user_id) in fake_auth.users
    assert session.is_anonymous is True and session.email is None
    assert jwt.decode(session.access_token, fake_auth.secret, algorithms=["HS256"],
                      audience="authenticated")["sub"] == str(session.user_id)
    assert session.refresh_token in fake_auth.refresh_tokens
    assert session.expires_at > time.time() + 3000


def test_verify_asks_the_server(fake_auth):
    session = identity.sign_in_anonymously()
    fake_auth.requests.clear()

    verified = identity.verify(session.access_token)

    assert fake_auth.paths() == ["GET /auth/v1/user"]
    assert fake_auth.requests[0]["authorization"] == f"Bearer {session.access_token}"
    assert fake_auth.requests[0]["apikey"] == ANON_KEY
    assert verified.user_id == session.user_id and verified.is_anonymous is True
    assert verified.claims["sub"] == str(session.user_id)
    assert Scope.for_user(verified).user_id == session.user_id


def _well_formed(fake, user_id, secret, **overrides) -> str:
    now = int(time.time())
    claims = {"iss": f"{fake.url}/auth/v1", "sub": str(user_id), "aud": "authenticated", "role": "authenticated",
              "iat": now, "exp": now + 600, "is_anonymous": True, "session_id": str(uuid.uuid4())}
    claims.update(overrides)
    return jwt.encode(claims, secret, algorithm="HS256")


def test_verify_refuses_well_formed_tokens_the_server_rejects(fake_auth):
    session = identity.sign_in_anonymously()
    candidates = {
        "signed with another secret": _well_formed(fake_auth, session.user_id, "x" * 40),
        # the embedded issuer's secret means nothing in hosted mode
        "signed with the embedded secret": _well_formed(fake_auth, session.user_id, identity.jwt_secret(),
                                                        iss=identity.EMBEDDED_ISSUER),
        "for a user the server does not know": _well_formed(fake_auth, uuid.uuid4(), fake_auth.secret),
        "expired": _well_formed(fake_auth, session.user_id, fake_auth.secret, exp=int(time.time()) - 60),
    }
    for what, token in candidates.items():
        fake_auth.requests.clear()
        with pytest.raises(AuthError, match="Supabase Auth refused: invalid JWT") as info:
            identity.verify(token)
        assert fake_auth.paths() == ["GET /auth/v1/user"], what  # the server was asked, and it said no
        assert str(session.user_id) not in str(info.value)


def test_verify_refuses_a_token_whose_session_the_server_revoked(fake_auth):
    session = identity.sign_in_anonymously()
    claims = jwt.decode(session.access_token, options={"verify_signature": False})
    fake_auth.revoked_sessions.add(claims["session_id"])  # e.g. signed out on another device
    with pytest.raises(AuthError, match="refused"):
        identity.verify(session.access_token)


def test_verify_refuses_when_the_server_answers_for_another_user(fake_auth):
    session = identity.sign_in_anonymously()
    fake_auth.user_id_override = str(uuid.uuid4())
    with pytest.raises(AuthError, match="does not belong to the user"):
        identity.verify(session.access_token)


@pytest.mark.parametrize("garbage", ["garbage", "a.b.c", "eyJhbGciOiJub25lIn0.e30."])
def test_verify_refuses_garbage(fake_auth, garbage):
    with pytest.raises(AuthError, match="refused"):
        identity.verify(garbage)
    assert fake_auth.paths() == ["GET /auth/v1/user"]


def test_empty_tokens_are_refused_without_asking(fake_auth):
    for token in (None, "", "x" * 9000):
        with pytest.raises(AuthError, match="sign in again"):
            identity.verify(token)
    assert fake_auth.requests == []


def test_verified_tokens_are_cached_briefly_and_sign_out_drops_them(fake_auth):
    session = identity.sign_in_anonymously()
    identity.verify(session.access_token)
    identity.verify(session.access_token)
    assert fake_auth.paths().count("GET /auth/v1/user") == 1  # Streamlit reruns do not each hit Supabase

    identity.sign_out(session)
    assert "POST /auth/v1/logout" in fake_auth.paths()
    with pytest.raises(AuthError, match="refused"):
        identity.verify(session.access_token)
    with pytest.raises(AuthError, match="Already Used|refused"):
        identity.refresh(session.refresh_token)


def test_refresh_rotates_and_refuses_reuse(fake_auth):
    first = identity.sign_in_anonymously()
    fake_auth.requests.clear()

    second = identity.refresh(first.refresh_token)

    assert fake_auth.paths() == ["POST /auth/v1/token"]
    assert fake_auth.requests[0]["query"] == {"grant_type": ["refresh_token"]}
    assert fake_auth.requests[0]["body"] == {"refresh_token": first.refresh_token}
    assert second.user_id == first.user_id and second.refresh_token != first.refresh_token
    assert identity.verify(second.access_token).user_id == first.user_id

    with pytest.raises(AuthError, match="Supabase Auth refused: Invalid Refresh Token: Already Used"):
        identity.refresh(first.refresh_token)
    with pytest.raises(AuthError, match="Already Used"):
        identity.refresh(second.refresh_token)  # the server revoked the session on reuse
    with pytest.raises(AuthError, match="Not Found"):
        identity.refresh("never-issued")


def test_upgrade_to_email_keeps_the_user_id(fake_auth):
    anonymous = identity.sign_in_anonymously()
    fake_auth.requests.clear()

    upgraded = identity.upgrade_to_email(anonymous, "Robin@Example.com", PASSWORD)

    updates = [r for r in fake_auth.requests if r["method"] == "PUT"]
    assert len(updates) == 1 and updates[0]["path"] == "/auth/v1/user"
    assert updates[0]["body"]["email"] == "robin@example.com" and updates[0]["body"]["password"] == PASSWORD
    assert updates[0]["authorization"] == f"Bearer {anonymous.access_token}"
    assert upgraded.user_id == anonymous.user_id
    assert upgraded.is_anonymous is False and upgraded.email == "robin@example.com"
    assert fake_auth.users[str(anonymous.user_id)]["is_anonymous"] is False
    verified = identity.verify(upgraded.access_token)
    assert verified.user_id == anonymous.user_id and verified.email == "robin@example.com"

    signed_in = identity.sign_in_with_password("robin@example.com", PASSWORD)
    assert signed_in.user_id == anonymous.user_id
    password_request = fake_auth.requests[-1]
    assert password_request["path"] == "/auth/v1/token" and password_request["query"] == {"grant_type": ["password"]}


def test_upgrade_with_an_expired_access_token_uses_the_rotated_refresh_token(fake_auth):
    anonymous = identity.sign_in_anonymously()
    expired = fake_auth.issue(fake_auth.users[str(anonymous.user_id)], expires_in=-10)
    stale = identity.AuthSession(access_token=expired["access_token"], refresh_token=expired["refresh_token"],
                                 expires_at=expired["expires_at"], user_id=anonymous.user_id, is_anonymous=True)

    upgraded = identity.upgrade_to_email(stale, "late@example.com", PASSWORD)

    assert upgraded.user_id == anonymous.user_id and upgraded.email == "late@example.com"
    assert not any("Already Used" in json.dumps(r["body"]) for r in fake_auth.requests)
    assert identity.verify(upgraded.access_token).email == "late@example.com"


def test_upgrade_errors_are_clear(fake_auth):
    taken = identity.sign_in_anonymously()
    identity.upgrade_to_email(taken, "taken@example.com", PASSWORD)
    second = identity.sign_in_anonymously()
    with pytest.raises(AuthError, match="Supabase Auth refused: A user with this email address"):
        identity.upgrade_to_email(second, "taken@example.com", PASSWORD)
    assert fake_auth.users[str(second.user_id)]["is_anonymous"] is True

    fake_auth.requests.clear()
    with pytest.raises(InvalidInput, match="at least 8 characters"):
        identity.upgrade_to_email(second, "fresh@example.com", "short")
    with pytest.raises(InvalidInput, match="does not look like an email"):
        identity.upgrade_to_email(second, "fresh", PASSWORD)
    assert fake_auth.requests == []  # refused before anything was sent


def test_wrong_password_is_refused(fake_auth):
    identity.upgrade_to_email(identity.sign_in_anonymously(), "pw@example.com", PASSWORD)
    with pytest.raises(AuthError, match="Supabase Auth refused: Invalid login credentials"):
        identity.sign_in_with_password("pw@example.com", "wrong password")


def test_wrong_anon_key_is_reported(fake_auth, monkeypatch):
    monkeypatch.setenv("SUPABASE_ANON_KEY", "not-the-key")
    config.reload_settings()
    with pytest.raises(AuthError, match="Supabase Auth refused: Invalid API key"):
        identity.sign_in_anonymously()
    assert fake_auth.users == {}


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_server_down_gives_a_clear_message(fake_auth, monkeypatch):
    down = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("SUPABASE_URL", down)
    config.reload_settings()
    for call, args in ((identity.sign_in_anonymously, ()), (identity.verify, ("a.b.c",)),
                       (identity.refresh, ("some-refresh-token",))):
        with pytest.raises(AuthError) as info:
            call(*args)
        message = str(info.value)
        assert message.startswith(f"Supabase Auth is not reachable at {down}")
        assert "try again" in message
