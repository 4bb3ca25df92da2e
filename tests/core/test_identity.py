"""The embedded issuer: real HS256 JWTs, real auth.users rows, hashed rotating refresh tokens."""

from __future__ import annotations

import base64
import json
import stat
import time
import uuid

import jwt
import pytest

from core import db, identity, memories, profiles
from core.config import get_settings
from core.db import Scope
from core.errors import AuthError, InvalidInput

PASSWORD = "correct horse battery"


def _b64(data: dict | bytes) -> str:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _claims(user_id, **overrides) -> dict:
    now = int(time.time())
    claims = {
        "iss": identity.EMBEDDED_ISSUER,
        "sub": str(user_id),
        "aud": "authenticated",
        "role": "authenticated",
        "iat": now,
        "exp": now + 600,
        "is_anonymous": True,
    }
    claims.update(overrides)
    return {key: value for key, value in claims.items() if value is not None}


def _unique_email() -> str:
    return f"visitor-{uuid.uuid4().hex[:12]}@example.com"


def _auth_row(user_id):
    with db.admin_connection() as conn:
        return conn.execute(
            "select is_anonymous, email, encrypted_password from auth.users where id = %s", (user_id,)
        ).fetchone()


# ---------------------------------------------------------------------------
# Anonymous sign-in and verification
# ---------------------------------------------------------------------------


def test_sign_in_creates_an_anonymous_user_with_a_profile(database_uri):
    session = identity.sign_in_anonymously()
    assert session.is_anonymous is True and session.email is None
    assert session.expires_at > time.time() + 60
    assert _auth_row(session.user_id)[:2] == (True, None)
    verified = identity.verify(session.access_token)
    assert verified.user_id == session.user_id and verified.is_anonymous is True
    assert profiles.get_profile(Scope.for_user(verified)).id == session.user_id
    # the token is shaped like Supabase Auth's
    header = jwt.get_unverified_header(session.access_token)
    assert header["alg"] == "HS256"
    claims = verified.claims
    assert claims["sub"] == str(session.user_id)
    assert claims["role"] == "authenticated" and claims["aud"] == "authenticated"
    assert claims["iss"] == identity.EMBEDDED_ISSUER and claims["is_anonymous"] is True
    assert claims["exp"] - claims["iat"] == get_settings().access_token_ttl_seconds
    # the token is really signed with the secret (verifiable without core.identity)
    assert jwt.decode(session.access_token, identity.jwt_secret(), algorithms=["HS256"], audience="authenticated")[
        "sub"
    ] == str(session.user_id)


def test_two_sign_ins_are_two_users(database_uri):
    first, second = identity.sign_in_anonymously(), identity.sign_in_anonymously()
    assert first.user_id != second.user_id
    assert first.access_token != second.access_token and first.refresh_token != second.refresh_token


def test_refresh_tokens_are_stored_hashed(database_uri):
    session = identity.sign_in_anonymously()
    with db.admin_connection() as conn:
        stored = [
            row[0]
            for row in conn.execute(
                "select token_hash from auth.refresh_tokens where user_id = %s", (session.user_id,)
            ).fetchall()
        ]
    assert stored == [identity.hash_refresh_token(session.refresh_token)]
    assert session.refresh_token not in stored


def test_secret_file_is_private(database_uri):
    identity.sign_in_anonymously()
    path = get_settings().data_dir / "jwt_secret"
    assert path.exists()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(path.read_text().strip()) >= 32
    assert identity.jwt_secret() == path.read_text().strip()


def test_configured_secret_wins_and_short_secrets_are_refused(database_uri, monkeypatch, tmp_path):
    from core import config

    try:
        monkeypatch.setenv("SUPABASE_JWT_SECRET", "s" * 40)
        config.reload_settings()
        assert identity.jwt_secret() == "s" * 40
        monkeypatch.setenv("SUPABASE_JWT_SECRET", "")
        monkeypatch.setenv("DATA_DIR", str(tmp_path))
        config.reload_settings()
        (tmp_path / "jwt_secret").write_text("short")
        with pytest.raises(AuthError, match="too short; delete the file"):
            identity.jwt_secret()
    finally:
        monkeypatch.undo()
        config.reload_settings()


