"""The migration runner: idempotent, recorded, visible through `status` and the CLI.

Most cases run against a scratch database created inside the test server, so
a fresh schema can be migrated, re-migrated and reset without touching the
shared, seeded test database.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from core import db
from core.config import MIGRATIONS_DIR, PROJECT_ROOT, get_settings
from core.errors import InvalidInput

SCHEMAS = ("public", "auth", "supabase_migrations", "extensions")

# One query per part of the catalog a migration can touch. Two dumps are equal
# only if policies, functions (with their bodies and grants), columns, indexes,
# triggers, constraints, privileges, roles and recorded migrations all are.
CATALOG_QUERIES = {
    "policies": """
        select schemaname, tablename, policyname, permissive, roles::text, cmd, qual, with_check
        from pg_policies where schemaname = any(%(schemas)s) order by 1, 2, 3""",
    "functions": """
        select n.nspname, p.proname, pg_get_function_identity_arguments(p.oid), pg_get_functiondef(p.oid),
               p.proacl::text, p.prosecdef
        from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname in ('public', 'auth') order by 1, 2, 3""",
    "columns": """
        select table_schema, table_name, column_name, ordinal_position, data_type, udt_name,
               column_default, is_nullable, is_generated, generation_expression
        from information_schema.columns where table_schema = any(%(schemas)s) order by 1, 2, 4""",
    "indexes": """
        select schemaname, tablename, indexname, indexdef
        from pg_indexes where schemaname = any(%(schemas)s) order by 1, 2, 3""",
    "triggers": """
        select tgrelid::regclass::text, tgname, pg_get_triggerdef(oid)
        from pg_trigger where not tgisinternal order by 1, 2""",
    "constraints": """
        select conrelid::regclass::text, conname, pg_get_constraintdef(c.oid)
        from pg_constraint c join pg_namespace n on n.oid = c.connamespace
        where n.nspname = any(%(schemas)s) order by 1, 2""",
    "tables": """
        select c.oid::regclass::text, c.relkind, c.relrowsecurity, c.relforcerowsecurity, c.relacl::text
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = any(%(schemas)s) and c.relkind in ('r', 'p', 'v', 'S') order by 1""",
    "column_privileges": """
        select grantee, table_schema, table_name, column_name, privilege_type
        from information_schema.column_privileges where table_schema = any(%(schemas)s)
        order by 1, 2, 3, 4, 5""",
    "schemas": "select nspname, nspacl::text from pg_namespace where nspname = any(%(schemas)s) order by 1",
    "roles": """
        select rolname, rolcanlogin, rolinherit, rolbypassrls
        from pg_roles where rolname in ('anon', 'authenticated', 'service_role') order by 1""",
    "extensions": """
        select e.extname, e.extversion, n.nspname from pg_extension e
        join pg_namespace n on n.oid = e.extnamespace order by 1""",
    "database_settings": """
        select setconfig::text from pg_db_role_setting
        where setdatabase = (select oid from pg_database where datname = current_database())""",
    "migrations": "select version, name, statements from supabase_migrations.schema_migrations order by 1",
}

DATA_COUNTS = """
    select (select count(*) from auth.users) as users,
           (select count(*) from auth.refresh_tokens) as refresh_tokens,
           (select count(*) from public.profiles) as profiles,
           (select count(*) from public.knowledge) as knowledge,
           (select count(*) from public.memories) as memories,
           (select count(*) from public.orders) as orders,
           (select count(*) from public.sessions) as sessions
