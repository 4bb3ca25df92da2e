-- A heavy user's vector branch reads an HNSW index of their own turns.
--
-- The vector branch ranks a user's turns by exact cosine distance, an
-- index-only walk of their entries in the covering index. That is cheap for
-- most users (a few hundred turns, about 2 ms) and grows with the user: for
-- 50,000 turns the walk alone took 18-40 ms at p50 on the shared 2-core VMs
-- this was measured on, most of the heavy user's 50 ms budget. One HNSW index
-- over every user cannot replace it: with the user filter, even with
-- iterative scans, it found 0.30-0.65 of the exact top 10. An HNSW index over
-- one user's turns alone has no filter to lose rows to: for that 50,000-turn
-- user it found 0.993 of the exact top 10 in 6 ms p50 (ef_search 1000; the
-- exact walk 18 ms in the same run). The whole hybrid search of that user went
-- from 30 / 41 ms to 16 / 24 ms (p50 / p95; `python -m bench.search_cost`), a
-- typical user's stayed at 1.5 / 2.6 ms. docs/RETRIEVAL.md, "Speed at scale".
--
-- So a user with many turns gets one: a partial index
--   conversation_turns_vectors_<user id without dashes>
--     on conversation_turns using hnsw (embedding) where user_id = '<user id>'
-- built and dropped by the maintenance job (core.vector_indexes, run by
-- `python -m core cleanup`), which builds it concurrently, outside any
-- request. The search uses it when it exists and is valid and the search is
-- not kept to a window of days (a window leaves few of the user's turns for
-- an unfiltered graph walk to find; the exact walk of the covering index
-- serves it as before); otherwise it ranks exactly, as before. Nothing else
-- in the search changes.

create function public.conversation_turns_vector_index_name(user_id uuid)
returns text
language sql immutable
as $$ select 'conversation_turns_vectors_' || replace(user_id::text, '-', '') $$;

-- The vector branch: a user's turns nearest to the query, at most `depth`, with their cosine distance.
-- plpgsql, because only a statement naming the user literally can use that user's partial index.
create function public.nearest_conversation_turns(
  match_user_id      uuid,
  query_half         extensions.halfvec(384),
  depth              int,
  exclude_session_id text default null,
  said_since         timestamptz default null,
  said_before        timestamptz default null
)
returns table (id bigint, distance float)
language plpgsql stable
-- what the search asks for by default (4 x 10): with the planner's default guess of 1,000 rows the rest of
-- the search was planned for far more candidates, and a typical user's search took twice as long
rows 40
security invoker
set search_path = public, extensions, pg_temp
-- the graph walk keeps the best 1,000 it meets: 0.99 of the exact top 10 at 50,000 turns
set hnsw.ef_search = 1000
-- named here so that the set_config below lasts only until the function returns
set enable_sort = on
as $$
begin
  if query_half is null or match_user_id is null then
    return;
  end if;
  if said_since is null and said_before is null and exists (
       select 1 from pg_catalog.pg_index i
       where i.indexrelid = to_regclass('public.' || public.conversation_turns_vector_index_name(match_user_id))
         and i.indisvalid and i.indisready) then
    -- Only the user's own index gives this order without a sort. Its row estimate for one user can be
    -- stale (a user who grew since the last analyze looks small, and sorting a few rows looks cheaper), so
    -- sorting is put last, for this statement only.
    perform set_config('enable_sort', 'off', true);
    return query execute format(
      'select t.id, (t.embedding <=> $1)::float from public.conversation_turns t '
      'where t.user_id = %L and ($2::text is null or t.session_id <> $2) '
      'order by t.embedding <=> $1 limit $3', match_user_id)
      using query_half, exclude_session_id, depth;
    return;
  end if;
  -- Exact. The user id as a subquery, so that the planner cannot match it to the user's partial index
  -- (given the id as a constant, it may walk that graph for a window of days and miss most of its turns).
  return query
    select t.id, (t.embedding <=> query_half)::float as distance
    from public.conversation_turns t
    where t.user_id = (select match_user_id)
      and t.embedding is not null
      and (exclude_session_id is null or t.session_id <> exclude_session_id)
      and (said_since is null or t.created_at >= said_since)
      and (said_before is null or t.created_at < said_before)
    order by 2, t.id
    limit depth;
end
$$;

grant execute on function public.conversation_turns_vector_index_name(uuid) to authenticated, service_role;
grant execute on function public.nearest_conversation_turns(
  uuid, extensions.halfvec, int, text, timestamptz, timestamptz) to authenticated, service_role;
