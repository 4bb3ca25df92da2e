"""Who the visitor is: anonymous sign-in, token verification, refresh, and
upgrading an anonymous user to an email account (same user id, same data).

Two issuers behind one interface, chosen by settings:
  * embedded: rows in auth.users and HS256 JWTs shaped like Supabase Auth's,
    signed with SUPABASE_JWT_SECRET or a secret generated into DATA_DIR;
  * hosted: Supabase Auth over HTTP (supabase-py's auth client); a token is
    trusted only after Supabase itself accepted it.

Nothing here ever trusts a user id that did not come out of `verify`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
import re
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
from psycopg import errors as pg_errors

from core.config import get_settings
from core.db import admin_connection
from core.errors import AuthError, AuthUnavailable, InvalidInput

log = logging.getLogger("memory_playground.identity")

EMBEDDED_ISSUER = "memory-playground/auth/v1"
AUDIENCE = "authenticated"
_EMAIL_RE = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,255}\.[^@\s]{2,}$")
MIN_PASSWORD_LENGTH = 8


@dataclass(frozen=True)
class VerifiedUser:
    """The only thing a user scope can be built from (see core.db.Scope.for_user)."""

    user_id: uuid.UUID
    claims: dict[str, Any] = field(repr=False)
    is_anonymous: bool = True
    email: str | None = None
    pending_email: str | None = None  # added, waiting for its confirmation link (hosted only)


@dataclass(frozen=True)
class AuthSession:
    access_token: str = field(repr=False)
    refresh_token: str = field(repr=False)
    expires_at: int
    user_id: uuid.UUID
    is_anonymous: bool
    email: str | None = None
    pending_email: str | None = None  # see VerifiedUser.pending_email


# ---------------------------------------------------------------------------
# Public interface
# ---------------------------------------------------------------------------


def sign_in_anonymously() -> AuthSession:
    return _issuer().sign_in_anonymously()


def verify(access_token: str | None, *, use_cache: bool = True) -> VerifiedUser:
    """The user the auth server vouches for. The hosted issuer remembers an accepted token
    for a few seconds (Streamlit reruns often); use_cache=False asks the server regardless,
    for moments that must see a revocation at once (a new browser session)."""
    if not access_token or not isinstance(access_token, str) or len(access_token) > 8192:
        raise AuthError("No valid access token; sign in again.")
    return _issuer().verify(access_token, use_cache=use_cache)


def refresh(refresh_token: str | None) -> AuthSession:
    if not refresh_token or not isinstance(refresh_token, str) or len(refresh_token) > 1024:
        raise AuthError("No valid refresh token; sign in again.")
    return _issuer().refresh(refresh_token)


def upgrade_to_email(session: AuthSession, email: str, password: str) -> AuthSession:
    email = _validate_email(email)
    _validate_password(password)
    return _issuer().upgrade_to_email(session, email, password)


def sign_in_with_password(email: str, password: str) -> AuthSession:
    email = _validate_email(email)
    if not password:
        raise InvalidInput("Enter your password.")
    return _issuer().sign_in_with_password(email, password)


def sign_out(session: AuthSession) -> None:
    _issuer().sign_out(session)


def _validate_email(email: str) -> str:
    email = (email or "").strip().lower()
    if not _EMAIL_RE.match(email):
        raise InvalidInput("That does not look like an email address.")
    return email


def _validate_password(password: str) -> None:
    if not password or len(password) < MIN_PASSWORD_LENGTH:
        raise InvalidInput(f"Choose a password of at least {MIN_PASSWORD_LENGTH} characters.")
    if len(password) > 256 or "\x00" in password:
        raise InvalidInput("That password cannot be used (too long or has a NUL character).")


def _issuer():
    settings = get_settings()
    if settings.hosted_auth:
        return SupabaseAuthIssuer(settings.supabase_url, settings.supabase_anon_key)
    return EmbeddedIssuer()


# ---------------------------------------------------------------------------
# Embedded issuer
# ---------------------------------------------------------------------------

_secret_lock = threading.Lock()


def jwt_secret() -> str:
    """SUPABASE_JWT_SECRET, or a generated secret in DATA_DIR readable only by its owner."""
    settings = get_settings()
    if settings.supabase_jwt_secret:
        return settings.supabase_jwt_secret
    path: Path = settings.data_dir / "jwt_secret"
    with _secret_lock:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            # O_EXCL: two processes racing to create it cannot both win.
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass
            else:
                with os.fdopen(fd, "w") as handle:
                    handle.write(secrets.token_urlsafe(48))
        secret = path.read_text().strip()
    if len(secret) < 32:
        raise AuthError(f"The JWT secret in {path} is too short; delete the file to generate a new one.")
    return secret


def hash_refresh_token(token: str) -> str:
    """How a refresh token is kept wherever it must be recognised later: never in clear."""
    return hashlib.sha256(token.encode()).hexdigest()


def hash_password(password: str) -> str:
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=2**14, r=8, p=1)
    return "scrypt$16384$8$1$" + base64.b64encode(salt).decode() + "$" + base64.b64encode(digest).decode()


def check_password(password: str, stored: str | None) -> bool:
    try:
        scheme, n, r, p, salt_b64, digest_b64 = (stored or "").split("$")
        if scheme != "scrypt":
            return False
        digest = hashlib.scrypt(password.encode(), salt=base64.b64decode(salt_b64), n=int(n), r=int(r), p=int(p))
        return hmac.compare_digest(digest, base64.b64decode(digest_b64))
    except (ValueError, TypeError):
        return False


class EmbeddedIssuer:
    """Supabase-Auth-shaped tokens backed by auth.users in the embedded (or any) Postgres."""

    def __init__(self, conninfo: str | None = None):
        self.conninfo = conninfo

    def _connection(self):
        return admin_connection(self.conninfo)

    def _issue(
        self, conn, user_id: uuid.UUID, *, is_anonymous: bool, email: str | None, parent_hash: str | None = None
    ) -> AuthSession:
        settings = get_settings()
        now = int(time.time())
        expires_at = now + settings.access_token_ttl_seconds
        claims = {
            "iss": EMBEDDED_ISSUER,
            "sub": str(user_id),
            "aud": AUDIENCE,
            "role": "authenticated",
            "iat": now,
            "exp": expires_at,
            "is_anonymous": is_anonymous,
            "email": email or "",
            "session_id": str(uuid.uuid4()),
        }
        access_token = jwt.encode(claims, jwt_secret(), algorithm="HS256")
        refresh_token = secrets.token_urlsafe(32)
        conn.execute(
            "insert into auth.refresh_tokens (token_hash, user_id, parent_hash) values (%s, %s, %s)",
            (hash_refresh_token(refresh_token), user_id, parent_hash),
        )
        conn.execute("update auth.users set last_sign_in_at = now() where id = %s", (user_id,))
        return AuthSession(access_token, refresh_token, expires_at, user_id, is_anonymous, email)

    def sign_in_anonymously(self) -> AuthSession:
        with self._connection() as conn, conn.transaction():
            user_id = conn.execute("insert into auth.users (is_anonymous) values (true) returning id").fetchone()[0]
            return self._issue(conn, user_id, is_anonymous=True, email=None)

    def verify(self, access_token: str, *, use_cache: bool = True) -> VerifiedUser:
        del use_cache  # nothing cached: every call checks the signature and the user row
        try:
            claims = jwt.decode(
                access_token,
                jwt_secret(),
                algorithms=["HS256"],  # a fixed list: "none" and key-confusion tricks are refused
                audience=AUDIENCE,
                issuer=EMBEDDED_ISSUER,
                options={"require": ["exp", "iat", "sub", "aud", "iss", "role"]},
            )
        except jwt.ExpiredSignatureError:
            raise AuthError("Your session has expired; it will be refreshed, or sign in again.") from None
        except jwt.InvalidTokenError as exc:
            raise AuthError(f"The access token is not valid ({exc}).") from None
        if claims.get("role") != "authenticated":
            raise AuthError("The access token is not for a signed-in user.")
        try:
            user_id = uuid.UUID(claims["sub"])
        except (ValueError, TypeError):
            raise AuthError("The access token names no valid user.") from None
        with self._connection() as conn:
            row = conn.execute("select is_anonymous, email from auth.users where id = %s", (user_id,)).fetchone()
        if row is None:
            raise AuthError("This identity no longer exists (the database was reset?); sign in again.")
        return VerifiedUser(user_id=user_id, claims=claims, is_anonymous=row[0], email=row[1])

    def refresh(self, refresh_token: str) -> AuthSession:
        token_hash = hash_refresh_token(refresh_token)
        with self._connection() as conn:
            with conn.transaction():
                row = conn.execute(
                    "select t.user_id, t.revoked, u.is_anonymous, u.email from auth.refresh_tokens t "
                    "join auth.users u on u.id = t.user_id where t.token_hash = %s for update of t",
                    (token_hash,),
                ).fetchone()
                if row is None:
                    raise AuthError("The refresh token is not valid; sign in again.")
                user_id, revoked, is_anonymous, email = row
                if not revoked:
                    conn.execute(
                        "update auth.refresh_tokens set revoked = true, updated_at = now() where token_hash = %s",
                        (token_hash,),
                    )
                    return self._issue(conn, user_id, is_anonymous=is_anonymous, email=email, parent_hash=token_hash)
                # A used token presented again: someone may have copied it. Revoke the family,
                # and commit that before refusing (raising inside the transaction would roll it back).
                conn.execute(
                    "update auth.refresh_tokens set revoked = true, updated_at = now() where user_id = %s", (user_id,)
                )
            raise AuthError("The refresh token was already used; sign in again.")

    def upgrade_to_email(self, session: AuthSession, email: str, password: str) -> AuthSession:
        verified = self.verify(session.access_token)
        with self._connection() as conn, conn.transaction():
            taken = conn.execute(
                "select 1 from auth.users where email = %s and id <> %s", (email, verified.user_id)
            ).fetchone()
            if taken:
                raise InvalidInput("That email is already used by another account; sign in with it instead.")
            conn.execute(
                "update auth.users set email = %s, encrypted_password = %s, is_anonymous = false, "
                "email_confirmed_at = now(), updated_at = now() where id = %s",
                (email, hash_password(password), verified.user_id),
            )
            conn.execute("update public.profiles set email = %s where id = %s", (email, verified.user_id))
            return self._issue(conn, verified.user_id, is_anonymous=False, email=email)

    def sign_in_with_password(self, email: str, password: str) -> AuthSession:
        with self._connection() as conn, conn.transaction():
            row = conn.execute("select id, encrypted_password from auth.users where email = %s", (email,)).fetchone()
            if row is None or not check_password(password, row[1]):
                raise AuthError("Wrong email or password.")
            return self._issue(conn, row[0], is_anonymous=False, email=email)

    def sign_out(self, session: AuthSession) -> None:
        with self._connection() as conn:
            conn.execute(
                "update auth.refresh_tokens set revoked = true, updated_at = now() where token_hash = %s",
                (hash_refresh_token(session.refresh_token),),
            )


# ---------------------------------------------------------------------------
# Hosted issuer: Supabase Auth
# ---------------------------------------------------------------------------

_verified_cache: dict[str, tuple[float, VerifiedUser]] = {}
_VERIFIED_CACHE_SECONDS = 30.0  # Streamlit reruns often; ask Supabase at most this often per token

# Supabase Auth error codes that are about the project's settings, not the visitor:
# say which setting to change.
_SETTING_HINTS = {
    "anonymous_provider_disabled": "Supabase Auth at {url} has anonymous sign-ins turned off; enable them in the "
    "Supabase dashboard under Authentication → Sign In / Providers.",
    "signup_disabled": "Supabase Auth at {url} does not accept new users; turn on “Allow new users to sign up” "
    "under Authentication → Sign In / Providers.",
    "over_request_rate_limit": "Supabase Auth is rate-limiting sign-ins from this server ({message}); try again in "
    "a few minutes, or raise the limits under Authentication → Rate Limits (every "
    "visitor signs in from this server's address).",
}

_http_client = None
_http_client_lock = threading.Lock()


def _shared_http_client():
    """One connection pool for every call to Supabase Auth (httpx.Client is thread-safe),
    instead of a new TLS connection per verification."""
    global _http_client
    with _http_client_lock:
        if _http_client is None:
            import httpx

            _http_client = httpx.Client(timeout=httpx.Timeout(10.0, connect=5.0), follow_redirects=True)
        return _http_client


def _mirror_into_local_auth_users(user_id: uuid.UUID, *, is_anonymous: bool, email: str | None) -> None:
    """With Supabase Auth but the embedded database, keep the visitor's row in the
    local auth.users (the shim's) so foreign keys, the profile trigger and RLS work
    exactly as in a Supabase project, where Supabase Auth writes that table itself.
    Never called for a DATABASE_URL: a Supabase project's auth.users is not ours to write."""
    source = get_settings().supabase_url
    upsert = (
        "insert into auth.users (id, is_anonymous, email, email_confirmed_at, last_sign_in_at, "
        "raw_app_meta_data) "
        "values (%s, %s, %s, case when %s::text is null then null else now() end, now(), "
        "jsonb_build_object('mirrored_from', %s::text)) "
        "on conflict (id) do update set is_anonymous = excluded.is_anonymous, email = excluded.email, "
        "email_confirmed_at = coalesce(auth.users.email_confirmed_at, excluded.email_confirmed_at), "
        "updated_at = now() "
        "where auth.users.is_anonymous is distinct from excluded.is_anonymous "
        "or auth.users.email is distinct from excluded.email"
    )
    with admin_connection() as conn, conn.transaction():
        if email:
            # Supabase keeps emails unique, so another mirrored row with this email is stale
            # (a user of a previously configured project, or one who changed address).
            conn.execute(
                "update auth.users set email = null, updated_at = now() where email = %s "
                "and id <> %s and raw_app_meta_data ? 'mirrored_from'",
                (email, user_id),
            )
        try:
            with conn.transaction():  # a savepoint, so the fallback below can still run
                conn.execute(upsert, (user_id, is_anonymous, email, email, source))
        except pg_errors.UniqueViolation:
            # A user the embedded issuer created holds this email. Supabase decides who is who;
            # the local row only needs the id, so keep it without the email.
            log.warning("email of Supabase user %s is taken by a local user; mirrored without it", user_id)
            email = None
            conn.execute(upsert, (user_id, is_anonymous, None, None, source))
        if email:
            conn.execute(
                "update public.profiles set email = %s where id = %s and email is distinct from %s",
                (email, user_id, email),
            )


class SupabaseAuthIssuer:
    def __init__(self, url: str, anon_key: str):
        self.url = url.rstrip("/")
        self.anon_key = anon_key

    def _client(self):
        from supabase_auth import SyncGoTrueClient

        # A fresh client per call: the client object holds one session and is not thread-safe.
        # The HTTP connection pool underneath is shared.
        return SyncGoTrueClient(
            url=f"{self.url}/auth/v1",
            headers={"apikey": self.anon_key, "Authorization": f"Bearer {self.anon_key}"},
            auto_refresh_token=False,
            persist_session=False,
            http_client=_shared_http_client(),
        )

    def _session(self, response) -> AuthSession:
        session = getattr(response, "session", None)
        if session is None:
            raise AuthError("Supabase Auth returned no session (is anonymous sign-in enabled for the project?).")
        user = session.user
        auth = AuthSession(
            access_token=session.access_token,
            refresh_token=session.refresh_token,
            expires_at=int(session.expires_at or time.time() + (session.expires_in or 3600)),
            user_id=uuid.UUID(str(user.id)),
            is_anonymous=bool(getattr(user, "is_anonymous", False)),
            email=user.email or None,
            pending_email=getattr(user, "new_email", None) or None,
        )
        if get_settings().embedded_database:
            _mirror_into_local_auth_users(auth.user_id, is_anonymous=auth.is_anonymous, email=auth.email)
        return auth

    def _call(self, fn, *args, **kwargs):
        from supabase_auth.errors import AuthApiError, AuthRetryableError, AuthUnknownError
        from supabase_auth.errors import AuthError as SupabaseError

        try:
            return fn(*args, **kwargs)
        except AuthRetryableError as exc:  # transport errors and 502/503/504
            raise AuthUnavailable(
                f"Supabase Auth is not reachable at {self.url} ({_short(exc.message)}); "
                "check SUPABASE_URL, or try again in a moment if it is correct."
            ) from None
        except AuthApiError as exc:
            if exc.status >= 500:
                raise AuthUnavailable(
                    f"Supabase Auth at {self.url} failed ({_short(exc.message)}); try again in a moment.", code=exc.code
                ) from None
            if exc.code in _SETTING_HINTS:
                raise AuthError(
                    _SETTING_HINTS[exc.code].format(url=self.url, message=_short(exc.message)), code=exc.code
                ) from None
            if exc.status == 401 and not exc.code:  # the API gateway refused the key
                raise AuthError(
                    f"Supabase Auth refused: {_short(exc.message)}; check SUPABASE_ANON_KEY "
                    "(the project's anon / publishable key).",
                    code="invalid_api_key",
                ) from None
            raise AuthError(f"Supabase Auth refused: {_short(exc.message)}", code=exc.code) from None
        except AuthUnknownError:  # an answer that is not Supabase Auth's JSON (a wrong URL, a proxy page)
            raise AuthUnavailable(
                f"The server at {self.url} did not answer like Supabase Auth; check "
                "SUPABASE_URL (the project URL, e.g. https://<ref>.supabase.co)."
            ) from None
        except SupabaseError as exc:
            raise AuthError(
                f"Supabase Auth refused: {_short(getattr(exc, 'message', str(exc)))}", code=getattr(exc, "code", None)
            ) from None
        except Exception as exc:  # anything else from the transport
            raise AuthUnavailable(
                f"Supabase Auth is not reachable at {self.url} ({_short(str(exc))}); try again in a moment."
            ) from None

    def sign_in_anonymously(self) -> AuthSession:
        return self._session(self._call(self._client().sign_in_anonymously))

    def verify(self, access_token: str, *, use_cache: bool = True) -> VerifiedUser:
        cached = _verified_cache.get(access_token) if use_cache else None
        if cached and cached[0] > time.monotonic():
            return cached[1]
        try:
            response = self._call(self._client().get_user, access_token)
        except AuthUnavailable:
            raise
        except AuthError:
            _verified_cache.pop(access_token, None)  # refused now: stop trusting it in open pages too
            raise
        user = getattr(response, "user", None)
        if user is None:
            raise AuthError("Supabase Auth did not accept the access token; sign in again.")
        # Supabase has just accepted this exact token, so its payload may be read.
        claims = jwt.decode(access_token, options={"verify_signature": False})
        if claims.get("sub") != str(user.id):
            raise AuthError("The access token does not belong to the user Supabase returned.")
        verified = VerifiedUser(
            user_id=uuid.UUID(str(user.id)),
            claims=claims,
            # From the user record, not the token: confirming an email changes them before the next refresh.
            is_anonymous=bool(getattr(user, "is_anonymous", False)),
            email=user.email or None,
            pending_email=getattr(user, "new_email", None) or None,
        )
        if get_settings().embedded_database:
            _mirror_into_local_auth_users(verified.user_id, is_anonymous=verified.is_anonymous, email=verified.email)
        if len(_verified_cache) > 10_000:
            _verified_cache.clear()
        _verified_cache[access_token] = (time.monotonic() + _VERIFIED_CACHE_SECONDS, verified)
        return verified

    def refresh(self, refresh_token: str) -> AuthSession:
        return self._session(self._call(self._client().refresh_session, refresh_token))

    def upgrade_to_email(self, session: AuthSession, email: str, password: str) -> AuthSession:
        client = self._client()
        self._call(client.set_session, session.access_token, session.refresh_token)
        updated = self._call(client.update_user, {"email": email, "password": password}).user
        # The user id is unchanged. When the project confirms emails, the address waits in
        # `new_email` until the emailed link is opened; the refreshed session says which.
        # No argument: set_session may already have rotated the refresh token (expired access token).
        upgraded = self._session(self._call(client.refresh_session))
        if upgraded.email != email and (getattr(updated, "new_email", None) or upgraded.pending_email) is None:
            raise AuthError(
                f"Supabase Auth accepted the change but the account does not show {email}; "
                "reload the page to see its current state."
            )
        return upgraded

    def sign_in_with_password(self, email: str, password: str) -> AuthSession:
        client = self._client()
        return self._session(self._call(client.sign_in_with_password, {"email": email, "password": password}))

    def sign_out(self, session: AuthSession) -> None:
        _verified_cache.pop(session.access_token, None)  # a signed-out token must not stay trusted here
        import httpx
        from supabase_auth.errors import AuthError as SupabaseError

        client = self._client()
        try:
            client.set_session(session.access_token, session.refresh_token)
            client.sign_out({"scope": "local"})
        except (SupabaseError, httpx.HTTPError) as exc:
            # an already-dead session (or a server that is down) is not an error for the visitor: it is dropped here
            log.info("Supabase Auth did not sign out session of %s: %s", session.user_id, exc)


def _short(message: Any, limit: int = 200) -> str:
    text = " ".join(str(message or "no detail").split()).rstrip(".")
    text = re.sub(r"^\[Errno -?\d+\] ", "", text)  # "[Errno 111] Connection refused" -> "Connection refused"
    return text if len(text) <= limit else text[: limit - 1] + "…"
