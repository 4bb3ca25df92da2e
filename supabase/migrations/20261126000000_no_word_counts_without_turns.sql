-- "Delete everything about me" leaves no row about the user: when a user's last
-- conversation turn is deleted, their per-user word totals row goes too (before,
-- it stayed with turn_count 0). A user with no turns has no totals row, the same
-- as one who never had any; the next stored turn creates it again.

create or replace function public.conversation_lexicon_remove() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  with gone as (
    select o.user_id, lexeme, count(*) as turns
    from old_turns o, unnest(tsvector_to_array(o.fts)) as lexeme
    group by o.user_id, lexeme
  )
  update public.conversation_lexemes l
     set turn_count = greatest(l.turn_count - gone.turns, 0)
    from gone
   where l.user_id = gone.user_id and l.lexeme = gone.lexeme;

  delete from public.conversation_lexemes l
   where l.turn_count = 0
     and l.user_id in (select distinct o.user_id from old_turns o);

  with gone as (
    select o.user_id, count(*) as turns
    from old_turns o
    group by o.user_id
  )
  update public.conversation_lexicon_totals t
     set turn_count = greatest(t.turn_count - gone.turns, 0)
    from gone
   where t.user_id = gone.user_id;

  delete from public.conversation_lexicon_totals t
   where t.turn_count = 0
     and t.user_id in (select distinct o.user_id from old_turns o);
  return null;
end;
$$;

revoke all on function public.conversation_lexicon_remove() from public, anon, authenticated;
