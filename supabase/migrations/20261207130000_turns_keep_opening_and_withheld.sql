-- A turn's record keeps both of today's flags.
--
-- 20261207000000_withheld_turns.sql and 20261207120000_openings_not_searched.sql were written side by side,
-- and each replaced the trigger that keeps a stored turn as it was said with its own flag added: the later
-- one left `withheld` out, so a withheld turn could have been un-withheld by an update. Both again: a turn's
-- text, owner, place, and whether it was an opening or withheld never change (the embedding may be filled in
-- later, and never for either: their check constraints).

create or replace function public.conversation_turns_keep_text() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if new.content is distinct from old.content or new.speaker is distinct from old.speaker
     or new.user_id is distinct from old.user_id or new.session_id is distinct from old.session_id
     or new.turn_index is distinct from old.turn_index or new.opening is distinct from old.opening
     or new.withheld is distinct from old.withheld then
    raise exception 'conversation turns are immutable; only their embedding can be set'
      using errcode = 'check_violation';
  end if;
  return new;
end;
$$;
