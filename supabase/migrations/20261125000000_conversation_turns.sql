-- Conversation memory: every user and agent turn of every session, searchable
-- per user with the same hybrid (vector + full-text, RRF) search as memories.
--
--   * conversation_turns: one row per turn; only the service writes, owners read.
--     Deleting a session (owners may) or the user deletes its turns.
--   * conversation_lexemes / conversation_lexicon_totals: per-user document
--     frequencies of every lexeme, kept by statement triggers, so the text
--     branch can weight a query's words by how rare they are in this user's
--     conversations (BM25's IDF) instead of counting every shared word alike.
--   * match_memories_hybrid is replaced: its text branch weights words the
--     same way (document frequencies counted over the user's memories).
--   * match_conversation_turns_hybrid: the search; per-branch ranks, distances,
--     text scores, RRF contributions and the fused score.

-- A turn references its session by (session_id, user_id), so a turn can never
-- point at another user's session.
alter table public.sessions
  add constraint sessions_session_id_user_id_key unique (session_id, user_id);

-- Owners may delete their session reports; the turns go with them.
create policy "Users can delete their own sessions"
  on public.sessions for delete to authenticated
  using ((select auth.uid()) = user_id);
grant delete on public.sessions to authenticated;

-- ---------------------------------------------------------------------------
-- conversation_turns
-- ---------------------------------------------------------------------------

create table public.conversation_turns (
  id          bigint generated always as identity primary key,
  user_id     uuid not null references auth.users (id) on delete cascade,
  session_id  text not null,
  turn_index  int not null check (turn_index >= 0),
  speaker     text not null check (char_length(speaker) between 1 and 64),
  content     text not null check (char_length(content) between 1 and 8000),
  created_at  timestamptz not null default now(),
  -- Null until the turn is embedded: a turn is stored first and embedded off
  -- the critical path, and one whose embedding failed is embedded later.
  -- Half precision: 768 bytes instead of 1,536, so the table and its covering
  -- index are half the size and a user's turns scan faster; cosine distances
  -- move by less than 0.001 and the dev-set recall did not change
  -- (docs/RETRIEVAL.md, docs/BENCHMARKS.md).
  embedding   extensions.halfvec(384),
  -- The speaker's name is searchable too ("what did Maria say about ...").
  fts         tsvector generated always as (
                to_tsvector('english'::regconfig, speaker || ' ' || content)
              ) stored,
  constraint conversation_turns_one_row_per_turn unique (user_id, session_id, turn_index),
  constraint conversation_turns_session_fkey foreign key (session_id, user_id)
    references public.sessions (session_id, user_id) on delete cascade
);

-- The vector branch is an exact scan of one user's turns. This covering index
-- keeps each user's (id, session_id, embedding) entries together, so the scan
-- (including "not the current session") is an index-only read of that user's
-- entries instead of one heap page per turn. Cost follows one user's turn
-- count, never the table's. (docs/BENCHMARKS.md compares it with HNSW and the
-- other index choices.)
create index conversation_turns_user_embedding_idx
  on public.conversation_turns (user_id) include (id, session_id, embedding);
-- The text branch looks up "this user's turns that contain these words" in one
-- GIN scan: every turn is indexed under its words plus one word naming its
-- owner ('owner <user id>', which to_tsvector can never produce: it has a
-- space). GIN's AND then skips through the long lists of common words along
-- the owner's short list, so the cost follows the user's turns, not the
-- table's. Queries must use this exact expression to use the index.
create index conversation_turns_owner_fts_idx on public.conversation_turns
  using gin ((fts || array_to_tsvector(array['owner ' || user_id::text])));

-- A turn is a record of what was said: its text and owner never change
-- (the embedding may be filled in later).
create or replace function public.conversation_turns_keep_text() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if new.content is distinct from old.content or new.speaker is distinct from old.speaker
     or new.user_id is distinct from old.user_id or new.session_id is distinct from old.session_id
     or new.turn_index is distinct from old.turn_index then
    raise exception 'conversation turns are immutable; only their embedding can be set'
      using errcode = 'check_violation';
  end if;
  return new;
end;
$$;

create trigger conversation_turns_keep_text
  before update on public.conversation_turns
  for each row execute function public.conversation_turns_keep_text();

alter table public.conversation_turns enable row level security;

create policy "Users can read their own conversation turns"
  on public.conversation_turns for select to authenticated
  using ((select auth.uid()) = user_id);

-- ---------------------------------------------------------------------------
-- Per-user lexeme statistics for the text branch (BM25-style IDF)
-- ---------------------------------------------------------------------------

create table public.conversation_lexemes (
  user_id    uuid not null references auth.users (id) on delete cascade,
  lexeme     text not null,
  turn_count int not null check (turn_count >= 0),  -- turns of this user containing the lexeme
  primary key (user_id, lexeme)
);

create table public.conversation_lexicon_totals (
  user_id       uuid primary key references auth.users (id) on delete cascade,
  turn_count    bigint not null check (turn_count >= 0)
);

alter table public.conversation_lexemes enable row level security;
alter table public.conversation_lexicon_totals enable row level security;

create policy "Users can read their own conversation word statistics"
  on public.conversation_lexemes for select to authenticated
  using ((select auth.uid()) = user_id);

create policy "Users can read their own conversation totals"
  on public.conversation_lexicon_totals for select to authenticated
  using ((select auth.uid()) = user_id);

-- Statement-level, with transition tables: one aggregate upsert per INSERT or
-- COPY however many turns it wrote. Rows are locked in (user_id, lexeme) order
-- so two concurrent writers for one user cannot deadlock each other.
-- security definer: also runs when a user's session delete cascades here.
create or replace function public.conversation_lexicon_add() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  insert into public.conversation_lexemes as l (user_id, lexeme, turn_count)
  select n.user_id, lexeme, count(*)
  from new_turns n, unnest(tsvector_to_array(n.fts)) as lexeme
  group by n.user_id, lexeme
  order by n.user_id, lexeme
  on conflict (user_id, lexeme) do update set turn_count = l.turn_count + excluded.turn_count;

  insert into public.conversation_lexicon_totals as t (user_id, turn_count)
  select n.user_id, count(*)
  from new_turns n
  group by n.user_id
  order by n.user_id
  on conflict (user_id) do update set turn_count = t.turn_count + excluded.turn_count;
  return null;
end;
$$;

create or replace function public.conversation_lexicon_remove() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  with gone as (
    select o.user_id, lexeme, count(*) as turns
    from old_turns o, unnest(tsvector_to_array(o.fts)) as lexeme
    group by o.user_id, lexeme
  )
  update public.conversation_lexemes l
     set turn_count = greatest(l.turn_count - gone.turns, 0)
    from gone
   where l.user_id = gone.user_id and l.lexeme = gone.lexeme;

  delete from public.conversation_lexemes l
   where l.turn_count = 0
     and l.user_id in (select distinct o.user_id from old_turns o);

  with gone as (
    select o.user_id, count(*) as turns
    from old_turns o
    group by o.user_id
  )
  update public.conversation_lexicon_totals t
     set turn_count = greatest(t.turn_count - gone.turns, 0)
    from gone
   where t.user_id = gone.user_id;

  -- a user with no turns has no totals row, the same as one who never had any
  delete from public.conversation_lexicon_totals t
   where t.turn_count = 0
     and t.user_id in (select distinct o.user_id from old_turns o);
  return null;
end;
$$;

create trigger conversation_turns_lexicon_add
  after insert on public.conversation_turns
  referencing new table as new_turns
  for each statement execute function public.conversation_lexicon_add();

create trigger conversation_turns_lexicon_remove
  after delete on public.conversation_turns
  referencing old table as old_turns
  for each statement execute function public.conversation_lexicon_remove();

revoke all on function public.conversation_lexicon_add() from public, anon, authenticated;
revoke all on function public.conversation_lexicon_remove() from public, anon, authenticated;

-- ---------------------------------------------------------------------------
-- Privileges: owners read; only the service writes.
-- ---------------------------------------------------------------------------

revoke all on public.conversation_turns, public.conversation_lexemes, public.conversation_lexicon_totals
  from anon, authenticated;
grant select on public.conversation_turns, public.conversation_lexemes, public.conversation_lexicon_totals
  to authenticated;
grant all on public.conversation_turns, public.conversation_lexemes, public.conversation_lexicon_totals
  to service_role;

-- ---------------------------------------------------------------------------
-- RPC: hybrid search over one user's conversation turns
--
--   rrf_score = vector_weight / (rrf_k + vector_rank) + text_weight / (rrf_k + text_rank)
--
-- Each branch keeps its best `candidate_count` turns (default 4 * match_count);
-- a turn missing from a branch gets nothing from it. A null query_embedding
-- means text only; a blank query_text means vector only. exclude_session_id
-- leaves out one session (the one being spoken right now).
--
-- Vector branch: exact cosine distance over the user's embedded turns (the
-- query is cast to half precision like the stored embeddings).
-- Text branch (text_match = 'any'): the query's lexemes weighted by their
-- IDF over this user's turns, ln(1 + (N - df + 0.5) / (df + 0.5)), keeping at
-- most the 8 rarest; a turn scores the sum of the IDFs of the query lexemes it
-- contains. That is BM25 with term frequency counted once and no length
-- normalisation (b = 0): turns are short, and normalising by length demoted
-- the turns that say more (docs/RETRIEVAL.md). Lexemes the user never used
-- cannot match, and lexemes in more than 10% of the user's turns are left out
-- unless no other is left (they add little to a score, and matching them
-- costs a tenth of the user's turns each; recall on the dev set is the same).
-- text_match = 'all' ranks websearch_to_tsquery's AND with ts_rank_cd instead.
-- ---------------------------------------------------------------------------

create or replace function public.match_conversation_turns_hybrid(
  query_embedding    extensions.vector(384),
  query_text         text,
  match_user_id      uuid,
  match_count        int default 10,
  vector_weight      float default 0.5,
  text_weight        float default 0.5,
  rrf_k              int default 5,
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
  rrf_score       float
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
  terms as (
    select r.lexeme, quote_literal(r.lexeme)::tsquery as q, r.idf
    from (
      select l.lexeme, l.turn_count, tot.n,
             ln(1.0 + (tot.n - l.turn_count + 0.5) / (l.turn_count + 0.5)) as idf,
             row_number() over (order by l.turn_count, l.lexeme) as rarest
      from (select distinct lexeme
            from unnest(tsvector_to_array(to_tsvector('english', coalesce(query_text, '')))) as lexeme) as ql
      join public.conversation_lexemes l on l.user_id = match_user_id and l.lexeme = ql.lexeme
      cross join totals tot
      where text_match = 'any' and l.turn_count > 0
    ) r
    where r.rarest <= 8 and (r.turn_count <= 0.1 * r.n or r.rarest = 1)
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
  fused as (
    select coalesce(v.id, t.id) as id,
           v.rnk as vector_rank, v.distance as vector_distance,
           t.rnk as text_rank, t.score as text_score,
           coalesce(vector_weight / (rrf_k + v.rnk), 0.0)::float as vector_rrf,
           coalesce(text_weight / (rrf_k + t.rnk), 0.0)::float as text_rrf
    from vector_hits v
    full outer join text_hits t on t.id = v.id
  )
  select c.id, c.session_id, c.turn_index, c.speaker, c.content, c.created_at,
         f.vector_rank, f.vector_distance, f.text_rank, f.text_score,
         f.vector_rrf, f.text_rrf, (f.vector_rrf + f.text_rrf)::float as rrf_score
  from fused f
  join public.conversation_turns c on c.id = f.id
  order by rrf_score desc, f.vector_rank nulls last, c.id
  limit least(greatest(match_count, 1), 200);
$$;

grant execute on function public.match_conversation_turns_hybrid(
  extensions.vector, text, uuid, int, float, float, int, text, int, text) to authenticated, service_role;
revoke execute on function public.match_conversation_turns_hybrid(
  extensions.vector, text, uuid, int, float, float, int, text, int, text) from anon, public;

-- ---------------------------------------------------------------------------
-- match_memories_hybrid, with the same text weighting
--
-- Unchanged: signature, columns, the exact vector branch, candidates
-- (4 * match_count per branch) and 'all'. Changed: with text_match = 'any'
-- a memory scores the sum of the IDFs (over this user's memories) of the
-- query lexemes it contains, instead of ts_rank_cd over an OR of all of them,
-- which counted a shared everyday word ("called", "live") like a shared name.
-- ---------------------------------------------------------------------------

create or replace function public.match_memories_hybrid(
  query_embedding extensions.vector(384),
  query_text      text,
  match_user_id   uuid,
  match_count     int default 10,
  vector_weight   float default 0.5,
  text_weight     float default 0.5,
  rrf_k           int default 5,
  text_match      text default 'any'
)
returns table (
  id              uuid,
  memory_type     text,
  content         text,
  session_id      text,
  updated_at      timestamptz,
  vector_rank     int,
  vector_distance float,
  text_rank       int,
  text_score      float,
  vector_rrf      float,
  text_rrf        float,
  rrf_score       float
)
language sql stable
security invoker
set search_path = public, extensions, pg_temp
as $$
  with params as (
    select least(greatest(match_count, 1), 200) * 4 as candidates
  ),
  -- Materialized so the vector branch is always an exact scan of this user's rows.
  mine as materialized (
    select m.id, m.embedding, m.fts
    from public.memories m
    where m.user_id = match_user_id
  ),
  vector_hits as (
    select v.id, v.distance, (row_number() over (order by v.distance, v.id))::int as rnk
    from (
      select mine.id, (mine.embedding <=> query_embedding)::float as distance
      from mine
      where query_embedding is not null
      order by mine.embedding <=> query_embedding, mine.id
      limit (select candidates from params)
    ) v
  ),
  terms as (
    select t.lexeme, t.q,
           ln(1.0 + ((select count(*) from mine) - t.df + 0.5) / (t.df + 0.5)) as idf
    from (
      select ql.lexeme, quote_literal(ql.lexeme)::tsquery as q,
             (select count(*) from mine where mine.fts @@ quote_literal(ql.lexeme)::tsquery) as df
      from (select distinct lexeme
            from unnest(tsvector_to_array(to_tsvector('english', coalesce(query_text, '')))) as lexeme) as ql
      where text_match = 'any'
    ) t
    where t.df > 0
    order by idf desc, t.lexeme
    limit 8
  ),
  any_hits as (
    select s.id, s.score, (row_number() over (order by s.score desc, s.id))::int as rnk
    from (
      select mine.id, sum(terms.idf)::float as score
      from mine
      join terms on mine.fts @@ terms.q
      group by mine.id
      order by score desc, mine.id
      limit (select candidates from params)
    ) s
  ),
  all_hits as (
    select s.id, s.score, (row_number() over (order by s.score desc, s.id))::int as rnk
    from (
      select mine.id, ts_rank_cd(mine.fts, w.q)::float as score
      from mine, (select websearch_to_tsquery('english', query_text) as q) w
      where text_match = 'all'
        and coalesce(btrim(query_text), '') <> ''
        and mine.fts @@ w.q
      order by score desc, mine.id
      limit (select candidates from params)
    ) s
  ),
  text_hits as (
    select * from any_hits
    union all
    select * from all_hits
  ),
  fused as (
    select coalesce(v.id, t.id) as id,
           v.rnk as vector_rank, v.distance as vector_distance,
           t.rnk as text_rank, t.score as text_score,
           coalesce(vector_weight / (rrf_k + v.rnk), 0.0)::float as vector_rrf,
           coalesce(text_weight / (rrf_k + t.rnk), 0.0)::float as text_rrf
    from vector_hits v
    full outer join text_hits t on t.id = v.id
  )
  select m.id, m.memory_type, m.content, m.session_id, m.updated_at,
         f.vector_rank, f.vector_distance, f.text_rank, f.text_score,
         f.vector_rrf, f.text_rrf, (f.vector_rrf + f.text_rrf)::float as rrf_score
  from fused f
  join public.memories m on m.id = f.id
  order by rrf_score desc, f.vector_rank nulls last, m.id
  limit least(greatest(match_count, 1), 200);
$$;

-- ---------------------------------------------------------------------------
-- Knowledge: hybrid too. Codes, model names and prices ("E03", "$649") are
-- what people type, and an embedding alone ranks "Error code E01" above
-- "Error code E03" for "my machine shows E03" (docs/RETRIEVAL.md).
-- ---------------------------------------------------------------------------

alter table public.knowledge
  add column fts tsvector generated always as (
    to_tsvector('english'::regconfig, title || ' ' || content)
  ) stored;
create index knowledge_fts_idx on public.knowledge using gin (fts);

-- Same columns as match_knowledge (distance and similarity to the query for
-- every hit, rank = position in the fused order) plus each branch's rank,
-- text score and RRF contribution. Text branch: IDF over the knowledge base,
-- as for memories and turns.
create or replace function public.match_knowledge_hybrid(
  query_embedding extensions.vector(384),
  query_text      text,
  match_count     int default 5,
  filter_category text default null,
  vector_weight   float default 0.5,
  text_weight     float default 0.5,
  rrf_k           int default 5
)
returns table (
  id          bigint,
  title       text,
  content     text,
  category    text,
  distance    float,
  similarity  float,
  rank        int,
  vector_rank int,
  text_rank   int,
  text_score  float,
  vector_rrf  float,
  text_rrf    float,
  rrf_score   float
)
language sql stable
security invoker
set search_path = public, extensions, pg_temp
as $$
  with params as (
    select least(greatest(match_count, 1), 100) * 4 as candidates
  ),
  docs as (
    select k.id, k.embedding, k.fts
    from public.knowledge k
    where filter_category is null or k.category = filter_category
  ),
  vector_hits as (
    select v.id, (row_number() over (order by v.distance, v.id))::int as rnk
    from (
      select docs.id, (docs.embedding <=> query_embedding)::float as distance
      from docs
      where query_embedding is not null
      order by docs.embedding <=> query_embedding, docs.id
      limit (select candidates from params)
    ) v
  ),
  terms as (
    select t.q, ln(1.0 + ((select count(*) from docs) - t.df + 0.5) / (t.df + 0.5)) as idf
    from (
      select quote_literal(ql.lexeme)::tsquery as q, ql.lexeme,
             (select count(*) from docs where docs.fts @@ quote_literal(ql.lexeme)::tsquery) as df
      from (select distinct lexeme
            from unnest(tsvector_to_array(to_tsvector('english', coalesce(query_text, '')))) as lexeme) as ql
    ) t
    where t.df > 0
    order by idf desc, t.lexeme
    limit 8
  ),
  text_hits as (
    select s.id, s.score, (row_number() over (order by s.score desc, s.id))::int as rnk
    from (
      select docs.id, sum(terms.idf)::float as score
      from docs
      join terms on docs.fts @@ terms.q
      group by docs.id
      order by score desc, docs.id
      limit (select candidates from params)
    ) s
  ),
  fused as (
    select coalesce(v.id, t.id) as id, v.rnk as vector_rank, t.rnk as text_rank, t.score as text_score,
           coalesce(vector_weight / (rrf_k + v.rnk), 0.0)::float as vector_rrf,
           coalesce(text_weight / (rrf_k + t.rnk), 0.0)::float as text_rrf
    from vector_hits v
    full outer join text_hits t on t.id = v.id
  ),
  ranked as (
    select f.*, (f.vector_rrf + f.text_rrf)::float as rrf_score,
           (row_number() over (order by f.vector_rrf + f.text_rrf desc, f.vector_rank nulls last, f.id))::int as pos
    from fused f
  )
  select k.id, k.title, k.content, k.category,
         (k.embedding <=> query_embedding)::float as distance,
         (1 - (k.embedding <=> query_embedding))::float as similarity,
         r.pos as rank, r.vector_rank, r.text_rank, r.text_score, r.vector_rrf, r.text_rrf, r.rrf_score
  from ranked r
  join public.knowledge k on k.id = r.id
  where r.pos <= least(greatest(match_count, 1), 100)
  order by r.pos;
$$;

grant execute on function public.match_knowledge_hybrid(extensions.vector, text, int, text, float, float, int)
  to authenticated, service_role;
revoke execute on function public.match_knowledge_hybrid(extensions.vector, text, int, text, float, float, int)
  from anon, public;
