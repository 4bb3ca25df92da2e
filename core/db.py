"""Database access: the embedded server, the connection pool, the two scopes
(as the user, as the service) and the migration runner.

The lowest layer of core/: it imports only core.config and core.errors. The
command line (`python -m core status|migrate|seed|reset|uri`) is core/__main__.py.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import uuid
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from core.config import LOCAL_SHIM_DIR, MIGRATIONS_DIR, get_settings
from core.errors import DatabaseUnavailable, InvalidInput

log = logging.getLogger(__name__)

_lock = threading.RLock()
_embedded_servers: dict[Path, Any] = {}
_pools: dict[str, ConnectionPool] = {}


# ---------------------------------------------------------------------------
# Where the database is
# ---------------------------------------------------------------------------


def start_embedded(pgdata: Path, *, cleanup_mode: str | None = "stop") -> str:
    """Start (or join) the embedded server for `pgdata` and return its URI.

    pgserver keeps one server per data directory across processes: a second
    process attaches to the running server, and the last one to exit stops it.
    """
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); its fallback is fine.
        warnings.simplefilter("ignore")
        import pgserver  # only needed for the embedded mode

    pgdata = Path(pgdata).resolve()
    with _lock:
        server = _embedded_servers.get(pgdata)
        if server is None:
            pgdata.parent.mkdir(parents=True, exist_ok=True)
            try:
                server = pgserver.get_server(pgdata, cleanup_mode=cleanup_mode)
            except Exception as exc:  # pgserver raises CalledProcessError/Timeout/AssertionError
                raise DatabaseUnavailable(
                    f"Could not start the embedded database in {pgdata}: {exc}. "
                    f"See {pgdata / 'log'} for the server's own log."
                ) from exc
            _embedded_servers[pgdata] = server
        return server.get_uri()


def revive_embedded() -> None:
    """Restart embedded servers that were stopped underneath us (e.g. the last
    other process attached to them exited). Called after a connection failure,
    not on every query: pgserver's check takes a file lock."""
    with _lock:
        servers = list(_embedded_servers.values())
    for server in servers:
        try:
            with server._lock:
                server.ensure_postgres_running()
        except Exception as exc:  # the caller reports the outage; this was a best effort
            log.warning("could not restart the embedded database: %s", exc)


def database_url() -> str:
    """The configured DATABASE_URL, or the embedded server's URI (started on demand)."""
    settings = get_settings()
    if settings.database_url:
        return settings.database_url
    return start_embedded(settings.data_dir / "pg")


# ---------------------------------------------------------------------------
# Pool
# ---------------------------------------------------------------------------


def get_pool(conninfo: str | None = None) -> ConnectionPool:
    conninfo = conninfo or database_url()
    with _lock:
        pool = _pools.get(conninfo)
        if pool is None:
            pool = ConnectionPool(
                conninfo,
                min_size=1,
                max_size=get_settings().db_pool_max_size,
                kwargs={"autocommit": True},
                check=ConnectionPool.check_connection,  # drop dead connections after a restart
                open=False,
                name="memory-playground",
            )
            pool.open(wait=False)
            _pools[conninfo] = pool
        return pool


def close_pools() -> None:
    with _lock:
        for pool in _pools.values():
            pool.close()
        _pools.clear()


# ---------------------------------------------------------------------------
# Scopes: who a transaction runs as
# ---------------------------------------------------------------------------


class VerifiedIdentity(Protocol):
    """What core.identity.verify() returns; only verified claims get here."""

    user_id: uuid.UUID
    claims: Mapping[str, Any]


@dataclass(frozen=True)
class Scope:
    """Who a transaction runs as.

    `Scope.for_user` runs as role `authenticated` with the verified JWT claims
    (RLS decides). `Scope.service` runs as `service_role` (bypasses RLS); the
    data services then filter every statement by `user_id`.
    """

    user_id: uuid.UUID
    claims: Mapping[str, Any] | None = field(default=None, repr=False)

    @property
    def is_service(self) -> bool:
        return self.claims is None

    @classmethod
    def for_user(cls, identity: VerifiedIdentity) -> Scope:
        claims = dict(identity.claims)
        if str(claims.get("sub")) != str(identity.user_id):
            raise InvalidInput("The identity's claims do not match its user id.")
        return cls(user_id=identity.user_id, claims=claims)

    @classmethod
    def service(cls, user_id: uuid.UUID | str) -> Scope:
        return cls(user_id=parse_user_id(user_id), claims=None)


def parse_user_id(value: uuid.UUID | str | None) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value).strip())
    except (ValueError, AttributeError, TypeError):
        raise InvalidInput(f"Not a valid user id: {value!r}.") from None


@contextmanager
def transaction(scope: Scope, *, conninfo: str | None = None) -> Iterator[psycopg.Cursor]:
    """A cursor inside one transaction, running as `scope`.

    Mirrors what PostgREST does for each request: the role and the claims are
    set with LOCAL, so they end with the transaction and never leak to the
    next borrower of the pooled connection.
    """
    try:
        with (
            get_pool(conninfo).connection(timeout=10) as conn,
            conn.transaction(),
            conn.cursor(row_factory=dict_row) as cur,
        ):
            if scope.is_service:
                cur.execute("set local role service_role")
            else:
                cur.execute("set local role authenticated")
                cur.execute(
                    "select set_config('request.jwt.claims', %s, true)",
                    (json.dumps(scope.claims, default=str),),
                )
            yield cur
    except (psycopg.OperationalError, PoolTimeout) as exc:
        if get_settings().embedded_database:
            revive_embedded()  # so the next request can succeed
        raise DatabaseUnavailable(
            "The database is not reachable right now. "
            "If you run the embedded database, `make run` starts it; otherwise check DATABASE_URL. "
            f"({type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else 'no detail'})"
        ) from exc


