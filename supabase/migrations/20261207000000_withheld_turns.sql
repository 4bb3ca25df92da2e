-- A turn may be stored with its words withheld.
--
-- The agent never keeps a password, PIN, card or id number ("I'd rather not
-- keep passwords, PINs, card or ID numbers, so I haven't saved that."), yet
-- the message that held one went into the conversation tier word for word: a
-- later "what is my password hint?" found it there and read it back. Such a
-- turn is now stored withheld (agent/turn_log.py decides, by
-- agent/sensitive.py, for every way of talking to the agent): its content is a
-- fixed marker (core.conversations.WITHHELD_TEXT), so the session's
-- transcript keeps its place and says why it is empty, and it is never found
-- by a search:
--
--   * no words: its full-text column is empty, so the text branch never
--     matches it (the marker's own words, "password", "secret", would match
--     every question about one) and the word statistics leave it out;
--   * no embedding: the vector branch reads only embedded turns, and nothing
--     embeds a withheld turn later (core.conversations.embed_pending skips it;
--     the check below refuses one).
--
-- The full-text column is generated, so it is made again with the new
-- expression (and its index with it); existing turns are not withheld and
-- keep the same words.

alter table public.conversation_turns
  add column withheld boolean not null default false;

drop index public.conversation_turns_owner_fts_idx;
alter table public.conversation_turns drop column fts;
alter table public.conversation_turns
  add column fts tsvector generated always as (
    case when withheld then ''::tsvector
         else to_tsvector('english'::regconfig, speaker || ' ' || content) end
  ) stored;
create index conversation_turns_owner_fts_idx on public.conversation_turns
  using gin ((fts || array_to_tsvector(array['owner ' || user_id::text])));

alter table public.conversation_turns
  add constraint conversation_turns_withheld_not_embedded check (not withheld or embedding is null);

-- A turn is a record of what was said: its text, owner and whether its words were withheld never change
-- (the embedding may be filled in later).
create or replace function public.conversation_turns_keep_text() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if new.content is distinct from old.content or new.speaker is distinct from old.speaker
     or new.user_id is distinct from old.user_id or new.session_id is distinct from old.session_id
     or new.turn_index is distinct from old.turn_index or new.withheld is distinct from old.withheld then
    raise exception 'conversation turns are immutable; only their embedding can be set'
      using errcode = 'check_violation';
  end if;
  return new;
end;
$$;
