-- Tell every process that listens when a user's memories or name change.
--
-- A voice call recognises speech with the user's remembered words
-- (core.vocabulary). Inside one process core.memory_changes tells the call
-- directly; a LiveKit worker is another process, so the database tells it:
-- each change to a user's memories, or to their profile name, sends a
-- notification on the channel memory_changes whose payload is the user id and
-- nothing else. Postgres delivers notifications only when the transaction
-- commits (a rolled-back change sends none) and folds identical ones of one
-- transaction, so "delete everything" sends one per user.

create or replace function public.notify_memory_change() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'DELETE' then
    perform pg_notify('memory_changes', old.user_id::text);
  else
    perform pg_notify('memory_changes', new.user_id::text);
  end if;
  return null;
end;
$$;

create trigger memories_notify_change
  after insert or update or delete on public.memories
  for each row execute function public.notify_memory_change();

create or replace function public.notify_profile_name_change() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform pg_notify('memory_changes', new.id::text);
  return null;
end;
$$;

create trigger profiles_notify_name_change
  after update of name on public.profiles
  for each row
  when (old.name is distinct from new.name)
  execute function public.notify_profile_name_change();
