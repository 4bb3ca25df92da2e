"""Database access: the embedded server, the connection pool, the two scopes
(as the user, as the service) and the migration runner.

The lowest layer of core/: it imports only core.config and core.errors. The
command line (`python -m core status|migrate|seed|reset|uri`) is core/__main__.py.
"""

from __future__ import annotations

import atexit
import hashlib
import hmac
import json
import logging
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from core.config import LOCAL_SHIM_DIR, MIGRATIONS_DIR, get_settings
from core.errors import ConfigurationError, DatabaseUnavailable, InvalidInput

log = logging.getLogger(__name__)

_lock = threading.RLock()
_embedded_servers: dict[Path, Any] = {}  # pgdata -> embedded_pg.LockedDownServer
_server_of: dict[str, Any] = {}  # every URI of an embedded server -> that server
_claims_keys: dict[str, bytes] = {}  # app-role URI -> the key its database checks claims with
_pools: dict[tuple[str, str], ConnectionPool] = {}
POOL_TIMEOUT_SECONDS = 5.0  # how long a request waits for a pooled connection (it queues under load)


# ---------------------------------------------------------------------------
# Where the database is
# ---------------------------------------------------------------------------


def _start_server(pgdata: Path, cleanup_mode: str | None):
    from core import embedded_pg  # only the embedded mode needs pgserver

    pgdata = Path(pgdata).resolve()
    with _lock:
        server = _embedded_servers.get(pgdata)
        if server is None:
            try:
                pgdata.parent.mkdir(parents=True, exist_ok=True)
                server = embedded_pg.start(pgdata, cleanup_mode=cleanup_mode)
            except Exception as exc:  # pgserver raises CalledProcessError/Timeout/AssertionError
                raise DatabaseUnavailable(
                    f"Could not start the embedded database in {pgdata}: {_first_line(exc)}. "
                    f"See {pgdata / 'log'} for the server's own log."
                ) from exc
            _embedded_servers[pgdata] = server
            # atexit runs the last registered first: the pools close before pgserver's own handler (registered
            # by the start above) stops the server, instead of reconnecting to a stopping server ("server closed
            # the connection unexpectedly" in every short command's output, now and then)
            atexit.register(close_pools)
        _register(server)
        return server


def _register(server) -> None:
    from core import embedded_pg

    for role in embedded_pg.ROLES:
        _server_of[server.uri(role)] = server
    _claims_keys[server.uri(embedded_pg.APP_ROLE)] = embedded_pg.claims_key(server.data_dir)


def start_embedded(pgdata: Path, *, cleanup_mode: str | None = "stop") -> str:
    """Start (or join) the embedded server for `pgdata` and return the owner's URI
    (migrations, seeding, tests). The password stays in DATA_DIR; the URI names its file.

    pgserver keeps one server per data directory across processes: a second
    process attaches to the running server, and the last one to exit stops it.
    """
    from core import embedded_pg

    return _start_server(pgdata, cleanup_mode).uri(embedded_pg.OWNER_ROLE)


def _embedded_uri(role: str) -> str:
    return _start_server(get_settings().data_dir / "pg", "stop").uri(role)


def stop_embedded() -> None:
    """Let go of the embedded servers this process started or joined: the last process to let go stops one.

    pgserver does this at exit (atexit); a host that ends the process without running atexit handlers
    (uvicorn re-raises the signal it caught, after its shutdown) calls this in its own shutdown first.
    """
    close_pools()
    with _lock:
        servers = list(_embedded_servers.values())
        _embedded_servers.clear()
        _server_of.clear()
        _claims_keys.clear()
    for server in servers:
        server.cleanup()


def database_url() -> str:
    """The owner's connection: ADMIN_DATABASE_URL, else DATABASE_URL, else the embedded
    server's owner (migrations, seeding, maintenance, `python -m core uri`)."""
    settings = get_settings()
    if settings.admin_database_url or settings.database_url:
        return settings.admin_database_url or settings.database_url
    from core import embedded_pg

    return _embedded_uri(embedded_pg.OWNER_ROLE)


def app_url() -> str:
    """What user scopes connect as: DATABASE_URL, or the embedded app role."""
    settings = get_settings()
    if settings.database_url:
        return settings.database_url
    from core import embedded_pg

    return _embedded_uri(embedded_pg.APP_ROLE)


