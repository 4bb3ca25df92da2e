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
import functools
import hashlib
import hmac
import logging
import math
import os
import re
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import jwt
from psycopg import errors as pg_errors

from core.config import get_settings
from core.db import admin_connection, service_connection
from core.errors import AuthError, AuthUnavailable, ConfigurationError, InvalidInput, RateLimited
from core.private_files import secret_file

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


def sign_in_anonymously(*, client: str | None = None) -> AuthSession:
    """A new anonymous user. `client` (the visitor's address, as the web server saw it) is
    throttled: a burst of ANON_SIGNIN_BURST, then ANON_SIGNIN_PER_MINUTE (RateLimited beyond)."""
    if client is not None:
        _anonymous_signins.take(client, what="new visitors from your address")
    return _issuer().sign_in_anonymously()


def verify(access_token: str | None, *, use_cache: bool = True) -> VerifiedUser:
    """The user the auth server vouches for. The hosted issuer remembers an accepted token
    for a few seconds (Streamlit reruns often); use_cache=False asks the server regardless,
    for moments that must see a revocation at once (a new browser session)."""
    if not access_token or not isinstance(access_token, str) or len(access_token) > 8192 or not access_token.isascii():
        raise AuthError("No valid access token; sign in again.")
    return _issuer().verify(access_token, use_cache=use_cache)


def refresh(refresh_token: str | None) -> AuthSession:
    if (
        not refresh_token
        or not isinstance(refresh_token, str)
        or len(refresh_token) > 1024
        or not refresh_token.isascii()
    ):
        raise AuthError("No valid refresh token; sign in again.")
    return _issuer().refresh(refresh_token)


def upgrade_to_email(session: AuthSession, email: str, password: str) -> AuthSession:
    """Same user id, now with an email and a password. Every token issued before (while the
    user was anonymous, possibly copied) stops working; the returned session is the new one."""
    email = _validate_email(email)
    _validate_password(password)
    return _issuer().upgrade_to_email(session, email, password)


def sign_in_with_password(email: str, password: str, *, client: str | None = None) -> AuthSession:
    email = _validate_email(email)
    if not isinstance(password, str) or not password:
        raise InvalidInput("Enter your password.")
    if len(password) > 256 or "\x00" in password or not _encodable(password):
        raise AuthError("Wrong email or password.")
    _password_attempts.take(f"{client or '-'}|{email}", what="sign-in attempts for this email", peek=True)
    try:
        return _issuer().sign_in_with_password(email, password)
    except AuthError as exc:
        if not isinstance(exc, AuthUnavailable):
            _password_attempts.take(f"{client or '-'}|{email}", what="sign-in attempts for this email")
        raise


def change_password(session: AuthSession, new_password: str) -> AuthSession:
    """Set a new password for the session's (email) account. Every other session of the
    user ends; the returned session replaces the one given."""
    _validate_password(new_password)
    return _issuer().change_password(session, new_password)


def sign_out(session: AuthSession) -> None:
    """End the session and every other session of its user (all earlier refresh tokens)."""
    _issuer().sign_out(session)


def _validate_email(email: str) -> str:
    if not isinstance(email, str) or len(email) > 330:
        raise InvalidInput("That does not look like an email address.")
    email = email.strip().lower()
    if not _EMAIL_RE.match(email) or not email.isprintable() or not email.isascii():
        raise InvalidInput("That does not look like an email address.")
    return email


def _validate_password(password: str) -> None:
    if not isinstance(password, str) or len(password) < MIN_PASSWORD_LENGTH:
        raise InvalidInput(f"Choose a password of at least {MIN_PASSWORD_LENGTH} characters.")
    if len(password) > 256 or "\x00" in password or not _encodable(password):
        raise InvalidInput("That password cannot be used (too long, or has a NUL or an unpaired surrogate).")


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _issuer():
    settings = get_settings()
    if settings.hosted_auth:
        return SupabaseAuthIssuer(settings.supabase_url, settings.supabase_anon_key)
    return EmbeddedIssuer()


# ---------------------------------------------------------------------------
# Throttling (per process: each app process keeps its own buckets)
# ---------------------------------------------------------------------------


