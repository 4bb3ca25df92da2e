"""Hand-offs between the sessions of one browser, kept in Postgres so that any number
of app processes share them.

Refresh tokens rotate, and presenting a rotated-away token again ends its family
(reuse detection). The tabs of one browser are separate sessions that share one
cookie, possibly served by different app processes behind a load balancer, so a
tab renewing an hour after another tab rotated the token, or a reload racing the
cookie write, would otherwise trip that detection. So every token the app hands
out is recorded with its browser's family, and when a token is exchanged, the
session that replaced it is stored *sealed under the replaced token*: AES-GCM
with a key derived (HKDF-SHA256) from the token, which the database never holds
(only its SHA-256, as the row's key). Following the chain from a token one holds
leads to the browser's newest session; the database alone opens nothing.

Who may follow the chain is decided by the caller (ui/auth.py): a session this
server already holds, always; a token arriving in a cookie, only if it was
replaced less than a reuse interval ago (otherwise it is a replay and goes to
the auth server's reuse detection).
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import psycopg
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from core.db import pooled_connection, service_connection, service_url
from core.identity import AuthSession, hash_refresh_token

log = logging.getLogger(__name__)

_INFO = b"memory-playground session hand-off v1"
MAX_CHAIN = 64  # rotations followed at most in one walk
_TABLE = "memory_playground_private.session_handoffs"
_LOCK_SPACE = 0x6D70_0001  # first key of the families' advisory locks (the second: the family's hash)
LOCK_WAIT_SECONDS = 15.0


def _key(token: str) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(token.encode())


def seal(session: AuthSession, under_token: str) -> bytes:
    payload = json.dumps(
        {
            "access_token": session.access_token,
            "refresh_token": session.refresh_token,
            "expires_at": session.expires_at,
            "user_id": str(session.user_id),
            "is_anonymous": session.is_anonymous,
            "email": session.email,
            "pending_email": session.pending_email,
        }
    ).encode()
    nonce = os.urandom(12)
    return nonce + AESGCM(_key(under_token)).encrypt(nonce, payload, hash_refresh_token(under_token).encode())


def unseal(sealed: bytes, under_token: str) -> AuthSession:
    """The session sealed under `under_token`; ValueError if it does not open with that token."""
    try:
        data = json.loads(
            AESGCM(_key(under_token)).decrypt(
                bytes(sealed[:12]), bytes(sealed[12:]), hash_refresh_token(under_token).encode()
            )
        )
        return AuthSession(
            access_token=data["access_token"],
            refresh_token=data["refresh_token"],
            expires_at=int(data["expires_at"]),
            user_id=uuid.UUID(data["user_id"]),
            is_anonymous=bool(data["is_anonymous"]),
            email=data.get("email"),
            pending_email=data.get("pending_email"),
        )
    except (InvalidTag, KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError("the hand-off does not open with this token") from exc


def _as_service(conn) -> None:
    conn.execute("set local role service_role")


def start(session: AuthSession, family: str | None = None) -> str:
    """Record a token handed to a browser (a sign-in); returns its family."""
    family = family or uuid.uuid4().hex
    with service_connection() as conn, conn.transaction():
        _as_service(conn)
        conn.execute(
            f"insert into {_TABLE} (token_hash, family, user_id) values (%s, %s, %s) "
            "on conflict (token_hash) do nothing",
            (hash_refresh_token(session.refresh_token), family, session.user_id),
        )
    return family


def record(family: str, replaced_token: str, successor: AuthSession) -> AuthSession:
    """`replaced_token` was exchanged for `successor`. A token exchanged twice (two processes
    renewing at once) keeps the successor that lives longest; its first exchange time stays."""
    expires = datetime.fromtimestamp(successor.expires_at, tz=UTC)
    with service_connection() as conn, conn.transaction():
        _as_service(conn)
        conn.execute(
            f"insert into {_TABLE} (token_hash, family, user_id, superseded_at, successor_sealed, "
            "  successor_expires_at) values (%s, %s, %s, now(), %s, %s) "
            "on conflict (token_hash) do update set superseded_at = coalesce("
            f"  {_TABLE}.superseded_at, excluded.superseded_at), "
            "  successor_sealed = excluded.successor_sealed, successor_expires_at = excluded.successor_expires_at "
            f"where {_TABLE}.successor_expires_at is null "
            f"   or {_TABLE}.successor_expires_at < excluded.successor_expires_at",
            (hash_refresh_token(replaced_token), family, successor.user_id, seal(successor, replaced_token), expires),
        )
        conn.execute(
            f"insert into {_TABLE} (token_hash, family, user_id) values (%s, %s, %s) "
            "on conflict (token_hash) do nothing",
            (hash_refresh_token(successor.refresh_token), family, successor.user_id),
        )
    return successor


@contextmanager
def family_lock(family: str, *, wait_seconds: float | None = None) -> Iterator[bool]:
    """Hold the family's lock in every app process at once (a Postgres advisory lock) for
    one exchange: read the newest token, refresh it, record the successor. Two processes
    renewing one browser's session at the same moment would otherwise both present the
    same token, and the second would trip the auth server's reuse detection whenever its
    reuse interval is shorter than the race. Yields False when the lock was not had within
    `wait_seconds` (the holder is stuck on a slow auth server): the caller goes on unlocked,
    as it did before there was a lock, rather than fail the page."""
    wait = LOCK_WAIT_SECONDS if wait_seconds is None else wait_seconds
    key = (_LOCK_SPACE, family)
    # A session-level lock on an autocommit connection, not a transaction's: no transaction stays open
    # while the holder waits on the auth server (a server's idle-in-transaction timeout would end it).
    with pooled_connection(service_url(), purpose="locks") as conn:
        conn.execute("select set_config('lock_timeout', %s, false)", (f"{max(1, int(wait * 1000))}ms",))
        try:
            conn.execute("select pg_advisory_lock(%s::int, hashtext(%s))", key)
            held = True
        except psycopg.errors.LockNotAvailable:
            log.warning("session family lock not had within %.0f s; renewing without it", wait)
            held = False
        try:
            yield held
        finally:
            if held:
                try:
                    conn.execute("select pg_advisory_unlock(%s::int, hashtext(%s))", key)
                except psycopg.Error as exc:  # the connection is gone, and the lock with it
                    log.warning("could not release a session family lock: %s", exc)


def lookup(token: str) -> tuple[str, float | None] | None:
    """(family, seconds since the token was exchanged, or None if it was not) for a token
    the app handed out; None for one it does not know."""
    with service_connection() as conn, conn.transaction():
        _as_service(conn)
        row = conn.execute(
            f"select family, extract(epoch from now() - superseded_at)::float from {_TABLE} where token_hash = %s",
            (hash_refresh_token(token),),
        ).fetchone()
    return (row[0], row[1]) if row else None


def newest(token: str, *, user_id: uuid.UUID | None = None) -> AuthSession | None:
    """The newest session reachable from `token` by following its hand-offs; None if the
    token was never exchanged. A link that does not open, or leads to another user, ends the walk."""
    return _walk(token, user_id)[1]


def follow(token: str, *, user_id: uuid.UUID) -> tuple[bool, AuthSession | None]:
    """(whether the app still knows `token`, the newest session reachable from it): a token handed out
    and not known any more is of a family forgotten since, because its browser took another identity
    (or signed out) in another tab."""
    return _walk(token, user_id)


def _walk(token: str, user_id: uuid.UUID | None) -> tuple[bool, AuthSession | None]:
    current: AuthSession | None = None
    holding = token
    known = False
    with service_connection() as conn, conn.transaction():
        _as_service(conn)
        for hop in range(MAX_CHAIN):
            row = conn.execute(
                f"select successor_sealed from {_TABLE} where token_hash = %s", (hash_refresh_token(holding),)
            ).fetchone()
            known = known or (hop == 0 and row is not None)
            if row is None or row[0] is None:
                break
            try:
                successor = unseal(row[0], holding)
            except ValueError:
                break
            if (user_id or (current.user_id if current else successor.user_id)) != successor.user_id:
                break
            current, holding = successor, successor.refresh_token
    return known, current


def forget(family: str | None) -> int:
    """Drop a family's hand-offs (its browser signed out or changed identity)."""
    if not family:
        return 0
    with service_connection() as conn, conn.transaction():
        _as_service(conn)
        return conn.execute(f"delete from {_TABLE} where family = %s", (family,)).rowcount


def prune(conn, older_than_seconds: float) -> int:
    """Delete hand-offs older than the longest a session lasts (the cleanup job, as the owner)."""
    return conn.execute(
        f"delete from {_TABLE} where created_at < now() - make_interval(secs => %s)", (older_than_seconds,)
    ).rowcount
