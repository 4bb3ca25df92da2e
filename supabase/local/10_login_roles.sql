-- The embedded database's login roles (core/embedded_pg.py sets their passwords from
-- DATA_DIR). Neither is a superuser, neither inherits privileges: each can only switch,
-- per transaction, to the roles it needs. Idempotent, and safe to run before the rest of
-- the schema exists (each grant waits for its object).
--   memory_playground_app      user scopes: `set local role authenticated` (and anon)
--   memory_playground_service  the service scope (`service_role`), sign-in and the
--                              local auth tables
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'memory_playground_app') then
    create role memory_playground_app login noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'memory_playground_service') then
    create role memory_playground_service login noinherit;
  end if;
end
$$;

alter role memory_playground_app nosuperuser nocreatedb nocreaterole noreplication nobypassrls noinherit;
alter role memory_playground_service nosuperuser nocreatedb nocreaterole noreplication nobypassrls noinherit;

do $$
begin
  if exists (select 1 from pg_roles where rolname = 'authenticated') then
    grant anon, authenticated to memory_playground_app with inherit false, set true;
  end if;
  if exists (select 1 from pg_roles where rolname = 'service_role') then
    grant service_role to memory_playground_service with inherit false, set true;
  end if;
  if to_regclass('auth.users') is not null then
    grant usage on schema auth to memory_playground_service;
    grant select, insert, update, delete on auth.users to memory_playground_service;
  end if;
  if to_regclass('auth.refresh_tokens') is not null then
    grant select, insert, update, delete on auth.refresh_tokens to memory_playground_service;
  end if;
  if to_regclass('supabase_migrations.schema_migrations') is not null then
    grant usage on schema supabase_migrations to memory_playground_service;
    grant select on supabase_migrations.schema_migrations to memory_playground_service;
  end if;
end
$$;
