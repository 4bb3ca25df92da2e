-- A deleted session stays deleted.
--
-- A conversation or call can still be running a session when its owner deletes
-- it: in a LiveKit worker (another process the app cannot reach), or in an app
-- process whose tab is gone. When it ends, it saves its report and its last
-- turns, and those writes used to create the session again. So deleting a
-- session (one, all of them, or "delete everything") remembers its id, and
-- inserting a session or a turn under a remembered id does nothing. The ids are
-- kept 30 days (core.maintenance prunes them), longer than a call can last or a
-- report waits on disk for a database outage to end.

create table memory_playground_private.deleted_sessions (
  session_id text primary key,
  user_id    uuid not null,  -- no foreign key: a user's deletion deletes their sessions, and this must not stop it
  deleted_at timestamptz not null default now()
);

create index deleted_sessions_deleted_at_idx on memory_playground_private.deleted_sessions (deleted_at);

alter table memory_playground_private.deleted_sessions enable row level security;
-- No policies: users never reach this table; the triggers below write it, the service reads it.

revoke all on memory_playground_private.deleted_sessions from anon, authenticated;
grant select on memory_playground_private.deleted_sessions to service_role;

-- Runs as its owner: a user deleting their own session (RLS) cannot write the private table themselves.
create or replace function memory_playground_private.remember_deleted_session() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  -- a user being deleted takes their sessions along: nothing of theirs can come back, nothing to remember
  if exists (select 1 from auth.users u where u.id = old.user_id) then
    insert into memory_playground_private.deleted_sessions (session_id, user_id)
    values (old.session_id, old.user_id)
    on conflict (session_id) do update set deleted_at = now();
  end if;
  return null;
end;
$$;

create trigger sessions_remember_deleted
  after delete on public.sessions
  for each row execute function memory_playground_private.remember_deleted_session();

-- A late report or turn of a deleted session is skipped (the row is not inserted), not an error.
create or replace function memory_playground_private.skip_deleted_session() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  if exists (
    select 1 from memory_playground_private.deleted_sessions d
    where d.session_id = new.session_id and d.user_id = new.user_id
  ) then
    return null;
  end if;
  return new;
end;
$$;

create trigger sessions_stay_deleted
  before insert on public.sessions
  for each row execute function memory_playground_private.skip_deleted_session();

create trigger conversation_turns_stay_deleted
  before insert on public.conversation_turns
  for each row execute function memory_playground_private.skip_deleted_session();

revoke all on function memory_playground_private.remember_deleted_session() from public;
revoke all on function memory_playground_private.skip_deleted_session() from public;