"""


def catalog_dump(conninfo: str) -> dict[str, list[tuple]]:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return {name: conn.execute(sql, {"schemas": list(SCHEMAS)}).fetchall() for name, sql in CATALOG_QUERIES.items()}


def data_counts(conninfo: str) -> tuple:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return conn.execute(DATA_COUNTS).fetchone()


def expected_versions() -> list[str]:
    return [path.name.partition("_")[0] for path in sorted(MIGRATIONS_DIR.glob("*.sql"))]


@pytest.fixture
def scratch_db(database_uri):
    """An empty database in the test server; dropped afterwards."""
    name = f"mp_scratch_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(database_uri, autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    yield make_conninfo(database_uri, dbname=name)
    with psycopg.connect(database_uri, autocommit=True) as conn:
        conn.execute(f'drop database if exists "{name}" with (force)')


# ---------------------------------------------------------------------------
# The shared, seeded test database
# ---------------------------------------------------------------------------


def test_second_migrate_on_seeded_database_changes_nothing(database_uri):
    before_catalog = catalog_dump(database_uri)
    before_counts = data_counts(database_uri)
    messages: list[str] = []

    applied = db.migrate(echo=messages.append)

    assert applied == []
    assert messages == []  # neither "applying ..." nor a changed-file warning
    after_catalog = catalog_dump(database_uri)
    for part in CATALOG_QUERIES:
        assert after_catalog[part] == before_catalog[part], f"{part} changed on the second migrate"
    assert data_counts(database_uri) == before_counts
    # the dump really covers the schema (an empty dump would compare equal too)
    assert {row[2] for row in before_catalog["policies"]} >= {
        "Users can read their own memories",
        "Users can read their own sessions",
        "Signed-in users can read orders",
    }
    assert {row[1] for row in before_catalog["functions"]} >= {
        "match_memories_hybrid",
        "match_knowledge",
        "handle_new_user",
        "uid",
        "jwt",
        "role",
    }


def test_status_lists_every_migration_as_applied(database_uri):
    rows = db.status()
    assert [row["version"] for row in rows] == expected_versions()
    assert rows and all(row["applied"] for row in rows)
    assert rows[0]["name"] == "memory_playground"
    assert db.ping()["applied_migrations"] == len(rows)


def _cli(*args: str, env_overrides: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["DATA_DIR"] = str(get_settings().data_dir)
    env.update(env_overrides or {})
    return subprocess.run(
        [sys.executable, "-m", "core", *args], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_cli_status_attaches_to_the_running_server(database_uri):
    result = _cli("status")

    assert result.returncode == 0, result.stderr
    assert f"embedded at {get_settings().data_dir / 'pg'}" in result.stdout
    for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
        version, _, name = path.stem.partition("_")
        assert f"[x] {version}  {name}" in result.stdout
    # the CLI process attached to this server and left it running when it exited
    assert db.ping(database_uri)["ok"] is True
    assert db.status(database_uri)[0]["applied"] is True


def test_cli_migrate_and_uri_on_an_up_to_date_database(database_uri):
    before = catalog_dump(database_uri)
    migrate_run = _cli("migrate")
    assert migrate_run.returncode == 0, migrate_run.stderr
    assert "database is up to date" in migrate_run.stdout
    assert catalog_dump(database_uri) == before

    uri_run = _cli("uri")
    assert uri_run.returncode == 0, uri_run.stderr
    printed = uri_run.stdout.strip()
    with psycopg.connect(printed, autocommit=True) as conn:  # the printed URI reaches the same database
        assert conn.execute("select count(*) from supabase_migrations.schema_migrations").fetchone()[0] == len(
            expected_versions()
        )
    assert db.ping(database_uri)["ok"] is True


def test_cli_reports_an_unreachable_database_clearly(database_uri):
    result = _cli("status", env_overrides={"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"})
    assert result.returncode == 1
    assert result.stderr.startswith("error: The database is not reachable")
    assert "Traceback" not in result.stderr


# ---------------------------------------------------------------------------
# A scratch database: fresh, twice, concurrently, after a reset
# ---------------------------------------------------------------------------


def test_fresh_database_migrates_once_then_never_again(scratch_db):
    assert [row["applied"] for row in db.status(scratch_db)] == [False] * len(expected_versions())
    messages: list[str] = []

    first = db.migrate(scratch_db, embedded=True, echo=messages.append)
    assert first == expected_versions()
    assert messages == [f"applying {path.name}" for path in sorted(MIGRATIONS_DIR.glob("*.sql"))]
    after_first = catalog_dump(scratch_db)

    messages.clear()
    second = db.migrate(scratch_db, embedded=True, echo=messages.append)
    assert second == [] and messages == []
    assert catalog_dump(scratch_db) == after_first
    assert all(row["applied"] for row in db.status(scratch_db))
    # the recorded statements are the file's text, as the Supabase CLI records them
    recorded = after_first["migrations"]
    assert [row[0] for row in recorded] == expected_versions()
    assert recorded[0][2] == [sorted(MIGRATIONS_DIR.glob("*.sql"))[0].read_text(encoding="utf-8")]


def test_scratch_schema_matches_the_test_database(database_uri, scratch_db):
    db.migrate(scratch_db, embedded=True, echo=lambda *_: None)
    fresh, seeded = catalog_dump(scratch_db), catalog_dump(database_uri)
    for part in ("policies", "functions", "columns", "indexes", "constraints", "column_privileges", "tables"):
        assert fresh[part] == seeded[part], part


def test_concurrent_migrate_runs_apply_each_migration_once(scratch_db):
    results: list[list[str]] = []
    errors: list[BaseException] = []

    def run():
        try:
            results.append(db.migrate(scratch_db, embedded=True, echo=lambda *_: None))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)

    assert errors == []
    assert sorted(results, key=len) == [[], [], expected_versions()]
    with psycopg.connect(scratch_db, autocommit=True) as conn:
        assert conn.execute("select count(*) from supabase_migrations.schema_migrations").fetchone()[0] == len(
            expected_versions()
        )


def test_edited_applied_migration_warns_and_is_not_reapplied(scratch_db):
    db.migrate(scratch_db, embedded=True, echo=lambda *_: None)
    with psycopg.connect(scratch_db, autocommit=True) as conn:
        conn.execute("update supabase_migrations.schema_migrations set statements = array['-- older text']")
    before = catalog_dump(scratch_db)
    messages: list[str] = []

    assert db.migrate(scratch_db, embedded=True, echo=messages.append) == []
    assert len(messages) == len(expected_versions())
    assert all("changed after it was applied" in message for message in messages)
    assert catalog_dump(scratch_db) == before


def test_reset_then_migrate_rebuilds_the_same_schema(scratch_db):
    db.migrate(scratch_db, embedded=True, echo=lambda *_: None)
    built = catalog_dump(scratch_db)
    with psycopg.connect(scratch_db, autocommit=True) as conn:
        conn.execute("insert into auth.users (is_anonymous) values (true)")

    db.reset(scratch_db)
    assert [row["applied"] for row in db.status(scratch_db)] == [False] * len(expected_versions())
    assert db.migrate(scratch_db, embedded=True, echo=lambda *_: None) == expected_versions()

    assert catalog_dump(scratch_db) == built
    with psycopg.connect(scratch_db, autocommit=True) as conn:
        assert conn.execute("select count(*) from auth.users").fetchone()[0] == 0


def test_migration_file_names_must_start_with_a_version(tmp_path):
    (tmp_path / "20260101000000_ok.sql").write_text("select 1;")
    assert [m.version for m in db.migration_files(tmp_path)] == ["20260101000000"]
    (tmp_path / "add_things.sql").write_text("select 1;")
    with pytest.raises(InvalidInput, match="must start with a numeric version"):
        db.migration_files(tmp_path)


def test_a_stopped_embedded_server_is_restarted_after_the_failure_is_reported(database_uri, tmp_path):
    import pgserver

    from core.errors import DatabaseUnavailable

    uri = db.start_embedded(tmp_path / "pg", cleanup_mode="delete")
    db.migrate(uri, embedded=True, echo=lambda *_: None)  # the roles a scope switches to
    scope = db.Scope.service(uuid.uuid4())
    with db.transaction(scope, conninfo=uri) as cur:
        cur.execute("select 1 as one")
        assert cur.fetchone()["one"] == 1
    server = db._embedded_servers[(tmp_path / "pg").resolve()]
    pgserver.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user)

    # the first request to notice revives the server (once) and then goes on with its work
    with db.transaction(scope, conninfo=uri) as cur:
        cur.execute("select 2 as two")
        assert cur.fetchone()["two"] == 2
    # a server that cannot be started again is reported in one sentence
    pgserver.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user)
    (server.pgdata / "PG_VERSION").rename(server.pgdata / "PG_VERSION.moved")
    try:
        with pytest.raises(DatabaseUnavailable, match="not reachable"), db.transaction(scope, conninfo=uri) as cur:
            cur.execute("select 1")
    finally:
        (server.pgdata / "PG_VERSION.moved").rename(server.pgdata / "PG_VERSION")
    with db.transaction(scope, conninfo=uri) as cur:
        cur.execute("select 3 as three")
        assert cur.fetchone()["three"] == 3
