-- A memory keeps the values it held before, so that deleting it deletes their mentions too.
--
-- Deleting a memory deletes the past turns that say its text and blanks that text in the session reports
-- (20261125140000, 20261128010000). Its text was only the current one: "teal" edited to "dark teal" on the
-- Memories page, or "I live in Lisbon" followed by "I moved to Porto", and then deleted, took the mentions
-- of "dark teal" or "Porto" and left "my favorite color is teal" and "I live in Lisbon" in the transcripts,
-- where the agent still found them, although the page had said "The agent will no longer know this".
--
-- Now every change of a memory's text keeps the text it replaces in `earlier_contents` (oldest first, each
-- once, never the current text), set here and only here: a client's own value is ignored, so the list holds
-- what the memory really held. core.memories deletes the mentions of the text and of every earlier one.
-- The list goes with the row; the Memories page shows it and the export includes it. At most the 100 latest
-- are kept (a slot rewritten more often than that loses the mentions of its oldest values to a deletion).

alter table public.memories
  add column earlier_contents text[] not null default '{}';

create or replace function public.memories_keep_earlier_contents() returns trigger
language plpgsql
set search_path = ''
as $$
declare
  kept text[];
begin
  if tg_op = 'INSERT' then
    new.earlier_contents := '{}';
    return new;
  end if;
  kept := old.earlier_contents;
  if new.content is distinct from old.content then
    kept := array_remove(array_remove(kept, old.content) || old.content, new.content);
    if cardinality(kept) > 100 then
      kept := kept[cardinality(kept) - 99:];
    end if;
  end if;
  new.earlier_contents := kept;
  return new;
end;
$$;

create trigger memories_keep_earlier_contents
  before insert or update on public.memories
  for each row execute function public.memories_keep_earlier_contents();