revoke execute on function public.nearest_conversation_turns(
  uuid, extensions.halfvec, int, text, timestamptz, timestamptz) from anon, public;

-- The search as 20261202000000_past_turns_within_dates.sql made it, its vector branch through the function above.
create or replace function public.match_conversation_turns_hybrid(
  query_embedding    extensions.vector(384),
  query_text         text,
  match_user_id      uuid,
  match_count        int default 10,
  vector_weight      float default 0.5,
  text_weight        float default 0.5,
  rrf_k              int default 2,
  text_match         text default 'any',
  candidate_count    int default null,
  exclude_session_id text default null,
  said_since         timestamptz default null,
  said_before        timestamptz default null
)
returns table (
  id              bigint,
  session_id      text,
  turn_index      int,
  speaker         text,
  content         text,
  created_at      timestamptz,
  vector_rank     int,
  vector_distance float,
  text_rank       int,
  text_score      float,
  vector_rrf      float,
  text_rrf        float,
  rrf_score       float,
  text_weight_used float,
  context_rank    int,
  context_distance float,
  context_rrf     float
)
language sql stable
security invoker
set search_path = public, extensions, pg_temp
as $$
  with params as (
    select least(greatest(coalesce(candidate_count, least(greatest(match_count, 1), 200) * 4), 1), 1000)
             as candidates,
           -- the turn in context takes half of the vector weight, in a hybrid search only
           (vector_weight > 0 and text_weight > 0 and query_embedding is not null) as in_context
  ),
  -- Cast once (materialized: an inlined cast would run again for every turn).
  query_half as materialized (
    select query_embedding::extensions.halfvec(384) as v
  ),
  vector_hits as (
    select v.id, v.distance, (row_number() over (order by v.distance, v.id))::int as rnk
    from query_half qh,
         public.nearest_conversation_turns(match_user_id, qh.v, (select candidates from params),
                                           exclude_session_id, said_since, said_before) v
  ),
  totals as (
    select c.turn_count::float as n
    from public.conversation_lexicon_totals c
    where c.user_id = match_user_id
  ),
  owner_query as (
    select quote_literal('owner ' || match_user_id::text)::tsquery as q
  ),
  -- Words rarer than every entry of english_word_rarity count as its rarest.
  english_floor as (
    select max(e.rarity)::float as rarity from public.english_word_rarity e
  ),
  query_lexemes as (
    select distinct lexeme
    from unnest(tsvector_to_array(to_tsvector('english', coalesce(query_text, '')))) as lexeme
  ),
  weighted as (
    select l.lexeme, l.turn_count, tot.n,
           coalesce(e.rarity::float, ef.rarity)
             + ln(1.0 + (tot.n - l.turn_count + 0.5) / (l.turn_count + 0.5)) as idf
    from query_lexemes ql
    join public.conversation_lexemes l on l.user_id = match_user_id and l.lexeme = ql.lexeme
    cross join totals tot
    cross join english_floor ef
    left join public.english_word_rarity e on e.lexeme = ql.lexeme
    where text_match = 'any' and l.turn_count > 0
  ),
  -- The query's words this user never said, weighted as if said in no turn.
  unsaid as (
    select coalesce(e.rarity::float, ef.rarity) + ln(1.0 + (tot.n + 0.5) / 0.5) as idf
    from query_lexemes ql
    cross join totals tot
    cross join english_floor ef
    left join public.english_word_rarity e on e.lexeme = ql.lexeme
    where text_match = 'any'
      and not exists (select 1 from public.conversation_lexemes l
                      where l.user_id = match_user_id and l.lexeme = ql.lexeme and l.turn_count > 0)
  ),
  terms as (
    select r.lexeme, quote_literal(r.lexeme)::tsquery as q, r.idf
    from (
      select w.*, row_number() over (order by w.idf desc, w.lexeme) as heaviest
      from weighted w
    ) r
    where r.heaviest <= 8 and (r.turn_count <= 0.1 * r.n or r.heaviest = 1)
  ),
  any_query as (
    select (string_agg(quote_literal(terms.lexeme), ' | ')::tsquery) && (select q from owner_query) as q
    from terms
    having count(*) > 0
  ),
  any_hits as (
    select s.id, s.score, (row_number() over (order by s.score desc, s.id))::int as rnk
    from (
      -- each matching turn is read once and scored against the (at most 8) words; summed in one
      -- order, so that turns holding the same words score exactly alike and ties go by id
      select m.id,
             (select sum(terms.idf order by terms.lexeme) from terms where m.fts @@ terms.q)::float as score
      from public.conversation_turns m
      cross join any_query aq
      where m.user_id = match_user_id
        and (m.fts || array_to_tsvector(array['owner ' || m.user_id::text])) @@ aq.q
        and (exclude_session_id is null or m.session_id <> exclude_session_id)
        and (said_since is null or m.created_at >= said_since)
        and (said_before is null or m.created_at < said_before)
      order by score desc, m.id
      limit (select candidates from params)
    ) s
  ),
  all_hits as (
    select s.id, s.score, (row_number() over (order by s.score desc, s.id))::int as rnk
    from (
      select m.id, ts_rank_cd(m.fts, w.q)::float as score
      from public.conversation_turns m,
           (select websearch_to_tsquery('english', query_text) as q) w, owner_query o
      where text_match = 'all'
        and coalesce(btrim(query_text), '') <> ''
        and numnode(w.q) > 0
        and m.user_id = match_user_id
        and (m.fts || array_to_tsvector(array['owner ' || m.user_id::text])) @@ (w.q && o.q)
        and (exclude_session_id is null or m.session_id <> exclude_session_id)
        and (said_since is null or m.created_at >= said_since)
        and (said_before is null or m.created_at < said_before)
      order by score desc, m.id
      limit (select candidates from params)
    ) s
  ),
  text_hits as (
    select * from any_hits
    union all
    select * from all_hits
  ),
  -- How much of the query's weight the best text hit holds; full weight from half of it.
  text_share as (
    select case
             when text_match = 'any' and vector_weight > 0 and q.total > 0
               then least(1.0, coalesce((select max(a.score) from any_hits a), 0.0) / (0.5 * q.total))
             else 1.0
           end::float as factor
    from (select coalesce((select sum(idf) from terms), 0.0)
                 + coalesce((select sum(idf) from unsaid), 0.0) as total) q
  ),
  -- Both branches' candidates, each with the next turn of its session (if any) added to its embedding.
  context_hits as (
    select s.id, s.distance, (row_number() over (order by s.distance, s.id))::int as rnk
    from (
      select c.id,
             ((case when n.embedding is null then c.embedding::extensions.vector
                    else c.embedding::extensions.vector + n.embedding::extensions.vector end)
               <=> query_embedding)::float as distance
      from (select id from vector_hits union select id from text_hits) pool
      join public.conversation_turns c on c.id = pool.id
      left join public.conversation_turns n
        on n.user_id = c.user_id and n.session_id = c.session_id and n.turn_index = c.turn_index + 1
      where (select in_context from params) and c.embedding is not null
    ) s
  ),
  fused as (
    select coalesce(v.id, t.id) as id,
           v.rnk as vector_rank, v.distance as vector_distance,
           t.rnk as text_rank, t.score as text_score,
           x.rnk as context_rank, x.distance as context_distance,
           coalesce(vector_weight * (case when p.in_context then 0.5 else 1.0 end) / (rrf_k + v.rnk), 0.0)::float
             as vector_rrf,
           coalesce(vector_weight * 0.5 / (rrf_k + x.rnk), 0.0)::float as context_rrf,
           coalesce(text_weight * ts.factor / (rrf_k + t.rnk), 0.0)::float as text_rrf,
           (text_weight * ts.factor)::float as text_weight_used
    from vector_hits v
    full outer join text_hits t on t.id = v.id
    left join context_hits x on x.id = coalesce(v.id, t.id)
    cross join text_share ts
    cross join params p
  )
  select c.id, c.session_id, c.turn_index, c.speaker, c.content, c.created_at,
         f.vector_rank, f.vector_distance, f.text_rank, f.text_score,
         f.vector_rrf, f.text_rrf, (f.vector_rrf + f.context_rrf + f.text_rrf)::float as rrf_score,
         f.text_weight_used, f.context_rank, f.context_distance, f.context_rrf
  from fused f
  join public.conversation_turns c on c.id = f.id
  order by rrf_score desc, f.vector_rank nulls last, c.id
  limit least(greatest(match_count, 1), 200);
$$;

grant execute on function public.match_conversation_turns_hybrid(
  extensions.vector, text, uuid, int, float, float, int, text, int, text, timestamptz, timestamptz)
  to authenticated, service_role;
revoke execute on function public.match_conversation_turns_hybrid(
  extensions.vector, text, uuid, int, float, float, int, text, int, text, timestamptz, timestamptz)
  from anon, public;