@pytest.mark.parametrize(
    "case",
    [
        "forged_signature",
        "expired",
        "wrong_audience",
        "no_audience",
        "wrong_issuer",
        "alg_none",
        "alg_none_upper",
        "alg_hs512",
        "role_anon",
        "role_service",
        "no_exp",
        "sub_not_uuid",
        "unknown_user",
        "tampered_payload",
    ],
)
def test_verify_refuses_bad_tokens(database_uri, case):
    session = identity.sign_in_anonymously()
    secret = identity.jwt_secret()
    uid = session.user_id
    now = int(time.time())
    if case == "forged_signature":
        token = jwt.encode(_claims(uid), "another-secret-that-is-long-enough-to-use", algorithm="HS256")
    elif case == "expired":
        token = jwt.encode(_claims(uid, iat=now - 7200, exp=now - 3600), secret, algorithm="HS256")
    elif case == "wrong_audience":
        token = jwt.encode(_claims(uid, aud="anon"), secret, algorithm="HS256")
    elif case == "no_audience":
        token = jwt.encode(_claims(uid, aud=None), secret, algorithm="HS256")
    elif case == "wrong_issuer":
        token = jwt.encode(_claims(uid, iss="https://evil.example/auth/v1"), secret, algorithm="HS256")
    elif case in ("alg_none", "alg_none_upper"):
        alg = "none" if case == "alg_none" else "NONE"
        token = f"{_b64({'alg': alg, 'typ': 'JWT'})}.{_b64(_claims(uid))}."
    elif case == "alg_hs512":
        token = jwt.encode(_claims(uid), secret, algorithm="HS512")
    elif case == "role_anon":
        token = jwt.encode(_claims(uid, role="anon"), secret, algorithm="HS256")
    elif case == "role_service":
        token = jwt.encode(_claims(uid, role="service_role"), secret, algorithm="HS256")
    elif case == "no_exp":
        token = jwt.encode(_claims(uid, exp=None), secret, algorithm="HS256")
    elif case == "sub_not_uuid":
        token = jwt.encode(_claims("admin"), secret, algorithm="HS256")
    elif case == "unknown_user":
        token = jwt.encode(_claims(uuid.uuid4()), secret, algorithm="HS256")
    else:  # a real token whose payload was swapped for another user's
        header, _, signature = session.access_token.split(".")
        token = f"{header}.{_b64(_claims(uuid.uuid4()))}.{signature}"
    with pytest.raises(AuthError) as info:
        identity.verify(token)
    message = str(info.value)
    if case == "expired":
        assert "expired" in message
    elif case == "unknown_user":
        assert "no longer exists" in message
    else:
        assert "not valid" in message or "not for a signed-in user" in message or "no valid user" in message
    assert identity.verify(session.access_token).user_id == uid  # the genuine token still works


@pytest.mark.parametrize(
    "garbage", [None, "", "garbage", "a.b.c", "...", "x" * 9000, 12345, "eyJhbGciOiJIUzI1NiJ9.e30.", "Bearer abc"]
)
def test_verify_refuses_garbage(database_uri, garbage):
    with pytest.raises(AuthError, match=r"access token|sign in again"):
        identity.verify(garbage)


def test_verify_refuses_a_token_for_a_deleted_user(database_uri):
    session = identity.sign_in_anonymously()
    assert identity.verify(session.access_token).user_id == session.user_id
    with db.admin_connection() as conn:
        conn.execute("delete from auth.users where id = %s", (session.user_id,))
    with pytest.raises(AuthError, match="no longer exists"):
        identity.verify(session.access_token)
    with pytest.raises(AuthError, match="not valid"):
        identity.refresh(session.refresh_token)  # its refresh tokens went with it


# ---------------------------------------------------------------------------
# Refresh rotation
# ---------------------------------------------------------------------------


def test_refresh_rotates_and_reuse_revokes_the_family(database_uri):
    first = identity.sign_in_anonymously()
    second = identity.refresh(first.refresh_token)
    assert second.user_id == first.user_id and second.is_anonymous is True
    assert second.refresh_token != first.refresh_token
    assert identity.verify(second.access_token).user_id == first.user_id
    with db.admin_connection() as conn:  # past the reuse interval (a replay, not a parallel renewal)
        conn.execute(
            "update auth.refresh_tokens set rotated_at = now() - interval '1 minute' where token_hash = %s",
            (identity._hash_refresh_token(first.refresh_token),),
        )

    with pytest.raises(AuthError, match="already used"):
        identity.refresh(first.refresh_token)  # replayed: someone may have copied it
    # the replay revoked the whole family, including the token issued by the honest rotation
    with pytest.raises(AuthError, match="already used"):
        identity.refresh(second.refresh_token)
    with db.admin_connection() as conn:
        live = conn.execute(
            "select count(*) from auth.refresh_tokens where user_id = %s and not revoked", (first.user_id,)
        ).fetchone()[0]
        parent = conn.execute(
            "select parent_hash from auth.refresh_tokens where token_hash = %s",
            (identity.hash_refresh_token(second.refresh_token),),
        ).fetchone()[0]
    assert live == 0
    assert parent == identity.hash_refresh_token(first.refresh_token)


def test_refresh_chain_keeps_working_while_tokens_are_used_once(database_uri):
    session = identity.sign_in_anonymously()
    seen = {session.refresh_token}
    for _ in range(3):
        session = identity.refresh(session.refresh_token)
        assert session.refresh_token not in seen
        seen.add(session.refresh_token)
    assert identity.verify(session.access_token).is_anonymous is True


@pytest.mark.parametrize("token", [None, "", "not-a-token", "x" * 2000, 42])
def test_refresh_refuses_unknown_tokens(database_uri, token):
    with pytest.raises(AuthError, match=r"refresh token|sign in again"):
        identity.refresh(token)


def test_sign_out_revokes_the_refresh_token(database_uri):
    session = identity.sign_in_anonymously()
    identity.sign_out(session)
    with pytest.raises(AuthError):
        identity.refresh(session.refresh_token)


