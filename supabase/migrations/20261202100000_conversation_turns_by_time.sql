-- The user's turns in order of time, for "what did we talk about yesterday?".
--
-- recall_conversations (core.conversations.conversations_within) lists the
-- conversations a user held on some days: which sessions have turns in
-- [since, before), when each started, how many turns and whether the user
-- spoke. Without an index on the time, the planner read every entry of the
-- user's covering index and then each turn's heap row for its speaker: for a
-- user with 50,000 turns a day took 26 ms and a month 50 ms (p50). This index
-- keeps each user's turns in time order with the two columns that question
-- needs, so a window is a range read of its own turns only: a day 2 ms, a
-- month 23 ms (`python -m bench.conversations_by_day`; docs/RETRIEVAL.md,
-- "Speed at scale"). It costs one entry of about 85 bytes per turn.

create index conversation_turns_user_time_idx
  on public.conversation_turns (user_id, created_at) include (session_id, speaker);
