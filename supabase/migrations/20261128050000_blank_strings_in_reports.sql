-- Deleting many memories at once no longer stalls on the session reports.
--
-- 20261128010000 blanked every report string matching any of the deleted texts' patterns. Postgres keeps
-- 32 compiled regular expressions per connection, so with more texts (Delete all memories, 1,000 of them)
-- every string recompiled every pattern: a heavy visitor's Delete all never finished and held the report
-- lock meanwhile. Now core.sessions finds the strings that say a deleted text (by its words first, then its
-- pattern, in Python over the reports the user may read) and these functions blank exactly those strings,
-- one pass over each report, looked up in a jsonb object (a binary search, not a regular expression).

-- Every string of `doc` that is a key of `strings` becomes '[deleted]'; keys and other values stay.
create or replace function memory_playground_private.blank_strings(doc jsonb, strings jsonb)
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
      if strings ? (doc #>> '{}') then
        return to_jsonb('[deleted]'::text);
      end if;
      return doc;
    when 'object' then
      select coalesce(jsonb_object_agg(e.key, memory_playground_private.blank_strings(e.value, strings)), '{}'::jsonb)
        into result
        from jsonb_each(doc) as e;
      return result;
    when 'array' then
      select coalesce(jsonb_agg(memory_playground_private.blank_strings(e.value, strings) order by e.n), '[]'::jsonb)
        into result
        from jsonb_array_elements(doc) with ordinality as e(value, n);
      return result;
    else
      return doc;
  end case;
end;
$$;

-- As the user (the Memories page): users may not update reports, so this runs as its owner, on auth.uid()'s
-- reports among `session_ids` only, and can only blank strings (never write text into a report).
create or replace function public.blank_strings_in_session_reports(session_ids text[], strings text[])
returns int
language plpgsql
security definer
set search_path = ''
as $$
declare
  changed int;
  lookup jsonb := (select coalesce(jsonb_object_agg(s, true), '{}'::jsonb) from unnest(strings) as s);
begin
  update public.sessions s
     set report = r.report
    from (
      select x.session_id, memory_playground_private.blank_strings(x.report, lookup) as report
        from public.sessions x
       where x.user_id = (select auth.uid()) and x.session_id = any (session_ids) and x.report is not null
    ) r
   where s.session_id = r.session_id and s.user_id = (select auth.uid()) and s.report is distinct from r.report;
  get diagnostics changed = row_count;
  return changed;
end;
$$;

revoke all on function memory_playground_private.blank_strings(jsonb, jsonb) from public;
grant execute on function memory_playground_private.blank_strings(jsonb, jsonb) to service_role;
revoke execute on function public.blank_strings_in_session_reports(text[], text[]) from public, anon;
grant execute on function public.blank_strings_in_session_reports(text[], text[]) to authenticated;
