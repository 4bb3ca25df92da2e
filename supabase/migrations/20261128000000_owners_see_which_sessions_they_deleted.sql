-- Owners may ask which of their sessions they deleted.
--
-- A memory keeps the id of the session that wrote it, and deleting the session
-- leaves the memory (it is not part of the session). The Memories page linked
-- it all the same ("written in session text-…", "Open that session", counted in
-- "From sessions"), and the link opened another session. The ids of deleted
-- sessions are kept for 30 days in a private table users cannot read
-- (20261127000000_deleted_sessions_stay_deleted.sql); this function answers,
-- for the signed-in user only, which of the given ids are among theirs.

create or replace function public.deleted_session_ids(p_session_ids text[])
returns setof text
language sql
stable
security definer
set search_path = ''
as $$
  select d.session_id
  from memory_playground_private.deleted_sessions d
  where d.user_id = (select auth.uid()) and d.session_id = any (p_session_ids)
$$;

revoke execute on function public.deleted_session_ids(text[]) from public, anon;
grant execute on function public.deleted_session_ids(text[]) to authenticated;
