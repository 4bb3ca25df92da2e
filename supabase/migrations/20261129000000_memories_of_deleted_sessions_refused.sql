-- A deleted session writes no more memories.
--
-- An answer still running a session its owner deletes (a slow model, a call in
-- a LiveKit worker), or the fact extraction when that conversation ends, used
-- to write memories under the deleted session's id: what the visitor had just
-- deleted came back as a memory. Deleted sessions' ids are kept for 30 days
-- (20261127000000_deleted_sessions_stay_deleted.sql); a memory written under
-- one of them is now skipped like a late turn or report (core.memories.remember
-- says SessionDeleted). A memory the session wrote before it was deleted stays
-- (it belongs to the visitor, not to the session), and editing it is allowed:
-- only a write that names a deleted session is skipped.

-- The function that skips late turns and reports (20261127000000) does it: a memory without a session
-- (session_id null) matches no deleted session and is written.

-- Before insert: an upsert (core.memories.remember) is skipped whole, so an existing slot keeps its text.
create trigger memories_of_deleted_sessions_skipped
  before insert on public.memories
  for each row execute function memory_playground_private.skip_deleted_session();

-- An update that moves a memory to a deleted session; editing the text of one it already names is not.
create trigger memories_moved_to_deleted_sessions_skipped
  before update of session_id on public.memories
  for each row when (new.session_id is distinct from old.session_id)
  execute function memory_playground_private.skip_deleted_session();

