-- What the agent says before the user's first message is kept, never searched.
--
-- Every session starts with the agent's greeting ("Hi! I'm the Memory
-- Playground agent, ...", "Welcome back, Alex! ..."), stored as the
-- session's turn 0 like every other turn. It carries nothing the user told
-- the agent, but it was searched like the rest: "hi, what can you do for
-- me?" recalled an earlier session's greeting into the model's context, and
-- the offline brain answered "what did I pay for coffee?" with "On Monday,
-- December 7 I said: “Hi! I'm the Memory Playground agent ...”" (found in a
-- fresh-clone walkthrough, 2026-12-07).
--
-- So a turn the agent says before the user has said anything in its session
-- (the greeting; in a call, anything else it says before the user speaks)
-- is an opening: `opening` is set when it is stored (core.conversations,
-- from agent/turn_log.py), it is never embedded (the vector branch, and
-- the z-score baseline of the vector weight, read only embedded turns: the
-- check below keeps it so), and the text branch leaves it out. The
-- transcript keeps it (the Sessions page shows the greeting). Turns stored
-- before this migration are marked by the same rule: a non-user turn whose
-- session has every turn from 0 up to it, and none of them the user's (a
-- gap may be a message of the user's deleted with a memory it mentioned,
-- so what follows one is not taken for an opening).
--
-- The word statistics (conversation_lexemes) still count the openings'
-- words, as before. Turns loaded by other means (the eval CLI's COPY, the
-- benches) are not openings (the default), so their rankings are unchanged.

alter table public.conversation_turns add column opening boolean not null default false;

update public.conversation_turns t
   set opening = true, embedding = null
 where t.speaker <> 'user'
   and (select count(*) from public.conversation_turns p
         where p.user_id = t.user_id and p.session_id = t.session_id
           and p.turn_index <= t.turn_index and p.speaker <> 'user') = t.turn_index + 1;

alter table public.conversation_turns
  add constraint conversation_turns_opening_not_embedded check (not opening or embedding is null);

-- A turn is a record of what was said: its text, owner, place and whether it
-- was an opening never change (the embedding may be filled in later).
create or replace function public.conversation_turns_keep_text() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if new.content is distinct from old.content or new.speaker is distinct from old.speaker
     or new.user_id is distinct from old.user_id or new.session_id is distinct from old.session_id
     or new.turn_index is distinct from old.turn_index or new.opening is distinct from old.opening then
    raise exception 'conversation turns are immutable; only their embedding can be set'
      using errcode = 'check_violation';
  end if;
  return new;
end;
$$;

-- The search as 20261206000000_vector_weight_by_confidence.sql made it, its text branch without the openings.
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
  context_rrf     float,
  vector_weight_used float
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
        and not m.opening
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
        and not m.opening
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
  -- How far the vector branch's best hit stands out from the user's turns: its z-score among their
  -- distances to the query (at most 1,000 turns: enough for a mean and a spread, and cheap for a user
  -- with 50,000). Full weight from z = 4; hybrid searches only, and from 100 turns (a z-score among n
  -- turns is at most sqrt(n - 1): among 12 turns even an exact match could not reach 4).
  vector_baseline as (
    select avg(b.distance)::float as mean, stddev_pop(b.distance)::float as spread, count(*) as turns
    from (
      select (t.embedding <=> qh.v)::float as distance
      from public.conversation_turns t
      cross join query_half qh
      where (select in_context from params)
        and t.user_id = match_user_id
        and t.embedding is not null
        and (exclude_session_id is null or t.session_id <> exclude_session_id)
        and (said_since is null or t.created_at >= said_since)
        and (said_before is null or t.created_at < said_before)
      limit 1000
    ) b
  ),
  vector_share as (
    select case
             when p.in_context and vb.turns >= 100 and vb.spread > 0 and best.distance is not null
               then least(1.0, greatest(0.0, (vb.mean - best.distance) / vb.spread / 4.0))
             else 1.0
           end::float as factor
    from params p
    cross join vector_baseline vb
    cross join (select min(v.distance) as distance from vector_hits v) best
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
           coalesce(vector_weight * vs.factor * (case when p.in_context then 0.5 else 1.0 end) / (rrf_k + v.rnk),
                    0.0)::float as vector_rrf,
           coalesce(vector_weight * vs.factor * 0.5 / (rrf_k + x.rnk), 0.0)::float as context_rrf,
           coalesce(text_weight * ts.factor / (rrf_k + t.rnk), 0.0)::float as text_rrf,
           (text_weight * ts.factor)::float as text_weight_used,
           (vector_weight * vs.factor)::float as vector_weight_used
    from vector_hits v
    full outer join text_hits t on t.id = v.id
    left join context_hits x on x.id = coalesce(v.id, t.id)
    cross join text_share ts
    cross join vector_share vs
    cross join params p
  )
  select c.id, c.session_id, c.turn_index, c.speaker, c.content, c.created_at,
         f.vector_rank, f.vector_distance, f.text_rank, f.text_score,
         f.vector_rrf, f.text_rrf, (f.vector_rrf + f.context_rrf + f.text_rrf)::float as rrf_score,
         f.text_weight_used, f.context_rank, f.context_distance, f.context_rrf,
         f.vector_weight_used
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