def service_url() -> str:
    """What the service scope, sign-in and the session store connect as: SERVICE_DATABASE_URL,
    else DATABASE_URL, else the embedded service role."""
    settings = get_settings()
    if settings.service_database_url or settings.database_url:
        return settings.service_database_url or settings.database_url
    from core import embedded_pg

    return _embedded_uri(embedded_pg.SERVICE_ROLE)


# ---------------------------------------------------------------------------
# Outages: one recovery path for every use of the database
# ---------------------------------------------------------------------------

_revive_lock = threading.Lock()
_reviving = threading.Event()
_alive_pid: dict[Path, int | None] = {}


def _unavailable(
    exc: BaseException | None = None, *, restarting: bool = False, cannot_start: bool = False
) -> DatabaseUnavailable:
    if restarting:
        detail = "the embedded database is being restarted; try again in a few seconds."
    elif cannot_start:
        detail = "the embedded database stopped and could not be started again; the server log says why."
    else:
        detail = (
            "if you run the embedded database, `make run` starts it; otherwise check DATABASE_URL"
            + (f" ({type(exc).__name__}: {_first_line(exc)})" if exc is not None else "")
            + "."
        )
    return DatabaseUnavailable(f"The database is not reachable right now: {detail}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "no detail"


def _server_alive(server) -> bool:
    """Whether the embedded server's postmaster runs: its pid file is there and its process
    is alive (not a zombie). A few microseconds; the pid file is parsed again only when the
    process changed (a restart elsewhere)."""
    import psutil
    from pgserver.utils import PostmasterInfo

    pid = _alive_pid.get(server.pgdata)
    if pid is not None and (server.pgdata / "postmaster.pid").exists():
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            pass
    try:
        info = PostmasterInfo.read_from_pgdata(server.pgdata)
        alive = (
            info is not None
            and info.is_running()
            and info.status == "ready"
            and info.process.status() != psutil.STATUS_ZOMBIE
        )
    except Exception:  # a half-written pid file during a restart, a process gone meanwhile
        alive = False
    _alive_pid[server.pgdata] = info.pid if alive else None
    return alive


def revive_embedded() -> bool:
    """Start the embedded servers again if they stopped underneath us. Single flight:
    the caller that gets here first restarts them (and replaces the pools, whose
    connections died with the server); callers arriving meanwhile return False at once.
    True if a server had to be started."""
    from core import embedded_pg

    if not _revive_lock.acquire(blocking=False):
        return False
    _reviving.set()
    restarted = False
    try:
        with _lock:
            servers = list(_embedded_servers.values())
        for server in servers:
            try:
                if embedded_pg.ensure_running(server):
                    restarted = True
                    log.warning("the embedded database in %s had stopped; it was started again", server.pgdata)
                _register(server)  # a restart may move the socket
            except Exception as exc:  # the callers report the outage; the next failure tries again
                log.warning("could not restart the embedded database: %s", _first_line(exc))
        if restarted:
            _reset_pools()
    finally:
        _reviving.clear()
        _revive_lock.release()
    return restarted


def _before_connecting(conninfo: str) -> None:
    """Fail fast while a restart is under way, and notice a stopped embedded server
    before waiting on a pool that cannot connect."""
    server = _server_of.get(conninfo)
    if server is None:
        return
    if _reviving.is_set():
        raise _unavailable(restarting=True)
    if not _server_alive(server):
        revive_embedded()  # the first caller restarts it; it may then go on with its request
        if not _server_alive(server):
            # another caller's restart still under way, or this one failed (it said "being restarted" for as
            # long as the server could not start)
            raise _unavailable(restarting=_reviving.is_set(), cannot_start=not _reviving.is_set())


def _after_failure(conninfo: str, exc: BaseException) -> DatabaseUnavailable:
    if conninfo in _server_of and not _reviving.is_set():
        revive_embedded()
    return _unavailable(exc)


# ---------------------------------------------------------------------------
# Pools
# ---------------------------------------------------------------------------


def get_pool(conninfo: str | None = None, *, purpose: str = "queries") -> ConnectionPool:
    """The pool for `conninfo` (default: the user scopes' connection). Connections that hold a
    lock while their holder queries on (purpose "locks") come from a pool of their own, so that
    holders waiting for a second connection can never use up the pool they wait on."""
    conninfo = conninfo or app_url()
    with _lock:
        pool = _pools.get((conninfo, purpose))
        if pool is None:
            pool = ConnectionPool(
                conninfo,
                min_size=1,
                max_size=get_settings().db_pool_max_size,
                kwargs={"autocommit": True},
                check=ConnectionPool.check_connection,  # drop dead connections after a restart
                # a lock connection goes back to the pool holding no session-level lock, whatever its holder did
                reset=_release_advisory_locks if purpose == "locks" else None,
                open=False,
                name=f"memory-playground-{purpose}",
            )
            pool.open(wait=False)
            _pools[(conninfo, purpose)] = pool
        return pool


def _release_advisory_locks(conn: psycopg.Connection) -> None:
    conn.execute("select pg_advisory_unlock_all()")


def _reset_pools() -> None:
    """New pools after a restart: the old ones hold dead connections and back off before reconnecting."""
    with _lock:
        old = list(_pools.values())
        _pools.clear()
    threading.Thread(target=lambda: [p.close(timeout=1.0) for p in old], name="close-old-pools", daemon=True).start()


def close_pools() -> None:
    with _lock:
        for pool in _pools.values():
            pool.close()
        _pools.clear()


@contextmanager
def pooled_connection(conninfo: str, *, purpose: str = "queries") -> Iterator[psycopg.Connection]:
    """A pooled autocommit connection; any failure to reach the database becomes DatabaseUnavailable."""
    _before_connecting(conninfo)
    try:
        with get_pool(conninfo, purpose=purpose).connection(timeout=POOL_TIMEOUT_SECONDS) as conn:
            yield conn
    except (psycopg.OperationalError, PoolTimeout, PoolClosed) as exc:
        if isinstance(exc, psycopg.errors.QueryCanceled):
            raise  # a statement timeout, not an outage
        raise _after_failure(conninfo, exc) from exc


def service_connection() -> Iterator[psycopg.Connection]:
    """A pooled connection as the service login (sign-in, the session store, health checks)."""
    return pooled_connection(service_url())


# ---------------------------------------------------------------------------
# Scopes: who a transaction runs as
# ---------------------------------------------------------------------------


class VerifiedIdentity(Protocol):
    """What core.identity.verify() returns; only verified claims get here."""

    user_id: uuid.UUID
    claims: Mapping[str, Any]


@dataclass(frozen=True)
class Scope:
    """Who a transaction runs as; built only by its two constructors, which name the choice.

    `Scope.for_user` runs as role `authenticated` with the verified JWT claims
    (RLS decides). `Scope.service` runs as `service_role` (bypasses RLS); the
    data services then filter every statement by `user_id`.
    """

    user_id: uuid.UUID
    kind: Literal["user", "service"]
    claims: Mapping[str, Any] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in ("user", "service") or not isinstance(self.user_id, uuid.UUID):
            raise InvalidInput("A scope is built with Scope.for_user(verified) or Scope.service(user_id).")
        if (self.kind == "user") != (self.claims is not None):
            raise InvalidInput("A user scope needs verified claims; a service scope has none.")

    @property
    def is_service(self) -> bool:
        return self.kind == "service"

    @classmethod
    def for_user(cls, identity: VerifiedIdentity) -> Scope:
        claims = dict(identity.claims)
        if str(claims.get("sub")) != str(identity.user_id):
            raise InvalidInput("The identity's claims do not match its user id.")
        return cls(user_id=parse_user_id(identity.user_id), kind="user", claims=claims)

    @classmethod
    def service(cls, user_id: uuid.UUID | str) -> Scope:
        return cls(user_id=parse_user_id(user_id), kind="service")


def parse_user_id(value: uuid.UUID | str | None) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    if not isinstance(value, str) or len(value) > 100:
        raise InvalidInput(f"Not a valid user id: {_excerpt(value)}.")
    try:
        return uuid.UUID(value.strip())
    except ValueError:
        raise InvalidInput(f"Not a valid user id: {_excerpt(value)}.") from None


def _excerpt(value: Any, limit: int = 60) -> str:
    try:
        text = ascii(value)
    except (RecursionError, ValueError):
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def signed_claims(claims: Mapping[str, Any], key: bytes | None) -> tuple[str, str]:
    """The claims text and its HMAC-SHA256 (hex) under `key`: what auth.jwt() checks."""
    raw = json.dumps(claims, default=str, separators=(",", ":"))
    mac = hmac.new(key, raw.encode(), hashlib.sha256).hexdigest() if key else ""
    return raw, mac


def claims_key(conninfo: str | None = None) -> bytes | None:
    """The key the database behind `conninfo` (default: the user scopes') checks claims with;
    None for a database this process does not run (DATABASE_URL), which takes claims unsigned."""
    return _claims_keys.get(conninfo or app_url())


@contextmanager
def transaction(scope: Scope, *, conninfo: str | None = None) -> Iterator[psycopg.Cursor]:
    """A cursor inside one transaction, running as `scope`.

    Mirrors what PostgREST does for each request: the role and the claims are
    set with LOCAL, so they end with the transaction and never leak to the
    next borrower of the pooled connection. User scopes and the service scope
    use different logins (see core/embedded_pg.py), so a user's connection
    cannot become service_role.
    """
    conninfo = conninfo or (service_url() if scope.is_service else app_url())
    with pooled_connection(conninfo) as conn, conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        if scope.is_service:
            cur.execute("set local role service_role")
        else:
            raw, mac = signed_claims(scope.claims, _claims_keys.get(conninfo))
            cur.execute("set local role authenticated")
            cur.execute(
                "select set_config('request.jwt.claims', %s, true), set_config('request.jwt.claims_mac', %s, true)",
                (raw, mac),
            )
        yield cur


@contextmanager
def admin_connection(conninfo: str | None = None) -> Iterator[psycopg.Connection]:
    """A direct connection as the owner (migrations, seeding, maintenance; never for a request)."""
    conninfo = conninfo or database_url()
    _before_connecting(conninfo)
    try:
        conn = psycopg.connect(conninfo, autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as exc:
        raise _after_failure(conninfo, exc) from exc
    try:
        yield conn
    finally:
        conn.close()


def vector_literal(values) -> str:
    """pgvector's text form; avoids registering the type on every pooled connection."""
    return "[" + ",".join(f"{float(v):.8g}" for v in values) + "]"


def ping(conninfo: str | None = None) -> dict[str, Any]:
    """Cheap health check for status panels: server version and migration count. Uses the
    service pool (what sign-in uses), so it fails and recovers exactly as requests do."""
    with pooled_connection(conninfo or service_url()) as conn:
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
    conninfo = conninfo or database_url()
    with admin_connection(conninfo) as conn:
        conn.execute("select pg_advisory_lock(%s)", (_MIGRATION_LOCK_KEY,))
        try:
            conn.execute(_BOOKKEEPING)
            if embedded:
                apply_local_shim(conn)
                server = _server_of.get(conninfo)
                if server is not None:  # passwords and the claims key come from that server's DATA_DIR
                    from core import embedded_pg

                    embedded_pg.provision_login_roles(conn, server.data_dir)
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


def require_migrated(conninfo: str | None = None) -> None:
    """Refuse to start on a database whose schema is not this version's: every query would otherwise fail
    with "relation … does not exist" (a fresh DATA_DIR, or a pull that added a migration)."""
    pending = [m["name"] or m["version"] for m in status(conninfo) if not m["applied"]]
    if pending:
        total = len(migration_files())
        fix = (
            "run `make db` (it applies them)"
            if get_settings().embedded_database
            else "run `DATABASE_URL=... make db` or `supabase db push`"
        )
        raise ConfigurationError(
            f"The database is missing {len(pending)} of this version's {total} migrations "
            f"({', '.join(pending[:3])}{', …' if len(pending) > 3 else ''}): {fix}, then start again."
        )


def reset(conninfo: str | None = None) -> None:
    """Drop everything this project created (embedded database only)."""
    with admin_connection(conninfo) as conn:
        conn.execute(
            """
            drop schema if exists public cascade;
            drop schema if exists auth cascade;
            drop schema if exists memory_playground_private cascade;
            drop schema if exists supabase_migrations cascade;
            drop extension if exists vector cascade;
            -- as PostgreSQL 15+ creates it: owned by pg_database_owner, no CREATE for everyone
            create schema public authorization pg_database_owner;
            grant usage on schema public to public;
            """
        )
