-- Gives the embedded Postgres what every Supabase project already has, so the
-- files in supabase/migrations run unchanged on both. Applied only to the
-- embedded database, before the migrations. Idempotent: safe to run again.

-- Roles PostgREST switches between. service_role bypasses RLS, as on Supabase.
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'anon') then
    create role anon nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'authenticated') then
    create role authenticated nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'service_role') then
    create role service_role nologin noinherit bypassrls;
  end if;
end
$$;

create schema if not exists extensions;
create schema if not exists auth;

grant usage on schema public, extensions to anon, authenticated, service_role;
grant usage on schema auth to anon, authenticated, service_role;

-- Supabase resolves extension types and operators through this search_path.
do $$
begin
  execute format('alter database %I set search_path = "$user", public, extensions', current_database());
end
$$;

-- A subset of Supabase Auth's users table: the columns this project reads or writes.
create table if not exists auth.users (
  id                 uuid primary key default gen_random_uuid(),
  aud                text not null default 'authenticated',
  role               text not null default 'authenticated',
  email              text unique,
  encrypted_password text,
  is_anonymous       boolean not null default false,
  raw_app_meta_data  jsonb not null default '{}'::jsonb,
  raw_user_meta_data jsonb not null default '{}'::jsonb,
  email_confirmed_at timestamptz,
  last_sign_in_at    timestamptz,
  created_at         timestamptz not null default now(),
  updated_at         timestamptz not null default now()
);

-- Refresh tokens are stored as SHA-256 hashes, never in the clear.
create table if not exists auth.refresh_tokens (
  id          bigint generated always as identity primary key,
  token_hash  text not null unique,
  user_id     uuid not null references auth.users (id) on delete cascade,
  parent_hash text,
  revoked     boolean not null default false,
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now()
);
create index if not exists refresh_tokens_user_id_idx on auth.refresh_tokens (user_id);

-- The claim readers Supabase's RLS policies call. PostgREST (and core/db) put
-- the verified JWT claims in request.jwt.claims for the transaction.
create or replace function auth.jwt() returns jsonb
language sql stable
as $$
  select coalesce(nullif(current_setting('request.jwt.claims', true), ''), '{}')::jsonb
$$;

create or replace function auth.uid() returns uuid
language sql stable
as $$
  select nullif(auth.jwt() ->> 'sub', '')::uuid
$$;

create or replace function auth.role() returns text
language sql stable
as $$
  select nullif(auth.jwt() ->> 'role', '')::text
$$;

grant execute on function auth.jwt(), auth.uid(), auth.role() to anon, authenticated, service_role;
grant select on auth.users to service_role;
