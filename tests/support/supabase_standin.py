"""A local stand-in for Supabase Auth (GoTrue), faithful at its HTTP contract.

Supabase Auth cannot run here, so the tests that need it (core.identity's
hosted issuer, the app in a browser, core.doctor) talk to this server over real
HTTP on 127.0.0.1, through the real supabase_auth client or any HTTP client.
It serves what a Supabase project serves under /auth/v1 (the API gateway's
apikey check included) for the flows this project uses:

    POST   /signup                  no email and no phone: an anonymous user; email + password: a user
    POST   /token?grant_type=refresh_token | password
    GET    /user, PUT /user         Bearer access token
    POST   /logout?scope=global|local|others
    GET    /verify?token=…&type=…   the link in a confirmation email
    GET    /settings, GET /health
    DELETE /admin/users/{id}        service-role key

Behaviour follows supabase/auth (internal/api: auth.go, user.go, token
refresh, logout.go, settings.go, errors.go) as read for this stand-in:
  * access tokens are HS256 JWTs with GoTrue's claims (sub, aud, role, email,
    phone, app_metadata, user_metadata, aal, amr, session_id, is_anonymous);
  * refresh tokens rotate; presenting the parent of the session's active token
    returns the active one; another revoked token is accepted within the reuse
    interval (10 s by default), otherwise the whole session's tokens are revoked
    and the answer is 400 refresh_token_already_used;
  * a bearer token is checked in GoTrue's order: header (401 no_authorization),
    signature and exp (403 bad_jwt), user (403 user_not_found), session
    (403 session_not_found);
  * errors use the 2024-01-01 body `{"code": <error_code>, "message": …}` when
    the request sends `X-Supabase-Api-Version: 2024-01-01` (supabase_auth does)
    and the older `{"code": <status>, "error_code": …, "msg": …}` otherwise;
    the gateway's apikey refusals are `{"message": …, "hint": …}`;
  * adding an email to an anonymous user sets it at once when the project
    auto-confirms emails (`mailer_autoconfirm`), otherwise it stays in
    `new_email` until the emailed link is opened (Supabase's hosted default:
    "Confirm email" on); the password is set at once either way;
  * anonymous sign-ins are rate limited per client IP (30 per hour by default;
    every visitor of a server-side app shares the server's IP).

Switches for failure paths (all take effect on the next request):
    standin.anonymous_sign_ins = False     signup: 422 anonymous_provider_disabled
    standin.disable_signup = True          signup: 422 signup_disabled
    standin.mailer_autoconfirm = False     an added email waits for its confirmation link
    standin.anonymous_sign_ins_per_hour    None for no limit
    standin.expire_sessions(user_id=None)  the session's time-box passed, and its access tokens'
                                           exp too (no waiting an hour): /user 403 bad_jwt
                                           "token is expired", refresh 400 session_expired
    standin.revoke_sessions(user_id=None)  signed out everywhere (sessions deleted): /user 403
                                           session_not_found, refresh 400 refresh_token_not_found
    standin.delete_user(user_id)           the user is gone: /user 403 user_not_found
    standin.advance_clock(seconds)         the server's clock moves (access tokens expire by exp)
    standin.stop()                         the server is down

Start it with `with SupabaseAuthStandIn() as standin:` or start()/stop(); it
serves from daemon threads, so a `streamlit run` subprocess can reach it at
`standin.url` (`standin.env()` gives SUPABASE_URL and SUPABASE_ANON_KEY).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import secrets
import socket
import threading
import time
import uuid
from collections import deque
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

import jwt

# Like a project's publishable / secret API keys: opaque strings the gateway checks.
ANON_KEY = "anon-key-for-the-supabase-standin"
SERVICE_ROLE_KEY = "service-role-key-for-the-supabase-standin"
API_VERSION_HEADER = "X-Supabase-Api-Version"
API_VERSION_2024 = "2024-01-01"
PREFIX = "/auth/v1"
# Kong's key-auth answers; the gateway adds no API-version header to them.
NO_API_KEY = {"message": "No API key found in request", "hint": "No `apikey` request header or url param was found."}
INVALID_API_KEY = {"message": "Invalid API key", "hint": "Double check your Supabase `anon` or `service_role` API key."}
_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class ApiError(Exception):
    """GoTrue's HTTPError: a status, an error code and a message."""

    def __init__(self, status: int, error_code: str, message: str, **extra):
        super().__init__(message)
        self.status, self.error_code, self.message, self.extra = status, error_code, message, extra


