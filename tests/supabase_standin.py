"""A local stand-in for Supabase Auth (GoTrue), at its HTTP contract.

Supabase Auth cannot run here, so tests that need it (core.identity's hosted
issuer, the app in a browser, core.doctor) talk to this server instead, over
real HTTP on 127.0.0.1, through the real supabase_auth client. It serves the
part of GoTrue's API the project uses, under /auth/v1 as a Supabase project's
API gateway does:

    POST /signup                    no email and no phone: an anonymous user
    POST /token?grant_type=refresh_token | password
    GET  /user, PUT /user           Bearer access token
    POST /logout?scope=global|local|others
    GET  /settings, GET /health
    DELETE /admin/users/{id}        service-role key

It checks the apikey header, signs HS256 access tokens with its own secret,
rotates refresh tokens and revokes the session when a used one is replayed.

Switches for the failure paths:
    standin.anonymous_sign_ins = False      signup answers 422 anonymous_provider_disabled
    standin.expire_sessions()               every access token issued so far is expired
    standin.revoke_sessions(user_id=None)   sessions are gone (signed out elsewhere)
    standin.stop()                          the server is down

Use it as a context manager, or start()/stop(); it serves from a daemon thread
so a `streamlit run` subprocess can reach it at `standin.url`.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import jwt

ANON_KEY = "anon-key-for-the-supabase-standin"
SERVICE_ROLE_KEY = "service-role-key-for-the-supabase-standin"
API_VERSION_HEADER = "X-Supabase-Api-Version"
API_VERSION = "2024-01-01"
PREFIX = "/auth/v1"


class SupabaseAuthStandIn:
    """State and token logic; the HTTP handler below only routes to it."""

    def __init__(self, *, anon_key: str = ANON_KEY, service_role_key: str = SERVICE_ROLE_KEY,
                 access_token_ttl: int = 3600):
        self.anon_key = anon_key
        self.service_role_key = service_role_key
        self.access_token_ttl = access_token_ttl
        self.secret = secrets.token_urlsafe(32)
        self.anonymous_sign_ins = True
        self.users: dict[str, dict] = {}
        self.sessions: dict[str, dict] = {}  # session_id -> {"user_id", "not_after"}
        self.refresh_tokens: dict[str, dict] = {}  # token -> {"user_id", "used", "session_id"}
        self.revoked_sessions: set[str] = set()
        self.requests: list[dict] = []
        self.user_id_override: str | None = None  # misbehave: answer /user with another user's id
        self.lock = threading.RLock()
        self.server: ThreadingHTTPServer | None = None
        self.thread: threading.Thread | None = None
        self.url = ""

    # -- lifecycle ----------------------------------------------------------
    def start(self, port: int = 0) -> "SupabaseAuthStandIn":
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       name="supabase-auth-standin", daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def __enter__(self) -> "SupabaseAuthStandIn":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def env(self) -> dict[str, str]:
        """The settings that point the app at this server."""
        return {"SUPABASE_URL": self.url, "SUPABASE_ANON_KEY": self.anon_key}

    # -- switches -----------------------------------------------------------
    def expire_sessions(self) -> None:
        """Every access token issued so far is now expired (refresh tokens still work)."""
        with self.lock:
            for session in self.sessions.values():
                session["expired"] = True

    def revoke_sessions(self, user_id: str | uuid.UUID | None = None) -> None:
        """End every session (of one user, or of everyone): access and refresh tokens stop working."""
        with self.lock:
            for session_id, session in self.sessions.items():
                if user_id is None or session["user_id"] == str(user_id):
                    self.revoked_sessions.add(session_id)

    # -- tokens ---------------------------------------------------------------
    def issue(self, user: dict, *, expires_in: int | None = None, session_id: str | None = None) -> dict:
        expires_in = self.access_token_ttl if expires_in is None else expires_in
        now = int(time.time())
        session_id = session_id or str(uuid.uuid4())
        self.sessions.setdefault(session_id, {"user_id": user["id"]})
        claims = {"iss": f"{self.url}{PREFIX}", "sub": user["id"], "aud": "authenticated", "role": "authenticated",
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
        session_id = claims.get("session_id")
        if session_id in self.revoked_sessions or self.sessions.get(session_id, {}).get("expired"):
            return None
        user = self.users.get(claims.get("sub"))
        return {**user, "_session_id": session_id} if user else None

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
        if headers.get("apikey") not in (self.anon_key, self.service_role_key):
            return 401, {"message": "Invalid API key", "hint": "Double check your Supabase `anon` key."}
        path = path.removeprefix(PREFIX)
        if method == "POST" and path == "/signup":
            if body.get("email"):
                return 400, {"code": "validation_failed", "message": "not part of this stand-in"}
            if not self.anonymous_sign_ins:
                return 422, {"code": "anonymous_provider_disabled", "message": "Anonymous sign-ins are disabled"}
            return 200, self.issue(self.new_user())
        if method == "GET" and path == "/user":
            user = self.user_from_bearer(headers.get("Authorization"))
            if user is None:
                return 403, {"code": "bad_jwt", "message": "invalid JWT: unable to parse or verify signature"}
            answer = self.user_json(user)
            if self.user_id_override:
                answer["id"] = self.user_id_override
            return 200, answer
        if method == "PUT" and path == "/user":
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
        if method == "POST" and path == "/token" and query.get("grant_type") == ["refresh_token"]:
            record = self.refresh_tokens.get(body.get("refresh_token", ""))
            if record is None:
                return 400, {"code": "refresh_token_not_found",
                             "message": "Invalid Refresh Token: Refresh Token Not Found"}
            if record["used"] or record["session_id"] in self.revoked_sessions:
                self.revoked_sessions.add(record["session_id"])  # reuse revokes the whole session
                return 400, {"code": "refresh_token_already_used", "message": "Invalid Refresh Token: Already Used"}
            record["used"] = True
            self.sessions[record["session_id"]].pop("expired", None)
            return 200, self.issue(self.users[record["user_id"]], session_id=record["session_id"])
        if method == "POST" and path == "/token" and query.get("grant_type") == ["password"]:
            match = next((u for u in self.users.values()
                          if u["email"] == body.get("email") and u["password"] == body.get("password")), None)
            if match is None:
                return 400, {"code": "invalid_credentials", "message": "Invalid login credentials"}
            return 200, self.issue(match)
        if method == "POST" and path == "/logout":
            user = self.user_from_bearer(headers.get("Authorization"))
            if user is not None:
                self.revoked_sessions.add(user["_session_id"])
            return 204, None
        if method == "GET" and path == "/settings":
            return 200, {"external": {"anonymous_users": self.anonymous_sign_ins, "email": True, "phone": False},
                         "disable_signup": False, "mailer_autoconfirm": True, "phone_autoconfirm": False,
                         "sms_provider": "", "saml_enabled": False}
        return 404, {"code": "not_found", "message": f"no route {method} {path}"}

    def paths(self) -> list[str]:
        return [f"{r['method']} {r['path']}" for r in self.requests]


def _handler_for(standin: SupabaseAuthStandIn):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self, method):
            parsed = urlparse(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else {}
            query = parse_qs(parsed.query)
            with standin.lock:
                standin.requests.append({"method": method, "path": parsed.path, "query": query, "body": body,
                                         "apikey": self.headers.get("apikey"),
                                         "authorization": self.headers.get("Authorization")})
                status, payload = standin.handle(method, parsed.path, query, self.headers, body)
            data = json.dumps(payload).encode() if payload is not None else b""
            self.send_response(status)
            self.send_header(API_VERSION_HEADER, API_VERSION)
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

        def do_DELETE(self):
            self._serve("DELETE")

        def log_message(self, *args):  # keep pytest output clean
            pass

    return Handler