class TokenBucket:
    """`burst` at once, then `per_minute`; one bucket per key, forgotten once full again."""

    def __init__(self, burst, per_minute, *, max_keys: int = 100_000):
        self._burst, self._per_minute = burst, per_minute  # numbers, or callables read each time
        self._buckets: dict[str, tuple[float, float]] = {}
        self._guard = threading.Lock()
        self._max_keys = max_keys

    def _limits(self) -> tuple[float, float]:
        burst = self._burst() if callable(self._burst) else self._burst
        rate = self._per_minute() if callable(self._per_minute) else self._per_minute
        return float(burst), float(rate) / 60.0

    def take(self, key: str, *, what: str, peek: bool = False) -> None:
        """Spend one token for `key` (peek: only check one is there); RateLimited if none is."""
        burst, per_second = self._limits()
        now = time.monotonic()
        with self._guard:
            tokens, last = self._buckets.get(key, (burst, now))
            tokens = min(burst, tokens + (now - last) * per_second)
            if tokens < 1.0:
                wait = max(1, math.ceil((1.0 - tokens) / per_second))
                self._buckets[key] = (tokens, now)
                raise RateLimited(
                    f"Too many {what} right now; slow down and try again in {wait} seconds.", retry_after=wait
                )
            if not peek:
                self._buckets[key] = (tokens - 1.0, now)
            if len(self._buckets) > self._max_keys:
                self._prune(now, burst, per_second)

    def _prune(self, now: float, burst: float, per_second: float) -> None:
        full = [k for k, (t, last) in self._buckets.items() if t + (now - last) * per_second >= burst]
        for key in full or list(self._buckets)[: len(self._buckets) // 2]:
            del self._buckets[key]


_anonymous_signins = TokenBucket(
    lambda: get_settings().anon_signin_burst, lambda: get_settings().anon_signin_per_minute
)
_password_attempts = TokenBucket(10, 10)  # failed password sign-ins per (client, email)


# ---------------------------------------------------------------------------
# Embedded issuer
# ---------------------------------------------------------------------------

MIN_JWT_SECRET_LENGTH = 32
# A token exchanged less than REFRESH_TOKEN_REUSE_SECONDS ago may be presented again and gets
# a sibling of the new token (two tabs or two app processes renewing at once), as Supabase
# Auth's refresh-token reuse interval does; later, it is a replay and ends its family.
REFRESH_REUSE_INTERVAL_SECONDS: float | None = None  # tests may pin it; None: the setting


def jwt_secret() -> str:
    """SUPABASE_JWT_SECRET, or a generated secret in DATA_DIR readable only by its owner."""
    settings = get_settings()
    if settings.supabase_jwt_secret:
        if len(settings.supabase_jwt_secret) < MIN_JWT_SECRET_LENGTH:
            raise ConfigurationError(
                f"SUPABASE_JWT_SECRET is too short ({len(settings.supabase_jwt_secret)} "
                f"characters); use at least {MIN_JWT_SECRET_LENGTH} random characters."
            )
        return settings.supabase_jwt_secret
    try:
        return secret_file(settings.data_dir / "jwt_secret", what="JWT secret", min_length=MIN_JWT_SECRET_LENGTH)
    except ConfigurationError as exc:
        raise AuthError(str(exc)) from None


def hash_refresh_token(token: str) -> str:
    """How a refresh token is kept wherever it must be recognised later: never in clear."""
    return hashlib.sha256(token.encode()).hexdigest()


_hash_refresh_token = hash_refresh_token  # the name the tests used before


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


@functools.cache
def _decoy_hash() -> str:
    """Checked against when no account matches, so an unknown email takes as long as a wrong password."""
    return hash_password(secrets.token_urlsafe(16))


class EmbeddedIssuer:
    """Supabase-Auth-shaped tokens backed by auth.users in the embedded (or any) Postgres.

    Refresh tokens are stored hashed, in families (one sign-in and every token rotated from
    it). A family ends after REFRESH_TOKEN_LIFETIME_DAYS, a token after
    REFRESH_TOKEN_INACTIVITY_DAYS unused; a replayed token ends its own family only."""

    def __init__(self, conninfo: str | None = None):
        self.conninfo = conninfo

    def _connection(self):
        return admin_connection(self.conninfo) if self.conninfo else service_connection()

    def _issue(
        self,
        conn,
        user_id: uuid.UUID,
        *,
        is_anonymous: bool,
        email: str | None,
        parent_hash: str | None = None,
        family_id: uuid.UUID | None = None,
        session_started_at=None,
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
            "insert into auth.refresh_tokens (token_hash, user_id, parent_hash, family_id, session_started_at) "
            "values (%s, %s, %s, coalesce(%s, gen_random_uuid()), coalesce(%s, now()))",
            (hash_refresh_token(refresh_token), user_id, parent_hash, family_id, session_started_at),
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
        except (ValueError, TypeError, AttributeError):
            raise AuthError("The access token names no valid user.") from None
        with self._connection() as conn:
            row = conn.execute("select is_anonymous, email from auth.users where id = %s", (user_id,)).fetchone()
        if row is None:
            raise AuthError(
                "This identity no longer exists (the database was reset?); sign in again.", code="user_not_found"
            )
        return VerifiedUser(user_id=user_id, claims=claims, is_anonymous=row[0], email=row[1])

    def refresh(self, refresh_token: str) -> AuthSession:
        settings = get_settings()
        token_hash = hash_refresh_token(refresh_token)
        with self._connection() as conn:
            with conn.transaction():
                row = conn.execute(
                    "select t.user_id, t.revoked, t.revoked_reason, t.family_id, t.session_started_at, "
                    "  now() - t.session_started_at > make_interval(secs => %s) as too_old, "
                    "  now() - t.created_at > make_interval(secs => %s) as idle, "
                    "  coalesce(now() - t.rotated_at <= make_interval(secs => %s), false) as just_rotated, "
                    "  exists (select 1 from auth.refresh_tokens f where f.family_id = t.family_id "
                    "          and not f.revoked) as family_alive, "
                    "  u.is_anonymous, u.email "
                    "from auth.refresh_tokens t join auth.users u on u.id = t.user_id "
                    "where t.token_hash = %s for update of t",
                    (
                        settings.refresh_token_lifetime_days * 86400,
                        settings.refresh_token_inactivity_days * 86400,
                        settings.refresh_token_reuse_seconds
                        if REFRESH_REUSE_INTERVAL_SECONDS is None
                        else REFRESH_REUSE_INTERVAL_SECONDS,
                        token_hash,
                    ),
                ).fetchone()
                if row is None:
                    raise AuthError("The refresh token is not valid; sign in again.", code="refresh_token_not_found")
                (
                    user_id,
                    revoked,
                    reason,
                    family_id,
                    started,
                    too_old,
                    idle,
                    just_rotated,
                    family_alive,
                    is_anonymous,
                    email,
                ) = row
                if too_old:
                    raise AuthError(
                        "The session is older than the longest a sign-in lasts; sign in again.", code="session_expired"
                    )
                if not revoked and idle:
                    raise AuthError("The session was unused for too long; sign in again.", code="session_expired")
                if not revoked:
                    conn.execute(
                        "update auth.refresh_tokens set revoked = true, revoked_reason = 'rotated', "
                        "rotated_at = now(), updated_at = now() where token_hash = %s",
                        (token_hash,),
                    )
                    return self._issue(
                        conn,
                        user_id,
                        is_anonymous=is_anonymous,
                        email=email,
                        parent_hash=token_hash,
                        family_id=family_id,
                        session_started_at=started,
                    )
                if reason == "rotated" and just_rotated and family_alive:
                    # Presented again right after its exchange: another tab or process of the same
                    # browser renewing at the same moment. Give it a sibling in the same family.
                    return self._issue(
                        conn,
                        user_id,
                        is_anonymous=is_anonymous,
                        email=email,
                        parent_hash=token_hash,
                        family_id=family_id,
                        session_started_at=started,
                    )
                if reason == "reused" or (reason == "rotated" and not family_alive):
                    raise AuthError(
                        "The refresh token was already used; sign in again.", code="refresh_token_already_used"
                    )
                if reason != "rotated":
                    raise AuthError("The session was signed out; sign in again.", code="session_not_found")
                # A used token presented again: someone may have copied it. End its family (only),
                # and commit that before refusing (raising inside the transaction would roll it back).
                conn.execute(
                    "update auth.refresh_tokens set revoked = true, revoked_reason = coalesce("
                    "case when revoked then revoked_reason end, 'reused'), updated_at = now() "
                    "where family_id = %s",
                    (family_id,),
                )
            raise AuthError("The refresh token was already used; sign in again.", code="refresh_token_already_used")

    @staticmethod
    def _revoke_all(conn, user_id: uuid.UUID, reason: str) -> None:
        conn.execute(
            "update auth.refresh_tokens set revoked = true, revoked_reason = %s, updated_at = now() "
            "where user_id = %s and not revoked",
            (reason, user_id),
        )

    @staticmethod
    def _set_profile_email(conn, user_id: uuid.UUID, email: str) -> None:
        """profiles is RLS-protected; the service login updates it as service_role, then steps back."""
        conn.execute("set local role service_role")
        conn.execute("update public.profiles set email = %s where id = %s", (email, user_id))
        conn.execute("reset role")

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
            self._set_profile_email(conn, verified.user_id, email)
            self._revoke_all(conn, verified.user_id, "upgraded")  # tokens of the anonymous days end here
            return self._issue(conn, verified.user_id, is_anonymous=False, email=email)

    def sign_in_with_password(self, email: str, password: str) -> AuthSession:
        with self._connection() as conn:
            row = conn.execute("select id, encrypted_password from auth.users where email = %s", (email,)).fetchone()
        stored = row[1] if row is not None and row[1] else None
        matches = check_password(password, stored or _decoy_hash())  # same work whether or not the email exists
        if stored is None or not matches:
            raise AuthError("Wrong email or password.")
        with self._connection() as conn, conn.transaction():
            return self._issue(conn, row[0], is_anonymous=False, email=email)

    def change_password(self, session: AuthSession, new_password: str) -> AuthSession:
        verified = self.verify(session.access_token)
        if verified.is_anonymous or not verified.email:
            raise InvalidInput("An anonymous identity has no password; save it with an email first.")
        with self._connection() as conn, conn.transaction():
            conn.execute(
                "update auth.users set encrypted_password = %s, updated_at = now() where id = %s",
                (hash_password(new_password), verified.user_id),
            )
            self._revoke_all(conn, verified.user_id, "password_changed")
            return self._issue(conn, verified.user_id, is_anonymous=False, email=verified.email)

    def sign_out(self, session: AuthSession) -> None:
        with self._connection() as conn:
            row = conn.execute(
                "select user_id from auth.refresh_tokens where token_hash = %s",
                (hash_refresh_token(session.refresh_token),),
            ).fetchone()
            if row is not None and row[0] == session.user_id:
                self._revoke_all(conn, session.user_id, "signed_out")


def delete_idle_anonymous_users(
    older_than_days: float | None = None, *, conninfo: str | None = None, batch_size: int = 500
) -> int:
    """Delete anonymous users unseen for `older_than_days` (ANON_USER_RETENTION_DAYS), with
    everything they own (their rows cascade). Runs as the owner; returns how many went.
    "Seen" is the latest of: created, signed in or refreshed, a conversation started."""
    days = get_settings().anon_user_retention_days if older_than_days is None else float(older_than_days)
    if not math.isfinite(days) or days < 0:
        raise InvalidInput("The retention must be a number of days, 0 or more.")
    removed = 0
    with admin_connection(conninfo) as conn:
        while True:
            with conn.transaction():
                deleted = conn.execute(
                    "delete from auth.users where id in ("
                    "  select u.id from auth.users u left join public.profiles p on p.id = u.id "
                    "  where u.is_anonymous and greatest(u.created_at, u.last_sign_in_at, p.last_seen_at) "
                    "        < now() - make_interval(secs => %s) "
                    "  limit %s for update of u skip locked)",
                    (days * 86400, batch_size),
                ).rowcount
            removed += deleted
            if deleted < batch_size:
                return removed


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
    with service_connection() as conn, conn.transaction():
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
            conn.execute("set local role service_role")  # profiles is RLS-protected
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
        self._end_other_sessions(upgraded)  # sessions from the anonymous days (possibly copied) end
        return upgraded

    def _end_other_sessions(self, session: AuthSession) -> None:
        client = self._client()
        try:
            self._call(client.set_session, session.access_token, session.refresh_token)
            self._call(client.sign_out, {"scope": "others"})
        except AuthError as exc:  # the change itself succeeded; say what could not be done
            log.warning("could not end the user's other sessions after a credential change: %s", exc)

    def change_password(self, session: AuthSession, new_password: str) -> AuthSession:
        client = self._client()
        self._call(client.set_session, session.access_token, session.refresh_token)
        self._call(client.update_user, {"password": new_password})
        renewed = self._session(self._call(client.refresh_session))
        self._end_other_sessions(renewed)
        return renewed

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
            client.sign_out({"scope": "global"})  # every session of the user, as the embedded issuer does
        except (SupabaseError, httpx.HTTPError) as exc:
            # an already-dead session (or a server that is down) is not an error for the visitor: it is dropped here
            log.info("Supabase Auth did not sign out session of %s: %s", session.user_id, exc)


def _short(message: Any, limit: int = 200) -> str:
    text = " ".join(str(message or "no detail").split()).rstrip(".")
    text = re.sub(r"^\[Errno -?\d+\] ", "", text)  # "[Errno 111] Connection refused" -> "Connection refused"
    return text if len(text) <= limit else text[: limit - 1] + "…"