class OAuthError(Exception):
    """GoTrue's OAuthError: always 400, body {"error", "error_description"}."""

    def __init__(self, error: str, description: str):
        super().__init__(description)
        self.error, self.description = error, description


def _iso(ts: float | None) -> str | None:
    return datetime.fromtimestamp(ts, UTC).isoformat() if ts is not None else None


class SupabaseAuthStandIn:
    """State and token logic; the HTTP handler below only parses and routes."""

    def __init__(
        self,
        *,
        access_token_ttl: int = 3600,
        mailer_autoconfirm: bool = False,
        anonymous_sign_ins: bool = True,
        anonymous_sign_ins_per_hour: int | None = 30,
        refresh_token_reuse_interval: float = 10.0,
        password_min_length: int = 6,
        site_url: str = "http://127.0.0.1:3000",
    ):
        self.secret = secrets.token_urlsafe(32)
        self.access_token_ttl = access_token_ttl
        self.mailer_autoconfirm = mailer_autoconfirm
        self.anonymous_sign_ins = anonymous_sign_ins
        self.anonymous_sign_ins_per_hour = anonymous_sign_ins_per_hour
        self.refresh_token_reuse_interval = refresh_token_reuse_interval
        self.password_min_length = password_min_length
        self.disable_signup = False
        self.site_url = site_url
        self.clock_offset = 0.0
        self.users: dict[str, dict] = {}
        self.sessions: dict[str, dict] = {}  # id -> {user_id, created_at, expired}
        self.refresh_tokens: dict[str, dict] = {}  # token -> {session_id, user_id, parent, revoked, updated_at}
        self.outbox: list[dict] = []  # emails "sent": {to, type, token, link}
        self.requests: list[dict] = []
        self.user_id_override: str | None = None  # misbehave: answer /user with another user's id
        self._anonymous_sign_ins_by_ip: dict[str, deque] = {}
        self.lock = threading.RLock()
        self.connections: set = set()  # open keep-alive sockets, closed by stop() as a dying server's are
        self.server: ThreadingHTTPServer | None = None
        self.url = ""
        self.anon_key = ANON_KEY
        self.service_role_key = SERVICE_ROLE_KEY

    # -- lifecycle ----------------------------------------------------------
    def start(self, port: int = 0) -> SupabaseAuthStandIn:
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, name="supabase-auth-standin", daemon=True
        ).start()
        return self

    def stop(self) -> None:
        """Down for real: no listener, and clients' pooled connections are cut (start(port) revives it)."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        with self.lock:
            for connection in list(self.connections):
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> SupabaseAuthStandIn:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def env(self) -> dict[str, str]:
        """The settings that point an app at this server."""
        return {"SUPABASE_URL": self.url, "SUPABASE_ANON_KEY": self.anon_key}

    def now(self) -> float:
        return time.time() + self.clock_offset

    # -- switches -----------------------------------------------------------
    def _sessions_of(self, user_id) -> list[str]:
        return [sid for sid, s in self.sessions.items() if user_id is None or s["user_id"] == str(user_id)]

    def expire_sessions(self, user_id: str | uuid.UUID | None = None) -> None:
        with self.lock:
            for session_id in self._sessions_of(user_id):
                self.sessions[session_id]["expired"] = True

    def revoke_sessions(self, user_id: str | uuid.UUID | None = None) -> None:
        with self.lock:
            for session_id in self._sessions_of(user_id):
                self._delete_session(session_id)

    def delete_user(self, user_id: str | uuid.UUID) -> None:
        with self.lock:
            self.revoke_sessions(user_id)
            self.users.pop(str(user_id), None)

    def advance_clock(self, seconds: float) -> None:
        with self.lock:
            self.clock_offset += seconds

    # -- helpers for tests ----------------------------------------------------
    def paths(self) -> list[str]:
        return [f"{r['method']} {r['path']}" for r in self.requests]

    def user_by_email(self, email: str) -> dict | None:
        return next((u for u in self.users.values() if u["email"] == email), None)

    def open_link(self, link: str) -> int:
        """What a mail client does with a confirmation link: GET it (no redirect
        following); returns the status (303 when the link worked)."""
        parsed = urlparse(link)
        connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=10)
        try:
            connection.request("GET", f"{parsed.path}?{parsed.query}")
            return connection.getresponse().status
        finally:
            connection.close()

    def confirm_email(self, email: str) -> int:
        """Open the newest confirmation link sent to `email`."""
        link = next(m["link"] for m in reversed(self.outbox) if m["to"] == email)
        return self.open_link(link)

    # -- tokens ---------------------------------------------------------------
    def _new_refresh_token(self, session_id: str, user_id: str, parent: str | None) -> str:
        token = secrets.token_urlsafe(9)  # GoTrue's refresh tokens are short random strings
        self.refresh_tokens[token] = {
            "session_id": session_id,
            "user_id": user_id,
            "parent": parent,
            "revoked": False,
            "updated_at": self.now(),
        }
        return token

    def _delete_session(self, session_id: str) -> None:
        self.sessions.pop(session_id, None)
        for token in [t for t, r in self.refresh_tokens.items() if r["session_id"] == session_id]:
            del self.refresh_tokens[token]

    def _token_response(
        self, user: dict, session_id: str, refresh_token: str, method: str, expires_in: int | None = None
    ) -> dict:
        now = int(self.now())
        ttl = self.access_token_ttl if expires_in is None else expires_in
        user["last_sign_in_at"] = user.get("last_sign_in_at") or now
        claims = {
            "iss": f"{self.url}{PREFIX}",
            "sub": user["id"],
            "aud": "authenticated",
            "exp": now + ttl,
            "iat": now,
            "email": user["email"] or "",
            "phone": "",
            "app_metadata": self._app_metadata(user),
            "user_metadata": user["user_metadata"],
            "role": "authenticated",
            "aal": "aal1",
            "amr": [{"method": method, "timestamp": now}],
            "session_id": session_id,
            "is_anonymous": user["is_anonymous"],
        }
        return {
            "access_token": jwt.encode(claims, self.secret, algorithm="HS256"),
            "token_type": "bearer",
            "expires_in": ttl,
            "expires_at": now + ttl,
            "refresh_token": refresh_token,
            "user": self.user_json(user),
        }

    def issue(self, user: dict, *, method: str = "password", expires_in: int | None = None) -> dict:
        """A new session for `user` (what a sign-in does); `expires_in` overrides the access token's lifetime."""
        session_id = str(uuid.uuid4())
        self.sessions[session_id] = {"user_id": user["id"], "created_at": self.now(), "expired": False}
        refresh_token = self._new_refresh_token(session_id, user["id"], None)
        return self._token_response(user, session_id, refresh_token, method, expires_in)

    @staticmethod
    def _app_metadata(user: dict) -> dict:
        providers = ["email"] if user["email"] else []
        return {"provider": providers[0], "providers": providers} if providers else {}

    def user_json(self, user: dict) -> dict:
        answer = {
            "id": user["id"],
            "aud": "authenticated",
            "role": "authenticated",
            "email": user["email"] or "",
            "email_confirmed_at": _iso(user["email_confirmed_at"]),
            "phone": "",
            "confirmed_at": _iso(user["email_confirmed_at"]),
            "last_sign_in_at": _iso(user["last_sign_in_at"]),
            "app_metadata": self._app_metadata(user),
            "user_metadata": user["user_metadata"],
            "identities": (
                [
                    {
                        "identity_id": user["id"],
                        "id": user["id"],
                        "user_id": user["id"],
                        "identity_data": {"email": user["email"], "sub": user["id"]},
                        "provider": "email",
                        "created_at": _iso(user["created_at"]),
                        "updated_at": _iso(user["updated_at"]),
                    }
                ]
                if user["email"]
                else []
            ),
            "created_at": _iso(user["created_at"]),
            "updated_at": _iso(user["updated_at"]),
            "is_anonymous": user["is_anonymous"],
        }
        if user.get("new_email"):
            answer["new_email"] = user["new_email"]
            answer["email_change_sent_at"] = _iso(user["email_change_sent_at"])
        return {k: v for k, v in answer.items() if v is not None}

    def new_user(self, *, email: str | None = None, password: str | None = None, confirmed: bool = True) -> dict:
        now = self.now()
        user = {
            "id": str(uuid.uuid4()),
            "email": email,
            "password": password,
            "is_anonymous": email is None,
            "email_confirmed_at": now if email and confirmed else None,
            "new_email": None,
            "email_change_sent_at": None,
            "user_metadata": {},
            "created_at": now,
            "updated_at": now,
            "last_sign_in_at": None,
        }
        self.users[user["id"]] = user
        return user

    def _send_email(self, to: str, kind: str, user: dict) -> None:
        token = secrets.token_hex(28)
        link = f"{self.url}{PREFIX}/verify?" + urlencode({"token": token, "type": kind, "redirect_to": self.site_url})
        self.outbox.append({"to": to, "type": kind, "token": token, "user_id": user["id"], "link": link, "used": False})

    # -- request authentication ----------------------------------------------
    def _claims(self, authorization: str | None) -> dict:
        match = re.fullmatch(r"(?i)bearer (\S+)", (authorization or "").strip())
        if not match:
            raise ApiError(401, "no_authorization", "This endpoint requires a Bearer token")
        try:
            claims = jwt.decode(
                match.group(1),
                self.secret,
                algorithms=["HS256"],
                options={"verify_exp": False, "verify_aud": False, "verify_iat": False},
            )
        except jwt.InvalidSignatureError:
            raise ApiError(
                403,
                "bad_jwt",
                "invalid JWT: unable to parse or verify signature, token signature is invalid: signature is invalid",
            ) from None
        except jwt.InvalidAlgorithmError:
            raise ApiError(
                403,
                "bad_jwt",
                "invalid JWT: unable to parse or verify signature, "
                "token signature is invalid: signing method is invalid",
            ) from None
        except jwt.InvalidTokenError as exc:
            raise ApiError(
                403, "bad_jwt", f"invalid JWT: unable to parse or verify signature, token is malformed: {exc}"
            ) from None
        if isinstance(claims.get("exp"), (int, float)) and claims["exp"] <= self.now():
            raise ApiError(
                403,
                "bad_jwt",
                "invalid JWT: unable to parse or verify signature, token has invalid claims: token is expired",
            )
        return claims

    def _authenticated(self, headers) -> tuple[dict, dict, str | None]:
        """(claims, user, session_id) for a user's bearer token, in GoTrue's order of checks."""
        claims = self._claims(headers.get("Authorization"))
        if not claims.get("sub"):
            raise ApiError(403, "bad_jwt", "invalid claim: missing sub claim")
        try:
            uuid.UUID(str(claims["sub"]))
        except ValueError:
            raise ApiError(400, "bad_jwt", "invalid claim: sub claim must be a UUID") from None
        user = self.users.get(str(claims["sub"]))
        if user is None:
            raise ApiError(403, "user_not_found", "User from sub claim in JWT does not exist")
        session_id = claims.get("session_id")
        if session_id and session_id != str(uuid.UUID(int=0)):
            session = self.sessions.get(session_id)
            if session is None:
                raise ApiError(403, "session_not_found", "Session from session_id claim in JWT does not exist")
            if session["expired"]:  # the switch's promise: this session's access tokens are past exp too
                raise ApiError(
                    403,
                    "bad_jwt",
                    "invalid JWT: unable to parse or verify signature, token has invalid claims: token is expired",
                )
        return claims, user, session_id

    # -- routes -------------------------------------------------------------
    def handle(
        self, method: str, path: str, query: dict, headers, body: dict, client_ip: str
    ) -> tuple[int, dict | None]:
        """(status, JSON body); raises ApiError / OAuthError for GoTrue's error answers."""
        route = path.removeprefix(PREFIX)
        if route not in ("/verify",):  # the gateway's open routes skip key-auth
            apikey = headers.get("apikey")
            if not apikey:
                return 401, NO_API_KEY
            if apikey not in (self.anon_key, self.service_role_key):
                return 401, INVALID_API_KEY
        if method == "GET" and route == "/health":
            return 200, {"version": "standin", "name": "GoTrue", "description": "Supabase Auth stand-in for tests"}
        if method == "GET" and route == "/settings":
            return 200, {
                "external": {"anonymous_users": self.anonymous_sign_ins, "email": True, "phone": False},
                "disable_signup": self.disable_signup,
                "mailer_autoconfirm": self.mailer_autoconfirm,
                "phone_autoconfirm": False,
                "sms_provider": "",
                "saml_enabled": False,
            }
        if method == "POST" and route == "/signup":
            return self._signup(body, client_ip)
        if method == "POST" and route == "/token":
            grant = (query.get("grant_type") or [""])[0]
            if grant == "refresh_token":
                return self._refresh(body)
            if grant == "password":
                return self._password(body)
            raise OAuthError("unsupported_grant_type", "")
        if method == "GET" and route == "/user":
            _, user, _ = self._authenticated(headers)
            answer = self.user_json(user)
            if self.user_id_override:
                answer["id"] = self.user_id_override
            return 200, answer
        if method == "PUT" and route == "/user":
            _, user, _session_id = self._authenticated(headers)
            return self._update_user(user, body)
        if method == "POST" and route == "/logout":
            return self._logout(headers, (query.get("scope") or [""])[0])
        if method == "GET" and route == "/verify":
            return self._verify(query)
        if method == "DELETE" and route.startswith("/admin/users/"):
            # The gateway turns a secret key into a service_role JWT; a service_role JWT also works.
            if headers.get("Authorization") != f"Bearer {self.service_role_key}" and self._claims(
                headers.get("Authorization")
            ).get("role") not in ("service_role", "supabase_admin"):
                raise ApiError(403, "not_admin", "User not allowed")
            user_id = route.rsplit("/", 1)[1]
            if user_id not in self.users:
                raise ApiError(404, "user_not_found", "User not found")
            self.delete_user(user_id)
            return 200, {}
        raise ApiError(404, "unknown", "Not Found")

    def _signup(self, body: dict, client_ip: str) -> tuple[int, dict]:
        email, password = (body.get("email") or "").strip().lower(), body.get("password")
        if not email and not body.get("phone"):
            if not self.anonymous_sign_ins:
                raise ApiError(422, "anonymous_provider_disabled", "Anonymous sign-ins are disabled")
            if self.anonymous_sign_ins_per_hour is not None:
                recent = self._anonymous_sign_ins_by_ip.setdefault(client_ip, deque())
                while recent and recent[0] < self.now() - 3600:
                    recent.popleft()
                if len(recent) >= self.anonymous_sign_ins_per_hour:
                    raise ApiError(429, "over_request_rate_limit", "Request rate limit reached")
                recent.append(self.now())
            if self.disable_signup:
                raise ApiError(422, "signup_disabled", "Signups not allowed for this instance")
            return 200, self.issue(self.new_user(), method="anonymous")
        if self.disable_signup:
            raise ApiError(422, "signup_disabled", "Signups not allowed for this instance")
        if not _EMAIL_RE.match(email):
            raise ApiError(400, "validation_failed", "Unable to validate email address: invalid format")
        if not password:
            raise ApiError(422, "validation_failed", "Signup requires a valid password")
        self._check_password(password)
        if self.user_by_email(email):
            raise ApiError(422, "user_already_exists", "User already registered")
        user = self.new_user(email=email, password=password, confirmed=self.mailer_autoconfirm)
        if self.mailer_autoconfirm:
            return 200, self.issue(user)
        self._send_email(email, "signup", user)
        return 200, self.user_json(user)

    def _check_password(self, password: str) -> None:
        if len(password) < self.password_min_length:
            raise ApiError(
                422,
                "weak_password",
                f"Password should be at least {self.password_min_length} characters.",
                weak_password={"reasons": ["length"]},
            )

    def _password(self, body: dict) -> tuple[int, dict]:
        email, phone = (body.get("email") or "").strip().lower(), body.get("phone")
        if email and phone:
            raise ApiError(
                400, "validation_failed", "Only an email address or phone number should be provided on login."
            )
        if not email and not phone:
            raise ApiError(400, "validation_failed", "missing email or phone")
        user = self.user_by_email(email)
        if user is None or user["password"] is None or user["password"] != body.get("password"):
            raise ApiError(400, "invalid_credentials", "Invalid login credentials")
        if user["email_confirmed_at"] is None:
            raise ApiError(400, "email_not_confirmed", "Email not confirmed")
        user["last_sign_in_at"] = self.now()
        return 200, self.issue(user)

    def _refresh(self, body: dict) -> tuple[int, dict]:
        presented = body.get("refresh_token") or ""
        if not presented:
            raise OAuthError("invalid_request", "refresh_token required")
        record = self.refresh_tokens.get(presented)
        if record is None:
            raise ApiError(400, "refresh_token_not_found", "Invalid Refresh Token: Refresh Token Not Found")
        session = self.sessions.get(record["session_id"])
        if session is None:
            raise ApiError(400, "session_not_found", "Invalid Refresh Token: No Valid Session Found")
        if session["expired"]:
            raise ApiError(400, "session_expired", "Invalid Refresh Token: Session Expired")
        user = self.users[record["user_id"]]
        issued = None
        if record["revoked"]:
            active = next(
                (
                    t
                    for t, r in self.refresh_tokens.items()
                    if r["session_id"] == record["session_id"] and not r["revoked"]
                ),
                None,
            )
            if active is not None and self.refresh_tokens[active]["parent"] == presented:
                issued = active  # the client lost the answer to its last refresh: hand the same token back
            elif self.now() > record["updated_at"] + self.refresh_token_reuse_interval:
                for other in self.refresh_tokens.values():  # possible theft: revoke the session's family
                    if other["session_id"] == record["session_id"]:
                        other["revoked"] = True
                raise ApiError(400, "refresh_token_already_used", "Invalid Refresh Token: Already Used")
        if issued is None:
            record["revoked"], record["updated_at"] = True, self.now()
            issued = self._new_refresh_token(record["session_id"], user["id"], presented)
        return 200, self._token_response(user, record["session_id"], issued, "token_refresh")

    def _update_user(self, user: dict, body: dict) -> tuple[int, dict]:
        email = (body.get("email") or "").strip().lower()
        password = body.get("password")
        if email and not _EMAIL_RE.match(email):
            raise ApiError(400, "validation_failed", "Unable to validate email address: invalid format")
        if password is not None:
            self._check_password(password)
        if user["is_anonymous"] and password and not email and not body.get("phone"):
            raise ApiError(
                422,
                "validation_failed",
                "Updating password of an anonymous user without an email or phone is not allowed",
            )
        if (
            email
            and email != user["email"]
            and any(u["email"] == email and u["id"] != user["id"] for u in self.users.values())
        ):
            raise ApiError(422, "email_exists", "A user with this email address has already been registered")
        if password and user["password"] is not None and user["password"] == password:
            raise ApiError(422, "same_password", "New password should be different from the old password.")
        if password is not None:
            user["password"] = password
        if isinstance(body.get("data"), dict):
            user["user_metadata"].update(body["data"])
        if email and email != user["email"]:
            if user["is_anonymous"] and self.mailer_autoconfirm:
                self._confirm_email_change(user, email)
            else:
                user["new_email"], user["email_change_sent_at"] = email, self.now()
                self._send_email(email, "email_change", user)
        user["updated_at"] = self.now()
        return 200, self.user_json(user)

    def _confirm_email_change(self, user: dict, email: str) -> None:
        user.update(
            email=email,
            email_confirmed_at=self.now(),
            is_anonymous=False,
            new_email=None,
            email_change_sent_at=None,
            updated_at=self.now(),
        )

    def _verify(self, query: dict) -> tuple[int, dict]:
        token, kind = (query.get("token") or [""])[0], (query.get("type") or [""])[0]
        mail = next((m for m in self.outbox if m["token"] == token and m["type"] == kind and not m["used"]), None)
        if mail is None or mail["user_id"] not in self.users:
            return 303, {
                "_location": f"{self.site_url}#error=access_denied&error_code=otp_expired"
                "&error_description=Email+link+is+invalid+or+has+expired"
            }
        mail["used"] = True
        user = self.users[mail["user_id"]]
        if kind == "email_change":
            self._confirm_email_change(user, mail["to"])
        else:
            user["email_confirmed_at"] = self.now()
        tokens = self.issue(user, method="otp")
        fragment = urlencode(
            {k: tokens[k] for k in ("access_token", "expires_at", "expires_in", "refresh_token", "token_type")}
            | {"type": kind}
        )
        return 303, {"_location": f"{self.site_url}#{fragment}"}

    def _logout(self, headers, scope: str) -> tuple[int, None]:
        if scope not in ("", "global", "local", "others"):
            raise ApiError(400, "validation_failed", f'Unsupported logout scope "{scope}"')
        _, user, session_id = self._authenticated(headers)
        for sid in self._sessions_of(user["id"]):
            if scope == "local" and sid != session_id:
                continue
            if scope == "others" and sid == session_id:
                continue
            self._delete_session(sid)
        return 204, None


