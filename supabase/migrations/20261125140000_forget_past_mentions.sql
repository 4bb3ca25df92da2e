-- Forgetting a memory also removes the past conversation turns that say it.
--
-- Without this, a fact deleted on the Memories page (or forgotten by voice)
-- came straight back from the conversation tier: "I don't have that saved as
-- a memory, but in our earlier conversations you said ...". core.memories
-- deletes the forgotten text's mentions in the same transaction, as the user
-- (Memories page, under RLS) or as the service scoped to the verified user
-- (the agent's forget tool). Owners may therefore delete their own turns;
-- they still cannot insert or change any. The lexicon statistics follow by
-- the existing statement trigger (security definer).

create policy "Users can delete their own conversation turns"
  on public.conversation_turns for delete to authenticated
  using ((select auth.uid()) = user_id);

grant delete on public.conversation_turns to authenticated;
