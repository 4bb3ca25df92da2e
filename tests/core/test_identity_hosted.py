"""Hosted identity, tested at Supabase Auth's HTTP contract.

Supabase Auth (GoTrue) cannot run here, so tests/supabase_standin.py serves its
HTTP API on 127.0.0.1 (see that module for what it follows and how), and
core.identity talks to it through the real supabase_auth client. The database
is the embedded Postgres: the hosted issuer mirrors each Supabase user into its
local auth.users so foreign keys and RLS behave as in a Supabase project.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import pytest

from core import config, identity, memories
from core.db import Scope, admin_connection
from core.errors import AuthError, AuthUnavailable, InvalidInput
from core.identity import SupabaseAuthIssuer
from core.seed import DEMO_EMAIL
from tests.support.app import free_port
from tests.support.supabase_standin import ANON_KEY, SERVICE_ROLE_KEY, SupabaseAuthStandIn

PASSWORD = "correct horse battery"


def _point_at(monkeypatch, url: str, anon_key: str = ANON_KEY) -> None:
    """Point the settings somewhere else than the `supabase_auth` stand-in (undone with it)."""
    monkeypatch.setenv("SUPABASE_URL", url)
    monkeypatch.setenv("SUPABASE_ANON_KEY", anon_key)
    config.reload_settings()
    identity._verified_cache.clear()


def _local_auth_user(user_id) -> tuple | None:
    with admin_connection() as conn:
        return conn.execute(
            "select u.is_anonymous, u.email, p.email from auth.users u "
            "left join public.profiles p on p.id = u.id where u.id = %s",
            (user_id,),
        ).fetchone()


def test_settings_select_the_hosted_issuer(supabase_auth):
    settings = config.get_settings()
    assert settings.hosted_auth is True and settings.mode_label == "hosted"
    assert isinstance(identity._issuer(), identity.SupabaseAuthIssuer)


def test_anonymous_sign_in_goes_through_signup(supabase_auth):
    session = identity.sign_in_anonymously()

    assert supabase_auth.paths() == ["POST /auth/v1/signup"]
    request = supabase_auth.requests[0]
    assert request["apikey"] == ANON_KEY
    assert str(session.user_id) in supabase_auth.users
    assert session.is_anonymous is True and session.email is None
    assert jwt.decode(session.access_token, supabase_auth.secret, algorithms=["HS256"], audience="authenticated")[
        "sub"
    ] == str(session.user_id)
    assert session.refresh_token in supabase_auth.refresh_tokens
    assert session.expires_at > time.time() + 3000
    # the embedded database now has the user, so its rows can reference it
    assert _local_auth_user(session.user_id) == (True, None, None)


def test_verify_asks_the_server(supabase_auth):
    session = identity.sign_in_anonymously()
    supabase_auth.requests.clear()

    verified = identity.verify(session.access_token)

    assert supabase_auth.paths() == ["GET /auth/v1/user"]
    assert supabase_auth.requests[0]["authorization"] == f"Bearer {session.access_token}"
    assert supabase_auth.requests[0]["apikey"] == ANON_KEY
    assert verified.user_id == session.user_id and verified.is_anonymous is True
    assert verified.claims["sub"] == str(session.user_id)
    assert Scope.for_user(verified).user_id == session.user_id


def _well_formed(fake, user_id, secret, **overrides) -> str:
    now = int(time.time())
    claims = {
        "iss": f"{fake.url}/auth/v1",
        "sub": str(user_id),
        "aud": "authenticated",
        "role": "authenticated",
        "iat": now,
        "exp": now + 600,
        "is_anonymous": True,
        "session_id": str(uuid.uuid4()),
    }
    claims.update(overrides)
    return jwt.encode(claims, secret, algorithm="HS256")


def test_verify_refuses_well_formed_tokens_the_server_rejects(supabase_auth):
    session = identity.sign_in_anonymously()
    session_id = jwt.decode(session.access_token, options={"verify_signature": False})["session_id"]
    candidates = {
        "signed with another secret": (
            _well_formed(supabase_auth, session.user_id, "x" * 40, session_id=session_id),
            "invalid JWT: unable to parse or verify signature, token signature is invalid",
        ),
        # the embedded issuer's secret means nothing in hosted mode
        "signed with the embedded secret": (
            _well_formed(supabase_auth, session.user_id, identity.jwt_secret(), iss=identity.EMBEDDED_ISSUER),
            "token signature is invalid",
        ),
        "for a user the server does not know": (
            _well_formed(supabase_auth, uuid.uuid4(), supabase_auth.secret),
            "User from sub claim in JWT does not exist",
        ),
        "for a session the server does not know": (
            _well_formed(supabase_auth, session.user_id, supabase_auth.secret),
            "Session from session_id claim in JWT does not exist",
        ),
        "expired": (
            _well_formed(
                supabase_auth, session.user_id, supabase_auth.secret, exp=int(time.time()) - 60, session_id=session_id
            ),
            "token has invalid claims: token is expired",
        ),
    }
    for what, (token, reason) in candidates.items():
        supabase_auth.requests.clear()
        with pytest.raises(AuthError, match=f"^Supabase Auth refused: .*{reason}") as info:
            identity.verify(token)
        assert not isinstance(info.value, AuthUnavailable), what
        assert supabase_auth.paths() == ["GET /auth/v1/user"], what  # the server was asked, and it said no
        assert str(session.user_id) not in str(info.value)


def test_verify_refuses_a_token_whose_session_the_server_revoked(supabase_auth):
    session = identity.sign_in_anonymously()
    supabase_auth.revoke_sessions(session.user_id)  # e.g. signed out everywhere from another device
    with pytest.raises(AuthError, match="Session from session_id claim in JWT does not exist") as info:
        identity.verify(session.access_token)
    assert info.value.code == "session_not_found"
    with pytest.raises(AuthError, match="Refresh Token Not Found") as info:
        identity.refresh(session.refresh_token)
    assert info.value.code == "refresh_token_not_found"


def test_an_expired_session_is_refused_with_its_code(supabase_auth):
    session = identity.sign_in_anonymously()
    supabase_auth.expire_sessions()
    with pytest.raises(AuthError, match="token is expired") as info:
        identity.verify(session.access_token)
    assert info.value.code == "bad_jwt"
    with pytest.raises(AuthError, match="Invalid Refresh Token: Session Expired") as info:
        identity.refresh(session.refresh_token)
    assert info.value.code == "session_expired" and not isinstance(info.value, AuthUnavailable)


def test_a_server_clock_ahead_expires_the_access_token_but_refresh_still_works(supabase_auth):
    session = identity.sign_in_anonymously()
    supabase_auth.advance_clock(3700)
    with pytest.raises(AuthError, match="token is expired"):
        identity.verify(session.access_token)
    renewed = identity.refresh(session.refresh_token)
    assert identity.verify(renewed.access_token).user_id == session.user_id


def test_verify_refuses_when_the_server_answers_for_another_user(supabase_auth):
    session = identity.sign_in_anonymously()
    supabase_auth.user_id_override = str(uuid.uuid4())
    with pytest.raises(AuthError, match="does not belong to the user"):
        identity.verify(session.access_token)


@pytest.mark.parametrize("garbage", ["garbage", "a.b.c", "eyJhbGciOiJub25lIn0.e30."])
def test_verify_refuses_garbage(supabase_auth, garbage):
    with pytest.raises(AuthError, match="refused"):
        identity.verify(garbage)
    assert supabase_auth.paths() == ["GET /auth/v1/user"]


def test_empty_tokens_are_refused_without_asking(supabase_auth):
    for token in (None, "", "x" * 9000):
        with pytest.raises(AuthError, match="sign in again"):
            identity.verify(token)
    assert supabase_auth.requests == []


def test_verified_tokens_are_cached_briefly_and_sign_out_drops_them(supabase_auth):
    session = identity.sign_in_anonymously()
    identity.verify(session.access_token)
    identity.verify(session.access_token)
    assert supabase_auth.paths().count("GET /auth/v1/user") == 1  # Streamlit reruns do not each hit Supabase

    identity.sign_out(session)
    assert "POST /auth/v1/logout" in supabase_auth.paths()
    with pytest.raises(AuthError, match="refused"):
        identity.verify(session.access_token)
    with pytest.raises(AuthError, match=r"Already Used|refused"):
        identity.refresh(session.refresh_token)


def test_an_uncached_verify_sees_a_revocation_at_once_and_drops_the_cached_token(supabase_auth):
    session = identity.sign_in_anonymously()
    identity.verify(session.access_token)
    supabase_auth.revoke_sessions(session.user_id)  # signed out everywhere from another device
    supabase_auth.requests.clear()
    # an open page's rerun may still trust it for the cache's 30 s; no request is made
    assert identity.verify(session.access_token).user_id == session.user_id and supabase_auth.paths() == []
    with pytest.raises(AuthError, match="Session from session_id claim in JWT does not exist") as info:
        identity.verify(session.access_token, use_cache=False)  # a new browser session asks
    assert info.value.code == "session_not_found" and supabase_auth.paths() == ["GET /auth/v1/user"]
    with pytest.raises(AuthError, match="session_id claim"):  # refused once: no longer trusted from the cache
        identity.verify(session.access_token)


def test_refresh_rotates_and_refuses_reuse(supabase_auth):
    supabase_auth.refresh_token_reuse_interval = 0  # no grace period: a replay is refused at once
    first = identity.sign_in_anonymously()
    supabase_auth.requests.clear()

    second = identity.refresh(first.refresh_token)

    assert supabase_auth.paths() == ["POST /auth/v1/token"]
    assert supabase_auth.requests[0]["query"] == {"grant_type": ["refresh_token"]}
    assert supabase_auth.requests[0]["body"] == {"refresh_token": first.refresh_token}
    assert second.user_id == first.user_id and second.refresh_token != first.refresh_token
    assert identity.verify(second.access_token).user_id == first.user_id

    # Presenting the parent of the active token again (a client that lost the answer) gets that token back.
    again = identity.refresh(first.refresh_token)
    assert again.refresh_token == second.refresh_token and again.user_id == first.user_id

    third = identity.refresh(second.refresh_token)
    with pytest.raises(AuthError, match="Supabase Auth refused: Invalid Refresh Token: Already Used") as info:
        identity.refresh(first.refresh_token)  # two rotations old: a replay
    assert info.value.code == "refresh_token_already_used"
    with pytest.raises(AuthError, match="Already Used"):
        identity.refresh(third.refresh_token)  # the server revoked the session's whole family
    with pytest.raises(AuthError, match="Not Found"):
        identity.refresh("never-issued")


def test_a_replay_within_the_reuse_interval_is_accepted(supabase_auth):
    first = identity.sign_in_anonymously()
    second = identity.refresh(first.refresh_token)
    identity.refresh(second.refresh_token)
    replayed = identity.refresh(first.refresh_token)  # within Supabase's default 10 s reuse interval
    assert replayed.user_id == first.user_id


def test_upgrade_to_email_keeps_the_user_id(supabase_auth):
    anonymous = identity.sign_in_anonymously()
    supabase_auth.requests.clear()

    upgraded = identity.upgrade_to_email(anonymous, "Robin@Example.com", PASSWORD)

    updates = [r for r in supabase_auth.requests if r["method"] == "PUT"]
    assert len(updates) == 1 and updates[0]["path"] == "/auth/v1/user"
    assert updates[0]["body"]["email"] == "robin@example.com" and updates[0]["body"]["password"] == PASSWORD
    assert updates[0]["authorization"] == f"Bearer {anonymous.access_token}"
    assert upgraded.user_id == anonymous.user_id
    assert upgraded.is_anonymous is False and upgraded.email == "robin@example.com"
    assert upgraded.pending_email is None
    assert supabase_auth.users[str(anonymous.user_id)]["is_anonymous"] is False
    verified = identity.verify(upgraded.access_token)
    assert verified.user_id == anonymous.user_id and verified.email == "robin@example.com"
    assert _local_auth_user(anonymous.user_id) == (False, "robin@example.com", "robin@example.com")

    signed_in = identity.sign_in_with_password("robin@example.com", PASSWORD)
    assert signed_in.user_id == anonymous.user_id
    password_request = supabase_auth.requests[-1]
    assert password_request["path"] == "/auth/v1/token" and password_request["query"] == {"grant_type": ["password"]}


def test_a_stale_mirrored_email_gives_way_but_an_embedded_users_email_stays(supabase_auth):
    with SupabaseAuthStandIn(mailer_autoconfirm=True) as previous_project:
        earlier = SupabaseAuthIssuer(previous_project.url, ANON_KEY)
        stale = earlier.upgrade_to_email(earlier.sign_in_anonymously(), "moved@example.com", PASSWORD)
    assert _local_auth_user(stale.user_id)[1] == "moved@example.com"

    now = identity.upgrade_to_email(identity.sign_in_anonymously(), "moved@example.com", PASSWORD)

    assert _local_auth_user(now.user_id)[:2] == (False, "moved@example.com")
    assert _local_auth_user(stale.user_id)[1] is None  # the other project's row keeps its data, not the email
    # the seeded demo user (made by the embedded issuer, not a mirror) keeps its email; Supabase's user
    # still gets a local row (what foreign keys need), without the address
    clash = identity.upgrade_to_email(identity.sign_in_anonymously(), DEMO_EMAIL, PASSWORD)
    assert _local_auth_user(clash.user_id)[:2] == (False, None)
    assert identity.verify(clash.access_token).email == DEMO_EMAIL


def test_upgrade_with_an_expired_access_token_uses_the_rotated_refresh_token(supabase_auth):
    anonymous = identity.sign_in_anonymously()
    expired = supabase_auth.issue(supabase_auth.users[str(anonymous.user_id)], expires_in=-10)  # the browser idled
    stale = identity.AuthSession(
        access_token=expired["access_token"],
        refresh_token=expired["refresh_token"],
        expires_at=expired["expires_at"],
        user_id=anonymous.user_id,
        is_anonymous=True,
    )

    upgraded = identity.upgrade_to_email(stale, "late@example.com", PASSWORD)

    assert upgraded.user_id == anonymous.user_id and upgraded.email == "late@example.com"
    assert not any("Already Used" in json.dumps(r["body"]) for r in supabase_auth.requests)
    assert identity.verify(upgraded.access_token).email == "late@example.com"


def test_upgrade_with_email_confirmation_waits_for_the_link(supabase_auth):
    supabase_auth.mailer_autoconfirm = False  # Supabase's hosted default: "Confirm email" on
    anonymous = identity.sign_in_anonymously()
    memories.remember(Scope.service(anonymous.user_id), "favorite_color", "teal")

    pending = identity.upgrade_to_email(anonymous, "confirm@example.com", PASSWORD)

    assert pending.user_id == anonymous.user_id
    assert pending.is_anonymous is True and pending.email is None and pending.pending_email == "confirm@example.com"
    assert identity.verify(pending.access_token).pending_email == "confirm@example.com"
    assert [m["to"] for m in supabase_auth.outbox] == ["confirm@example.com"]
    with pytest.raises(AuthError, match="Invalid login credentials"):  # not an address of the account yet
        identity.sign_in_with_password("confirm@example.com", PASSWORD)

    assert supabase_auth.confirm_email("confirm@example.com") == 303  # the visitor opens the link
    identity._verified_cache.clear()
    assert identity.verify(pending.access_token).email == "confirm@example.com"  # the user record changed
    elsewhere = identity.sign_in_with_password("confirm@example.com", PASSWORD)
    assert elsewhere.user_id == anonymous.user_id and elsewhere.is_anonymous is False
    assert [m.content for m in memories.list_memories(Scope.for_user(identity.verify(elsewhere.access_token)))] == [
        "teal"
    ]
    assert _local_auth_user(anonymous.user_id) == (False, "confirm@example.com", "confirm@example.com")


def test_upgrade_errors_are_clear(supabase_auth):
    taken = identity.sign_in_anonymously()
    identity.upgrade_to_email(taken, "taken@example.com", PASSWORD)
    second = identity.sign_in_anonymously()
    with pytest.raises(AuthError, match="Supabase Auth refused: A user with this email address"):
        identity.upgrade_to_email(second, "taken@example.com", PASSWORD)
    assert supabase_auth.users[str(second.user_id)]["is_anonymous"] is True

    supabase_auth.requests.clear()
    with pytest.raises(InvalidInput, match="at least 8 characters"):
        identity.upgrade_to_email(second, "fresh@example.com", "short")
    with pytest.raises(InvalidInput, match="does not look like an email"):
        identity.upgrade_to_email(second, "fresh", PASSWORD)
    assert supabase_auth.requests == []  # refused before anything was sent


def test_wrong_password_is_refused(supabase_auth):
    identity.upgrade_to_email(identity.sign_in_anonymously(), "pw@example.com", PASSWORD)
    with pytest.raises(AuthError, match="Supabase Auth refused: Invalid login credentials"):
        identity.sign_in_with_password("pw@example.com", "wrong password")


def test_wrong_anon_key_is_reported(supabase_auth, monkeypatch):
    _point_at(monkeypatch, supabase_auth.url, "not-the-key")
    with pytest.raises(AuthError, match="Supabase Auth refused: Invalid API key; check SUPABASE_ANON_KEY"):
        identity.sign_in_anonymously()
    assert supabase_auth.users == {}


@pytest.mark.parametrize(
    "switch, code, sentence",
    [
        (
            "anonymous_sign_ins",
            "anonymous_provider_disabled",
            "has anonymous sign-ins turned off; enable them in the Supabase dashboard under Authentication",
        ),
        ("disable_signup", "signup_disabled", "does not accept new users"),
    ],
)
def test_project_settings_that_block_anonymous_sign_in_say_what_to_change(supabase_auth, switch, code, sentence):
    setattr(supabase_auth, switch, switch == "disable_signup")
    with pytest.raises(AuthError, match=sentence) as info:
        identity.sign_in_anonymously()
    assert info.value.code == code and str(supabase_auth.url) in str(info.value)
    assert supabase_auth.users == {}


def test_the_anonymous_sign_in_rate_limit_is_explained(supabase_auth):
    supabase_auth.anonymous_sign_ins_per_hour = 2  # Supabase's default is 30 per hour per IP
    identity.sign_in_anonymously()
    identity.sign_in_anonymously()
    with pytest.raises(
        AuthError, match="rate-limiting sign-ins from this server \\(Request rate limit reached\\)"
    ) as info:
        identity.sign_in_anonymously()
    assert info.value.code == "over_request_rate_limit" and "Rate Limits" in str(info.value)


def test_server_down_gives_a_clear_message(supabase_auth, monkeypatch):
    down = f"http://127.0.0.1:{free_port()}"
    _point_at(monkeypatch, down)
    for call, args in (
        (identity.sign_in_anonymously, ()),
        (identity.verify, ("a.b.c",)),
        (identity.refresh, ("some-refresh-token",)),
    ):
        with pytest.raises(AuthUnavailable) as info:
            call(*args)
        message = str(info.value)
        assert message.startswith(f"Supabase Auth is not reachable at {down}")
        assert "check SUPABASE_URL" in message and "try again" in message


class _NotSupabase(BaseHTTPRequestHandler):
    """A web server that is not Supabase Auth (a wrong SUPABASE_URL), or one failing with 500."""

    status = 404

    def _answer(self):
        body = (
            b"<html>Not here</html>"
            if self.status == 404
            else json.dumps({"code": "unexpected_failure", "message": "Unexpected failure"}).encode()
        )
        self.send_response(self.status)
        self.send_header("Content-Type", "text/html" if self.status == 404 else "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer  # noqa: N815 - the names http.server calls

    def log_message(self, *args):
        pass


@pytest.mark.parametrize(
    "status, sentence",
    [
        (404, "did not answer like Supabase Auth; check SUPABASE_URL"),
        (500, "failed \\(Unexpected failure\\); try again"),
    ],
)
def test_a_wrong_url_or_a_failing_server_is_unavailable_not_a_refusal(supabase_auth, monkeypatch, status, sentence):
    handler = type("Handler", (_NotSupabase,), {"status": status})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _point_at(monkeypatch, f"http://127.0.0.1:{server.server_address[1]}")
        with pytest.raises(AuthUnavailable, match=sentence):
            identity.sign_in_anonymously()
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------------------
# The stand-in itself, over raw HTTP: the parts of the contract the client hides
# ---------------------------------------------------------------------------


def _http(standin, method, path, *, body=None, headers=None, apikey=ANON_KEY):
    request = urllib.request.Request(
        f"{standin.url}/auth/v1{path}", method=method, data=json.dumps(body).encode() if body is not None else None
    )
    for name, value in {
        **({"apikey": apikey} if apikey else {}),
        "Content-Type": "application/json",
        **(headers or {}),
    }.items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
            return response.status, dict(response.headers), json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        return exc.code, dict(exc.headers), json.loads(raw) if raw else None


def test_standin_error_bodies_follow_the_requested_api_version():
    with SupabaseAuthStandIn() as standin:
        status, headers, body = _http(standin, "GET", "/user")
        assert (status, body) == (
            401,
            {"code": 401, "error_code": "no_authorization", "msg": "This endpoint requires a Bearer token"},
        )
        assert "X-Supabase-Api-Version" not in headers
        status, headers, body = _http(
            standin, "GET", "/user", headers={"X-Supabase-Api-Version": "2024-01-01", "Authorization": "Bearer x.y.z"}
        )
        assert status == 403 and body["code"] == "bad_jwt" and body["message"].startswith("invalid JWT")
        assert headers["X-Supabase-Api-Version"] == "2024-01-01"
        assert _http(standin, "GET", "/settings", apikey=None)[2] == {
            "message": "No API key found in request",
            "hint": "No `apikey` request header or url param was found.",
        }
        assert _http(standin, "POST", "/token?grant_type=refresh_token", body={})[2] == {
            "error": "invalid_request",
            "error_description": "refresh_token required",
        }


def test_standin_settings_logout_scopes_and_admin_delete():
    with SupabaseAuthStandIn() as standin:
        assert _http(standin, "GET", "/settings")[2]["external"]["anonymous_users"] is True
        standin.anonymous_sign_ins = False
        assert _http(standin, "GET", "/settings")[2]["external"]["anonymous_users"] is False
        assert _http(standin, "POST", "/signup", body={})[:3:2] == (
            422,
            {"code": 422, "error_code": "anonymous_provider_disabled", "msg": "Anonymous sign-ins are disabled"},
        )
        standin.anonymous_sign_ins = True

        user = standin.new_user(email="scopes@example.com", password=PASSWORD)
        sessions = [
            _http(
                standin,
                "POST",
                "/token?grant_type=password",
                body={"email": "scopes@example.com", "password": PASSWORD},
            )[2]
            for _ in range(3)
        ]
        bearer = [{"Authorization": f"Bearer {s['access_token']}"} for s in sessions]
        assert _http(standin, "POST", "/logout?scope=others", headers=bearer[0])[0] == 204
        assert [_http(standin, "GET", "/user", headers=b)[0] for b in bearer] == [200, 403, 403]
        assert _http(standin, "POST", "/logout?scope=local", headers=bearer[0])[0] == 204
        assert _http(standin, "GET", "/user", headers=bearer[0])[2]["error_code"] == "session_not_found"

        assert _http(standin, "DELETE", f"/admin/users/{user['id']}", headers=bearer[0])[0] == 403
        assert (
            _http(
                standin,
                "DELETE",
                f"/admin/users/{user['id']}",
                apikey=SERVICE_ROLE_KEY,
                headers={"Authorization": f"Bearer {SERVICE_ROLE_KEY}"},
            )[0]
            == 200
        )
        assert standin.user_by_email("scopes@example.com") is None
