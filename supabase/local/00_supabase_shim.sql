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
-- A family is one sign-in and every token rotated from it: replaying a used token ends
-- that family only. session_started_at bounds the family's absolute lifetime; rotated_at
-- (set when a token is exchanged for its successor) dates the reuse interval.
alter table auth.refresh_tokens add column if not exists family_id uuid not null default gen_random_uuid();
alter table auth.refresh_tokens add column if not exists session_started_at timestamptz not null default now();
alter table auth.refresh_tokens add column if not exists rotated_at timestamptz;
alter table auth.refresh_tokens add column if not exists revoked_reason text;
create index if not exists refresh_tokens_family_id_idx on auth.refresh_tokens (family_id);

-- The claim readers Supabase's RLS policies call. PostgREST (and core/db) put
-- the verified JWT claims in request.jwt.claims for the transaction.
--
-- Unlike PostgREST's GUC, which anyone who can run SQL may set, the claims here must
-- carry request.jwt.claims_mac, an HMAC-SHA256 of the exact claims text under a key only
-- the app (DATA_DIR/pg_claims_key) and the database owner know. SQL smuggled into a
-- user's query therefore cannot swap in another user's claims. Without a key row (a
-- scratch database) the claims are taken as they are, as Supabase does.
create table if not exists auth.claims_keys (
  id        int primary key check (id = 1),
  inner_pad bytea not null,  -- the key XOR 0x36 (RFC 2104), so sha256() alone computes the HMAC
  outer_pad bytea not null   -- the key XOR 0x5c
);
revoke all on auth.claims_keys from public;

create or replace function auth.jwt() returns jsonb
language plpgsql stable
security definer
set search_path = ''
as $$
declare
  raw  text := nullif(current_setting('request.jwt.claims', true), '');
  pads record;
begin
  if raw is null then
    return '{}'::jsonb;
  end if;
  select inner_pad, outer_pad into pads from auth.claims_keys where id = 1;
  if found and coalesce(current_setting('request.jwt.claims_mac', true), '') <>
      encode(sha256(pads.outer_pad || sha256(pads.inner_pad || convert_to(raw, 'UTF8'))), 'hex') then
    raise exception 'request.jwt.claims are not signed by the app'
      using errcode = 'insufficient_privilege';
  end if;
  return raw::jsonb;
end
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
