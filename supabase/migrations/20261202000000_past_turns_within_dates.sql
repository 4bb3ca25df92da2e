-- The past-turn search can keep to a window of time.
--
-- "What did I tell you last week about the trail?" and "back in March" name
-- when something was said. The search ranked every earlier turn, so for a
-- user with months of conversations the turns of that week competed with
-- every other mention of a trail. Two optional bounds, said_since (inclusive)
-- and said_before (exclusive), keep both branches to the turns said in
-- [said_since, said_before); null leaves that side open, and with both null
-- the search is the one of 20261127210000_text_branch_reads_each_turn_once.sql.
-- The word statistics (IDF) stay those of all the user's turns: a word is as
-- rare as it is for this user, whatever window is asked for.
--
-- The covering index of the vector branch also holds created_at, so a window
-- is still an index-only read of the user's entries (8 more bytes per entry
-- beside the 768 of the embedding).

create index conversation_turns_user_embedding_when_idx
  on public.conversation_turns (user_id) include (id, session_id, embedding, created_at);
drop index public.conversation_turns_user_embedding_idx;
alter index public.conversation_turns_user_embedding_when_idx rename to conversation_turns_user_embedding_idx;

-- A new signature: drop the old one so that a call with ten arguments is not ambiguous.
drop function public.match_conversation_turns_hybrid(
  extensions.vector, text, uuid, int, float, float, int, text, int, text);

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
    from (
      select t.id, (t.embedding <=> qh.v)::float as distance
      from public.conversation_turns t, query_half qh
      where t.user_id = match_user_id
        and qh.v is not null
        and t.embedding is not null
        and (exclude_session_id is null or t.session_id <> exclude_session_id)
        and (said_since is null or t.created_at >= said_since)
        and (said_before is null or t.created_at < said_before)
      order by distance, t.id
      limit (select candidates from params)
    ) v
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