def _error_body(exc: ApiError | OAuthError, api_version: str | None) -> tuple[int, dict]:
    if isinstance(exc, OAuthError):
        return 400, {"error": exc.error, "error_description": exc.description}
    if api_version == API_VERSION_2024:
        return exc.status, {"code": exc.error_code, "message": exc.message, **exc.extra}
    return exc.status, {"code": exc.status, "error_code": exc.error_code, "msg": exc.message, **exc.extra}


def _handler_for(standin: SupabaseAuthStandIn):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self):
            super().setup()
            with standin.lock:
                standin.connections.add(self.connection)

        def finish(self):
            with standin.lock:
                standin.connections.discard(self.connection)
            super().finish()

        def _serve(self, method):
            parsed = urlparse(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = None
            query = parse_qs(parsed.query)
            api_version = self.headers.get(API_VERSION_HEADER)
            extra_headers: dict[str, str] = {}
            with standin.lock:
                standin.requests.append(
                    {
                        "method": method,
                        "path": parsed.path,
                        "query": query,
                        "body": body,
                        "apikey": self.headers.get("apikey"),
                        "authorization": self.headers.get("Authorization"),
                        "api_version": api_version,
                    }
                )
                try:
                    if body is None or not isinstance(body, dict):
                        raise ApiError(400, "bad_json", "Could not parse request body as JSON")
                    status, payload = standin.handle(
                        method, parsed.path, query, self.headers, body, self.client_address[0]
                    )
                except (ApiError, OAuthError) as exc:
                    status, payload = _error_body(exc, api_version)
                    if api_version == API_VERSION_2024:  # GoTrue echoes the version it answered in
                        extra_headers[API_VERSION_HEADER] = API_VERSION_2024
            if payload is not None and "_location" in payload:
                extra_headers["Location"] = payload.pop("_location")
                payload = None
            data = json.dumps(payload).encode() if payload is not None else b""
            self.send_response(status)
            for name, value in extra_headers.items():
                self.send_header(name, value)
            if data:
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

        def log_message(self, *args):  # keep test output clean
            pass

    return Handler
