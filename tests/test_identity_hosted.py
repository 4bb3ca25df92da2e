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
import secrets
import socket
import threading
import time
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import jwt
import pytest

from core import config, identity
from core.db import Scope
from core.errors import AuthError, InvalidInput

ANON_KEY = "anon-key-for-the-fake-supabase"
PASSWORD = "correct horse battery"
API_VERSION = {"x-supabase-api-version": "2024-01-01"}


class FakeSupabaseAuth:
    """State and token logic of the stand-in; the HTTP handler below only routes to it."""

    def __init__(self):
        self.secret = secrets.token_urlsafe(32)
        self.users: dict[str, dict] = {}
        self.refresh_tokens: dict[str, dict] = {}  # token -> {"user_id", "used", "session_id"}
        self.revoked_sessions: set[str] = set()
        self.requests: list[dict] = []
        self.user_id_override: str | None = None  # misbehave: answer /user with another user's id
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # -- tokens ---------------------------------------------------------------
    def issue(self, user: dict, *, expires_in: int = 3600, session_id: str | None = None) -> dict:
        now = int(time.time())
        session_id = session_id or str(uuid.uuid4())
        claims = {"iss": f"{self.url}/auth/v1", "sub": user["id"], "aud": "authenticated", "role": "authenticated",
                  "iat": now, "exp": now + expires_in, "email": user["email"] or "", "phone": "",
                  "is_anonymous": user["is_anonymous"], "session_id": session_id}
        refresh_token = secrets.token_urlsafe(16)
        self.refresh_tokens[refresh_token] = {"user_id": user["id"], "used": False, "session_id": session_id}
        return {"access_token": jwt.encode(claims, self.secret, algorithm="HS256"), "token_type": "bearer",
                "expires_in": expires_in, "expires_at": now + expires_in, "refresh_token": refresh_token,
                "user": self.user_json(user)}

    def user_from_bearer(self, authorization: str | None) -> dict | None:
        token = (authorization or "").removeprefix("Bearer ").strip()
        try:
            claims = jwt.decode(token, self.secret, algorithms=["HS256"], audience="authenticated")
        except jwt.InvalidTokenError:
            return None
        if claims.get("session_id") in self.revoked_sessions:
            return None
        user = self.users.get(claims.get("sub"))
        return {**user, "_session_id": claims.get("session_id")} if user else None

    @staticmethod
    def user_json(user: dict) -> dict:
        return {"id": user["id"], "aud": "authenticated", "role": "authenticated", "email": user["email"] or "",
                "phone": "", "app_metadata": {"provider": "email" if user["email"] else "anonymous"},
                "user_metadata": {}, "identities": [], "created_at": user["created_at"],
                "updated_at": user["created_at"], "is_anonymous": user["is_anonymous"]}

    def new_user(self, *, email=None, password=None) -> dict:
        user = {"id": str(uuid.uuid4()), "email": email, "password": password, "is_anonymous": email is None,
                "created_at": datetime.now(timezone.utc).isoformat()}
        self.users[user["id"]] = user
        return user

    # -- routes -------------------------------------------------------------
    def handle(self, method: str, path: str, query: dict, headers, body: dict) -> tuple[int, dict | None]:
        if headers.get("apikey") != ANON_KEY:
            return 401, {"message": "Invalid API key", "hint": "Double check your Supabase `anon` key."}
        if method == "POST" and path == "/auth/v1/signup":
            if body.get("email"):
                return 400, {"code": "validation_failed", "message": "not part of this stand-in"}
            return 200, self.issue(self.new_user())
        if method == "GET" and path == "/auth/v1/user":
            user = self.user_from_bearer(headers.get("Authorization"))
            if user is None:
                return 403, {"code": "bad_jwt", "message": "invalid JWT: unable to parse or verify signature"}
            answer = self.user_json(user)
            if self.user_id_override:
                answer["id"] = self.user_id_override
            return 200, answer
        if method == "PUT" and path == "/auth/v1/user":
            user = self.user_from_bearer(headers.get("Authorization"))
            if user is None:
                return 403, {"code": "bad_jwt", "message": "invalid JWT: unable to parse or verify signature"}
            stored = self.users[user["id"]]
            email = body.get("email")
            if email and any(u["email"] == email and u["id"] != stored["id"] for u in self.users.values()):
                return 422, {"code": "email_exists",
                             "message": "A user with this email address has already been registered"}
            if "password" in body and len(body["password"]) < 6:
                return 422, {"code": "weak_password", "message": "Password should be at least 6 characters.",
                             "weak_password": {"reasons": ["length"]}}
            if email:
                stored.update(email=email, is_anonymous=False)
            if "password" in body:
                stored["password"] = body["password"]
            return 200, self.user_json(stored)
        if method == "POST" and path == "/auth/v1/token" and query.get("grant_type") == ["refresh_token"]:
            record = self.refresh_tokens.get(body.get("refresh_token", ""))
            if record is None:
                return 400, {"code": "refresh_token_not_found",
                             "message": "Invalid Refresh Token: Refresh Token Not Found"}
            if record["used"] or record["session_id"] in self.revoked_sessions:
                self.revoked_sessions.add(record["session_id"])  # reuse revokes the whole session
                return 400, {"code": "refresh_token_already_used", "message": "Invalid Refresh Token: Already Used"}
            record["used"] = True
            return 200, self.issue(self.users[record["user_id"]], session_id=record["session_id"])
        if method == "POST" and path == "/auth/v1/token" and query.get("grant_type") == ["password"]:
            match = next((u for u in self.users.values()
                          if u["email"] == body.get("email") and u["password"] == body.get("password")), None)
            if match is None:
                return 400, {"code": "invalid_credentials", "message": "Invalid login credentials"}
            return 200, self.issue(match)
        if method == "POST" and path == "/auth/v1/logout":
            user = self.user_from_bearer(headers.get("Authorization"))
            if user is not None:
                self.revoked_sessions.add(user["_session_id"])
            return 204, None
        return 404, {"code": "not_found", "message": f"no route {method} {path}"}

    def paths(self) -> list[str]:
        return [f"{r['method']} {r['path']}" for r in self.requests]


def _handler_for(fake: FakeSupabaseAuth):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self, method):
            parsed = urlparse(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else {}
            query = parse_qs(parsed.query)
            with fake.lock:
                fake.requests.append({"method": method, "path": parsed.path, "query": query, "body": body,
                                      "apikey": self.headers.get("apikey"),
                                      "authorization": self.headers.get("Authorization")})
                status, payload = fake.handle(method, parsed.path, query, self.headers, body)
            data = json.dumps(payload).encode() if payload is not None else b""
            self.send_response(status)
            for name, value in API_VERSION.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._serve("GET")

        def do_POST(self):
            self._serve("POST")

        def do_PUT(self):
            self._serve("PUT")

        def log_message(self, *args):  # keep pytest output clean
            pass

    return Handler


@pytest.fixture
def fake_auth(monkeypatch):
    fake = FakeSupabaseAuth()
    fake.thread.start()
    monkeypatch.setenv("SUPABASE_URL", fake.url)
    monkeypatch.setenv("SUPABASE_ANON_KEY", ANON_KEY)
    config.reload_settings()
    identity._verified_cache.clear()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()
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
