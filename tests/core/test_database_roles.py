"""Who can reach the embedded database, and what the app's login can do once connected.

Probed as an attacker would: a second local account with psql, a connection
without the password file, and SQL smuggled into a user's transaction that
tries to leave row level security (another user's claims, `reset role`,
`set role service_role`, the owner's role).
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from core import db, embedded_pg, identity, memories
from core.db import Scope

PSQL = Path(embedded_pg._pgserver.POSTGRES_BIN_PATH) / "psql"
SECRET = "B's bank PIN is 4711"


def _sign_in():
    session = identity.sign_in_anonymously()
    verified = identity.verify(session.access_token)
    return verified, Scope.for_user(verified)


@pytest.fixture(scope="module")
def two_users(database_uri):
    (_, a), (_, b) = _sign_in(), _sign_in()
    memories.remember(a, "hometown", "A grew up in Porto")
    memories.remember(b, "bank_pin", SECRET)
    return a, b


@pytest.fixture(scope="module")
def local_stranger():
    """A throwaway local Unix account (we run as root here); removed afterwards."""
    if os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("runuser"):
        pytest.skip("needs root with useradd/runuser to create a second local account")
    name = f"mpprobe{uuid.uuid4().hex[:8]}"
    created = subprocess.run(
        ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], capture_output=True, text=True
    )
    if created.returncode != 0:
        pytest.skip(f"could not create a second local account: {created.stderr.strip()}")
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], capture_output=True)


def _psql_as(user: str, conninfo: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            "runuser",
            "-u",
            user,
            "--",
            str(PSQL),
            "-w",
            "-X",
            "-At",
            "-c",
            "select current_user || ' super=' || rolsuper from pg_roles where rolname = current_user",
            conninfo,
        ],
        capture_output=True,
        text=True,
        timeout=30,
        cwd="/",
    )


def _without_password(uri: str, role: str) -> str:
    parts = conninfo_to_dict(uri)
    return f"host={parts['host']} port={parts['port']} dbname={parts['dbname']} user={role}"


def _assert_stranger_refused(stranger: str, server) -> None:
    for role in embedded_pg.ROLES:
        for conninfo in (server.uri(role), _without_password(server.uri(role), role)):
            result = _psql_as(stranger, conninfo)
            assert result.returncode != 0, (role, result.stdout)
            assert "super=" not in result.stdout
            # refused at the door: the socket's directory cannot even be entered
            assert "Permission denied" in result.stderr or "password" in result.stderr, result.stderr


def test_socket_and_secrets_are_private_to_the_owner(database_uri):
    server = db._embedded_servers[(db.get_settings().data_dir / "pg").resolve()]
    socket_dir = server.endpoint.socket_dir
    info = socket_dir.stat()
    assert stat.S_IMODE(info.st_mode) == 0o700
    assert info.st_uid == pwd.getpwnam(server.system_user).pw_uid if server.system_user else os.geteuid()
    data_dir = db.get_settings().data_dir
    for name in ("pg_owner.pgpass", "pg_app.pgpass", "pg_service.pgpass", "pg_claims_key", "jwt_secret"):
        path = data_dir / name
        if name == "jwt_secret":
            identity.jwt_secret()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, name
    assert stat.S_IMODE(data_dir.stat().st_mode) & 0o077 in (0, 0o011)  # never readable or listable by others
    assert "local   all       all   scram-sha-256" in (server.pgdata / "pg_hba.conf").read_text()
    assert "trust" not in (server.pgdata / "pg_hba.conf").read_text().split("(see docs/SECURITY.md)")[1]


def test_the_owner_can_connect_only_with_the_password_file(database_uri):
    server = db._embedded_servers[(db.get_settings().data_dir / "pg").resolve()]
    with psycopg.connect(server.uri(embedded_pg.OWNER_ROLE)) as conn:
        assert conn.execute("select rolsuper from pg_roles where rolname = current_user").fetchone()[0] is True
    for role in embedded_pg.ROLES:
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(_without_password(server.uri(role), role) + " passfile=/dev/null", connect_timeout=5)
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(_without_password(server.uri(role), role) + " password=guess-123", connect_timeout=5)


def test_a_second_local_account_cannot_connect(database_uri, local_stranger):
    server = db._embedded_servers[(db.get_settings().data_dir / "pg").resolve()]
    _assert_stranger_refused(local_stranger, server)
    # and cannot read the password files either
    for role in embedded_pg.ROLES:
        read = subprocess.run(
            ["runuser", "-u", local_stranger, "--", "cat", str(embedded_pg.passfile(server.data_dir, role))],
            capture_output=True,
            text=True,
            cwd="/",
        )
        assert read.returncode != 0 and "Permission denied" in read.stderr


def test_a_long_data_dir_gets_a_private_socket_directory_and_strangers_stay_out(local_stranger):
    """The path that used to put the socket in a world-writable runtime directory."""
    base = Path(tempfile.mkdtemp(prefix="mp-long-"))
    data_dir = base / ("deeply-nested-data-directory-" * 3).rstrip("-") / "data"
    assert len(str(data_dir / "pg" / ".s.PGSQL.5432")) > 100
    try:
        uri = db.start_embedded(data_dir / "pg", cleanup_mode="delete")
        server = db._embedded_servers[(data_dir / "pg").resolve()]
        socket_dir = server.endpoint.socket_dir
        assert socket_dir != server.pgdata and socket_dir.name.startswith("mp-pg-")
        info = os.lstat(socket_dir)
        assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700
        with psycopg.connect(uri) as conn:
            assert conn.execute("select 1").fetchone() == (1,)
        _assert_stranger_refused(local_stranger, server)
    finally:
        server = db._embedded_servers.pop((data_dir / "pg").resolve(), None)
        if server is not None:
            server.cleanup()
        shutil.rmtree(base, ignore_errors=True)
    assert not socket_dir.exists()  # stopped, its socket directory goes too (one was left in /tmp every run)


def test_login_roles_are_not_superusers_and_cannot_become_one(database_uri):
    with db.admin_connection() as conn:
        rows = {
            name: rest
            for name, *rest in conn.execute(
                "select rolname, rolsuper, rolbypassrls, rolcreaterole, rolcreatedb, rolinherit, "
                "  pg_has_role(rolname, 'postgres', 'member'), pg_has_role(rolname, 'service_role', 'member'), "
                "  pg_has_role(rolname, 'authenticated', 'member') "
                "from pg_roles where rolname in (%s, %s)",
                (embedded_pg.APP_ROLE, embedded_pg.SERVICE_ROLE),
            ).fetchall()
        }
    #                             super  bypass createrole createdb inherit  owner  service authenticated
    assert rows[embedded_pg.APP_ROLE] == [False, False, False, False, False, False, False, True]
    assert rows[embedded_pg.SERVICE_ROLE] == [False, False, False, False, False, False, True, False]
    with psycopg.connect(db.app_url()) as conn:
        for statement in (
            "set role postgres",
            "set role service_role",
            "set session authorization postgres",
            "alter role memory_playground_app superuser",
            "alter role memory_playground_app bypassrls",
            "grant service_role to memory_playground_app",
            "select * from auth.claims_keys",
            "select * from auth.users",
            "create table public.planted (id int)",
            "copy (select 1) to program 'id'",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
            conn.rollback()


@pytest.mark.parametrize("escape", ["reset role", "set role memory_playground_app", "set local role none"])
def test_leaving_the_user_role_inside_a_user_transaction_reaches_nothing(two_users, escape):
    a, _ = two_users
    with pytest.raises(psycopg.Error) as info, db.transaction(a) as cur:
        cur.execute(escape)
        cur.execute("select content from public.memories")
    assert isinstance(info.value, psycopg.errors.InsufficientPrivilege | psycopg.errors.InvalidParameterValue)


def test_set_role_service_role_inside_a_user_transaction_is_refused(two_users):
    a, _ = two_users
    for escape in ("set local role service_role", "set role postgres"):
        with (
            pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied to set role"),
            db.transaction(a) as cur,
        ):
            cur.execute(escape)


def test_swapping_in_another_users_claims_is_refused(two_users):
    a, b = two_users
    key = db.claims_key()
    raw_b, mac_b = db.signed_claims(b.claims, key)
    _, mac_a = db.signed_claims(a.claims, key)
    attempts = [
        ("select set_config('request.jwt.claims', %s, true)", (raw_b,)),  # B's claims, A's signature
        (
            "select set_config('request.jwt.claims', %s, true), set_config('request.jwt.claims_mac', %s, true)",
            (raw_b, "0" * 64),
        ),  # a made-up signature
        (
            "select set_config('request.jwt.claims', %s, true), set_config('request.jwt.claims_mac', %s, true)",
            (raw_b, mac_a),
        ),  # A's signature on B's claims
        (
            "select set_config('request.jwt.claims', %s, true), set_config('request.jwt.claims_mac', '', true)",
            (raw_b,),
        ),  # no signature at all
        ("select set_config('request.jwt.claims', %s, false)", (raw_b.replace(" ", ""),)),  # session-wide
    ]
    for statement, params in attempts:
        with (
            pytest.raises(psycopg.errors.InsufficientPrivilege, match="not signed by the app"),
            db.transaction(a) as cur,
        ):
            cur.execute(statement, params)
            cur.execute("select content from public.memories")
    # the genuine pairing works (the refusals above are about the signature, not the query)
    with db.transaction(b) as cur:
        cur.execute("select content from public.memories")
        assert [row["content"] for row in cur.fetchall()] == [SECRET]
    assert raw_b and mac_b


def test_the_app_role_reads_no_other_users_rows_by_any_path(two_users):
    """All of the above in one tally, as the security probe counts it."""
    a, b = two_users
    leaked = 0
    probes = [
        "reset role",
        "set local role service_role",
        "set local role postgres",
        f'select set_config(\'request.jwt.claims\', \'{{"sub": "{b.user_id}", "role": "authenticated"}}\', true)',
        "set local role anon",
    ]
    for probe in probes:
        try:
            with db.transaction(a) as cur:
                cur.execute(probe)
                cur.execute("select content from public.memories where user_id = %s", (b.user_id,))
                leaked += len(cur.fetchall())
        except psycopg.Error:
            pass
    assert leaked == 0