# ---------------------------------------------------------------------------
# Upgrade to an email account; password sign-in
# ---------------------------------------------------------------------------


def test_upgrade_keeps_the_user_id_and_the_memories(database_uri):
    anonymous = identity.sign_in_anonymously()
    scope = Scope.for_user(identity.verify(anonymous.access_token))
    memories.remember(scope, "favorite_color", "teal")
    memories.remember(scope, "car", "An old red Fiat Panda")
    email = _unique_email()

    upgraded = identity.upgrade_to_email(anonymous, f"  {email.upper()} ", PASSWORD)

    assert upgraded.user_id == anonymous.user_id
    assert upgraded.is_anonymous is False and upgraded.email == email
    verified = identity.verify(upgraded.access_token)
    assert verified.user_id == anonymous.user_id and verified.is_anonymous is False and verified.email == email
    assert verified.claims["is_anonymous"] is False and verified.claims["email"] == email
    new_scope = Scope.for_user(verified)
    assert {m.memory_type: m.content for m in memories.list_memories(new_scope)} == {
        "favorite_color": "teal",
        "car": "An old red Fiat Panda",
    }
    is_anonymous, stored_email, password_hash = _auth_row(anonymous.user_id)
    assert is_anonymous is False and stored_email == email
    assert password_hash.startswith("scrypt$") and PASSWORD not in password_hash
    assert profiles.get_profile(new_scope).email == email

    signed_in = identity.sign_in_with_password(email, PASSWORD)
    assert signed_in.user_id == anonymous.user_id and signed_in.is_anonymous is False
    assert identity.verify(signed_in.access_token).email == email


def test_upgrade_refuses_an_email_used_by_another_account(database_uri):
    email = _unique_email()
    identity.upgrade_to_email(identity.sign_in_anonymously(), email, PASSWORD)
    second = identity.sign_in_anonymously()
    with pytest.raises(InvalidInput, match="already used by another account"):
        identity.upgrade_to_email(second, email, "another password")
    assert _auth_row(second.user_id) == (True, None, None)


@pytest.mark.parametrize(
    "email,password,match",
    [
        ("someone@example.com", "short", "at least 8 characters"),
        ("someone@example.com", "", "at least 8 characters"),
        ("someone@example.com", "p" * 257, "too long"),
        ("someone@example.com", "pass\x00word123", "NUL"),
        ("not-an-email", PASSWORD, "does not look like an email"),
        ("", PASSWORD, "does not look like an email"),
        ("a@b", PASSWORD, "does not look like an email"),
        ("two words@example.com", PASSWORD, "does not look like an email"),
    ],
)
def test_upgrade_refuses_bad_credentials(database_uri, email, password, match):
    session = identity.sign_in_anonymously()
    with pytest.raises(InvalidInput, match=match):
        identity.upgrade_to_email(session, email, password)
    assert _auth_row(session.user_id) == (True, None, None)


def test_upgrade_needs_a_valid_session(database_uri):
    session = identity.sign_in_anonymously()
    forged = identity.AuthSession(
        access_token=jwt.encode(_claims(session.user_id), "not-the-secret-but-long-enough-x", algorithm="HS256"),
        refresh_token=session.refresh_token,
        expires_at=session.expires_at,
        user_id=session.user_id,
        is_anonymous=True,
    )
    with pytest.raises(AuthError):
        identity.upgrade_to_email(forged, _unique_email(), PASSWORD)
    assert _auth_row(session.user_id) == (True, None, None)


def test_password_sign_in_refuses_wrong_passwords_and_unknown_emails(database_uri):
    email = _unique_email()
    identity.upgrade_to_email(identity.sign_in_anonymously(), email, PASSWORD)
    with pytest.raises(AuthError, match=r"^Wrong email or password\.$"):
        identity.sign_in_with_password(email, PASSWORD + "!")
    with pytest.raises(AuthError, match=r"^Wrong email or password\.$"):
        identity.sign_in_with_password(_unique_email(), PASSWORD)
    with pytest.raises(InvalidInput, match="Enter your password"):
        identity.sign_in_with_password(email, "")
    with pytest.raises(InvalidInput, match="does not look like an email"):
        identity.sign_in_with_password("nobody", PASSWORD)
    assert identity.sign_in_with_password(email.upper(), PASSWORD).email == email


def test_anonymous_users_cannot_sign_in_with_a_password(database_uri):
    # an anonymous user has no email and no password hash: nothing to match
    with pytest.raises(AuthError, match="Wrong email or password"):
        identity.sign_in_with_password("anonymous@example.com", PASSWORD)


def test_password_hashes_are_salted_and_checked(database_uri):
    first, second = identity.hash_password(PASSWORD), identity.hash_password(PASSWORD)
    assert first != second
    assert identity.check_password(PASSWORD, first) and identity.check_password(PASSWORD, second)
    assert not identity.check_password(PASSWORD + "x", first)
    for stored in (None, "", "plain", "md5$1$2$3$4$5", "scrypt$x$8$1$AAAA$BBBB"):
        assert identity.check_password(PASSWORD, stored) is False
