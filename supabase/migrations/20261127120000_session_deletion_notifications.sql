-- Tell every process that listens when a session is deleted, so that whatever still runs it ends.
--
-- A conversation or call can be running a session when its owner deletes it on
-- the Sessions page: in a LiveKit worker, or in another app process (several
-- behind a load balancer). The deletion itself is safe without them (the
-- session stays deleted: 20261127000000_deleted_sessions_stay_deleted.sql), but
-- the call would go on talking into a session that keeps nothing. Each deleted
-- session row sends a notification on the channel session_deletions whose
-- payload is {"user_id": ..., "session_id": ...}, and core.memory_changes'
-- database feed hands it to the process's runners, which end it. Sent on
-- commit only; "delete everything" and a deleted user send one per session.

create or replace function public.notify_session_deleted() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform pg_notify(
    'session_deletions',
    json_build_object('user_id', old.user_id, 'session_id', old.session_id)::text
  );
  return null;
end;
$$;

create trigger sessions_notify_deleted
  after delete on public.sessions
  for each row execute function public.notify_session_deleted();