@contextmanager
def admin_connection(conninfo: str | None = None) -> Iterator[psycopg.Connection]:
    """A direct connection as the configured login role (migrations, seeding, auth)."""
    conninfo = conninfo or database_url()
    try:
        conn = psycopg.connect(conninfo, autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(f"The database is not reachable: {exc}".strip()) from exc
    try:
        yield conn
    finally:
        conn.close()


def vector_literal(values) -> str:
    """pgvector's text form; avoids registering the type on every pooled connection."""
    return "[" + ",".join(f"{float(v):.8g}" for v in values) + "]"


def ping(conninfo: str | None = None) -> dict[str, Any]:
    """Cheap health check for status panels: server version and migration count."""
    with admin_connection(conninfo) as conn:
        version = conn.execute("show server_version").fetchone()[0]
        applied = _applied_migrations(conn)
    return {"ok": True, "server_version": version, "applied_migrations": len(applied)}


# ---------------------------------------------------------------------------
# Migrations
# ---------------------------------------------------------------------------

# The same bookkeeping table the Supabase CLI uses, so `supabase db push`
# sees migrations applied here as already applied.
_BOOKKEEPING = """
create schema if not exists supabase_migrations;
create table if not exists supabase_migrations.schema_migrations (
  version    text primary key,
  statements text[],
  name       text
);
"""
_MIGRATION_LOCK_KEY = 727_431_001  # arbitrary constant: serialises concurrent migrate runs


@dataclass(frozen=True)
class Migration:
    version: str
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


def migration_files(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    found = []
    for path in sorted(directory.glob("*.sql")):
        version, _, name = path.stem.partition("_")
        if not version.isdigit():
            raise InvalidInput(
                f"Migration file {path.name} must start with a numeric version, e.g. 20260101000000_name.sql"
            )
        found.append(Migration(version=version, name=name, path=path))
    return found


def _applied_migrations(conn: psycopg.Connection) -> dict[str, dict]:
    exists = conn.execute("select to_regclass('supabase_migrations.schema_migrations')").fetchone()[0]
    if exists is None:
        return {}
    rows = conn.execute("select version, name, statements from supabase_migrations.schema_migrations").fetchall()
    return {version: {"name": name, "statements": statements} for version, name, statements in rows}


def apply_local_shim(conn: psycopg.Connection) -> None:
    """Supabase's auth schema and roles for the embedded database (idempotent)."""
    for path in sorted(LOCAL_SHIM_DIR.glob("*.sql")):
        conn.execute(path.read_text(encoding="utf-8"))


def migrate(conninfo: str | None = None, *, embedded: bool | None = None, echo=print) -> list[str]:
    """Apply pending migrations in order; return the versions applied now."""
    settings = get_settings()
    embedded = settings.embedded_database if embedded is None else embedded
    applied_now: list[str] = []
    with admin_connection(conninfo) as conn:
        conn.execute("select pg_advisory_lock(%s)", (_MIGRATION_LOCK_KEY,))
        try:
            if embedded:
                apply_local_shim(conn)
            conn.execute(_BOOKKEEPING)
            applied = _applied_migrations(conn)
            for migration in migration_files():
                recorded = applied.get(migration.version)
                if recorded is not None:
                    stored = (recorded["statements"] or [""])[0]
                    if hashlib.sha256(stored.encode()).hexdigest() != migration.checksum:
                        echo(
                            f"warning: {migration.path.name} changed after it was applied; "
                            "add a new migration instead of editing an applied one."
                        )
                    continue
                echo(f"applying {migration.path.name}")
                with conn.transaction():
                    conn.execute(migration.sql)
                    conn.execute(
                        "insert into supabase_migrations.schema_migrations (version, statements, name) "
                        "values (%s, %s, %s)",
                        (migration.version, [migration.sql], migration.name),
                    )
                applied_now.append(migration.version)
        finally:
            conn.execute("select pg_advisory_unlock(%s)", (_MIGRATION_LOCK_KEY,))
    return applied_now


def status(conninfo: str | None = None) -> list[dict[str, Any]]:
    with admin_connection(conninfo) as conn:
        applied = _applied_migrations(conn)
    return [{"version": m.version, "name": m.name, "applied": m.version in applied} for m in migration_files()]


def reset(conninfo: str | None = None) -> None:
    """Drop everything this project created (embedded database only)."""
    with admin_connection(conninfo) as conn:
        conn.execute(
            """
            drop schema if exists public cascade;
            drop schema if exists auth cascade;
            drop schema if exists supabase_migrations cascade;
            drop extension if exists vector cascade;
            -- as PostgreSQL 15+ creates it: owned by pg_database_owner, no CREATE for everyone
            create schema public authorization pg_database_owner;
            grant usage on schema public to public;
            """
        )
