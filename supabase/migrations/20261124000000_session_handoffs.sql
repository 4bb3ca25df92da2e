-- Session hand-offs: the state several app processes share so that the tabs of one
-- browser (and a reload that races the cookie write) keep one identity while refresh
-- tokens rotate. When a refresh token is exchanged, the session that replaced it is
-- stored here sealed (AES-GCM) under a key derived from the replaced token itself:
-- only someone who held that token can open it, and the database alone holds nothing
-- usable. core/session_store.py reads and writes it; core.identity's cleanup prunes it.
--
-- A private schema: not exposed by the Data API, reachable by the service role only.

create schema if not exists memory_playground_private;
revoke all on schema memory_playground_private from public;
grant usage on schema memory_playground_private to service_role;

create table memory_playground_private.session_handoffs (
  token_hash           text primary key check (token_hash ~ '^[0-9a-f]{64}$'),  -- sha256 of a refresh token
  family               text not null check (char_length(family) between 1 and 64),  -- one browser's sessions
  user_id              uuid not null references auth.users (id) on delete cascade,
  created_at           timestamptz not null default now(),
  -- set once the token was exchanged: when, and the session it was exchanged for (sealed)
  superseded_at        timestamptz,
  successor_sealed     bytea check (octet_length(successor_sealed) <= 65536),
  successor_expires_at timestamptz,
  constraint session_handoffs_successor_complete check (
    (superseded_at is null) = (successor_sealed is null) and (successor_sealed is null) = (successor_expires_at is null))
);

create index session_handoffs_family_idx on memory_playground_private.session_handoffs (family);
create index session_handoffs_created_at_idx on memory_playground_private.session_handoffs (created_at);

alter table memory_playground_private.session_handoffs enable row level security;
-- No policies: users never reach this table; service_role bypasses RLS.

revoke all on memory_playground_private.session_handoffs from anon, authenticated;
grant select, insert, update, delete on memory_playground_private.session_handoffs to service_role;
