-- A deleted memory's text leaves the session reports too.
--
-- Deleting a memory (Memories page, "forget" by voice or chat, delete all)
-- already deletes the conversation turns that say it (20261125140000). The
-- session reports kept it: "Memories written during this session", the
-- retrieval events' hits, the tool calls, the transcript. Now every string of
-- a report that contains the text as whole words (the same pattern as the
-- turns: core.conversations.mention_pattern) becomes a marker, in the same
-- transaction as the deletion. A report saved later (the session was still
-- running) is cleaned by core.sessions.save_report the same way.

-- Every string in `doc` matching one of `patterns` (any case) becomes `marker`; keys and other values stay.
create or replace function memory_playground_private.redact_mentions(doc jsonb, patterns text[], marker text)
returns jsonb
language plpgsql
immutable
set search_path = ''
as $$
declare
  result jsonb;
begin
  case jsonb_typeof(doc)
    when 'string' then
      if (doc #>> '{}') ~* any (patterns) then
        return to_jsonb(marker);
      end if;
      return doc;
    when 'object' then
      select coalesce(jsonb_object_agg(e.key, memory_playground_private.redact_mentions(e.value, patterns, marker)),
                      '{}'::jsonb)
        into result
        from jsonb_each(doc) as e;
      return result;
    when 'array' then
      select coalesce(jsonb_agg(memory_playground_private.redact_mentions(e.value, patterns, marker) order by e.n),
                      '[]'::jsonb)
        into result
        from jsonb_array_elements(doc) with ordinality as e(value, n);
      return result;
    else
      return doc;
  end case;
end;
$$;

-- As the user (the Memories page): users may not update reports, so this runs as its owner, on auth.uid()'s
-- reports only, and can only blank strings (the marker is fixed here: a user cannot write text into a
-- report). `words` (one `%word%` per text, a word of it that JSON never escapes) skips, cheaply, the
-- reports that cannot contain it. The service scope updates public.sessions itself.
create or replace function public.forget_in_session_reports(patterns text[], words text[])
returns int
language plpgsql
security definer
set search_path = ''
as $$
declare
  changed int;
begin
  update public.sessions s
     set report = r.report
    from (
      select x.session_id, memory_playground_private.redact_mentions(x.report, patterns, '[deleted]') as report
        from public.sessions x
       where x.user_id = (select auth.uid()) and x.report::text ilike any (words)
    ) r
   where s.session_id = r.session_id and s.user_id = (select auth.uid()) and s.report is distinct from r.report;
  get diagnostics changed = row_count;
  return changed;
end;
$$;

revoke all on function memory_playground_private.redact_mentions(jsonb, text[], text) from public;
grant execute on function memory_playground_private.redact_mentions(jsonb, text[], text) to service_role;
revoke execute on function public.forget_in_session_reports(text[], text[]) from public, anon;
grant execute on function public.forget_in_session_reports(text[], text[]) to authenticated;
