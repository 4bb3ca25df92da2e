-- The text branch of match_conversation_turns_hybrid counts for as much of the
-- query as its best hit holds. A question's words are weighted (English rarity
-- + the user's IDF: 20261125120100_search_with_english_rarity.sql); when no
-- turn holds even half of that weight, the text ranking only says which turns
-- share *some* word ("Quick question: remind me what seeds I have to avoid?"
-- finds "a quick update" first), and fusing it at full weight pushes the
-- vector branch's better rows down. So:
--
--   text weight used = text_weight * least(1, best text score / (0.5 * query weight))
--
-- where the query weight sums the weights of the words the text branch uses
-- and of the query's words this user never said (they count as said in no
-- turn: a word the user never used is still part of the question). On the two
-- conversational dev sets this lifted hybrid recall@5 by 0.6 and 0.5 points and
-- MRR by 0.7 points (docs/RETRIEVAL.md, "Text weight by coverage"); the
-- threshold, half the query's weight, was the best of 0.3 / 0.5 / 0.7 on both.
-- The function returns the weight it used (text_weight_used, the same on every
-- row) so that the panel can say what text_rrf was computed with. text_match
-- 'all' and a text-only search (vector_weight 0) rank as before.

drop function if exists public.match_conversation_turns_hybrid(
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
  exclude_session_id text default null
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
  text_weight_used float
)
language sql stable
security invoker
set search_path = public, extensions, pg_temp
as $$
  with params as (
    select least(greatest(coalesce(candidate_count, least(greatest(match_count, 1), 200) * 4), 1), 1000)
           as candidates
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
      select m.id, sum(terms.idf)::float as score
      from public.conversation_turns m
      cross join any_query aq
      join terms on m.fts @@ terms.q
      where m.user_id = match_user_id
        and (m.fts || array_to_tsvector(array['owner ' || m.user_id::text])) @@ aq.q
        and (exclude_session_id is null or m.session_id <> exclude_session_id)
      group by m.id
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
  fused as (
    select coalesce(v.id, t.id) as id,
           v.rnk as vector_rank, v.distance as vector_distance,
           t.rnk as text_rank, t.score as text_score,
           coalesce(vector_weight / (rrf_k + v.rnk), 0.0)::float as vector_rrf,
           coalesce(text_weight * ts.factor / (rrf_k + t.rnk), 0.0)::float as text_rrf,
           (text_weight * ts.factor)::float as text_weight_used
    from vector_hits v
    full outer join text_hits t on t.id = v.id
    cross join text_share ts
  )
  select c.id, c.session_id, c.turn_index, c.speaker, c.content, c.created_at,
         f.vector_rank, f.vector_distance, f.text_rank, f.text_score,
         f.vector_rrf, f.text_rrf, (f.vector_rrf + f.text_rrf)::float as rrf_score,
         f.text_weight_used
  from fused f
  join public.conversation_turns c on c.id = f.id
  order by rrf_score desc, f.vector_rank nulls last, c.id
  limit least(greatest(match_count, 1), 200);
$$;

grant execute on function public.match_conversation_turns_hybrid(
  extensions.vector, text, uuid, int, float, float, int, text, int, text) to authenticated, service_role;
revoke execute on function public.match_conversation_turns_hybrid(
  extensions.vector, text, uuid, int, float, float, int, text, int, text) from anon, public;

grant execute on function public.match_conversation_turns_hybrid(
  extensions.vector, text, uuid, int, float, float, int, text, int, text) to authenticated, service_role;
revoke execute on function public.match_conversation_turns_hybrid(
  extensions.vector, text, uuid, int, float, float, int, text, int, text) from anon, public;
