-- Memory Playground: schema, row level security, RPCs and indexes.
-- A plain Supabase migration: `supabase db push` applies it unchanged to a
-- hosted project; the embedded database gets the same after supabase/local/.
--
-- Two layers of isolation:
--   * users reach their rows as role `authenticated`; the policies below decide.
--   * the agent worker connects as `service_role` (bypasses RLS) and its code
--     scopes every query by the verified user id.

create extension if not exists vector with schema extensions;
create extension if not exists pg_trgm with schema extensions;

-- ---------------------------------------------------------------------------
-- Helpers
-- ---------------------------------------------------------------------------

create or replace function public.touch_updated_at() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  new.updated_at := now();
  return new;
end;
$$;

-- ---------------------------------------------------------------------------
-- profiles: one per auth user, anonymous users included
-- ---------------------------------------------------------------------------

create table public.profiles (
  id                 uuid primary key references auth.users (id) on delete cascade,
  name               text check (char_length(name) <= 200),
  email              text check (char_length(email) <= 320),
  preferred_language text check (char_length(preferred_language) <= 64),
  timezone           text check (char_length(timezone) <= 64),
  preferences        jsonb not null default '{}'::jsonb,
  last_seen_at       timestamptz,
  created_at         timestamptz not null default now(),
  updated_at         timestamptz not null default now()
);

create trigger profiles_touch_updated_at
  before update on public.profiles
  for each row execute function public.touch_updated_at();

-- Every new auth user (anonymous or not) gets a profile row.
create or replace function public.handle_new_user() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  insert into public.profiles (id, email)
  values (new.id, new.email)
  on conflict (id) do nothing;
  return new;
end;
$$;

create trigger on_auth_user_created
  after insert on auth.users
  for each row execute function public.handle_new_user();

alter table public.profiles enable row level security;

create policy "Users can read their own profile"
  on public.profiles for select to authenticated
  using ((select auth.uid()) = id);

create policy "Users can update their own profile"
  on public.profiles for update to authenticated
  using ((select auth.uid()) = id)
  with check ((select auth.uid()) = id);

-- ---------------------------------------------------------------------------
-- knowledge: shared documents for RAG
-- ---------------------------------------------------------------------------

create table public.knowledge (
  id         bigint generated always as identity primary key,
  title      text not null unique check (char_length(title) between 1 and 300),
  content    text not null check (char_length(content) between 1 and 20000),
  category   text not null default 'general' check (char_length(category) between 1 and 64),
  embedding  extensions.vector(384) not null,
  created_at timestamptz not null default now()
);

create index knowledge_embedding_hnsw_idx
  on public.knowledge using hnsw (embedding extensions.vector_cosine_ops);

alter table public.knowledge enable row level security;

create policy "Signed-in users can read knowledge"
  on public.knowledge for select to authenticated
  using (true);

-- ---------------------------------------------------------------------------
-- memories: one row per (user, memory_type) slot
-- ---------------------------------------------------------------------------

create table public.memories (
  id          uuid primary key default gen_random_uuid(),
  user_id     uuid not null references auth.users (id) on delete cascade,
  memory_type text not null check (memory_type ~ '^[a-z][a-z0-9_]{0,63}$'),
  content     text not null check (char_length(content) between 1 and 2000),
  -- embedding of "memory_type: content", normalized (cosine)
  embedding   extensions.vector(384) not null,
  -- slot words count too: "favorite_color" matches a question about a colour
  fts         tsvector generated always as (
                to_tsvector('english'::regconfig, replace(memory_type, '_', ' ') || ' ' || content)
              ) stored,
  session_id  text,
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now(),
  constraint memories_one_row_per_slot unique (user_id, memory_type)
);

-- No approximate vector index on memories on purpose: a user's vector branch
-- must be exact, so it reads that user's rows through the unique (user_id, ...)
-- index and sorts them by distance. Cost grows with one user's memories, not
-- with the table.
create index memories_fts_idx on public.memories using gin (fts);

create trigger memories_touch_updated_at
  before update on public.memories
  for each row execute function public.touch_updated_at();

alter table public.memories enable row level security;

create policy "Users can read their own memories"
  on public.memories for select to authenticated
  using ((select auth.uid()) = user_id);

create policy "Users can add their own memories"
  on public.memories for insert to authenticated
  with check ((select auth.uid()) = user_id);

create policy "Users can change their own memories"
  on public.memories for update to authenticated
  using ((select auth.uid()) = user_id)
  with check ((select auth.uid()) = user_id);

create policy "Users can delete their own memories"
  on public.memories for delete to authenticated
  using ((select auth.uid()) = user_id);

-- ---------------------------------------------------------------------------
-- orders: shared demo data
-- ---------------------------------------------------------------------------

create table public.orders (
  order_id           text primary key check (order_id ~ '^[A-Za-z0-9-]{1,32}$'),
  customer_name      text not null,
  status             text not null check (status in ('processing', 'shipped', 'delivered', 'cancelled', 'returned')),
  items              jsonb not null default '[]'::jsonb,
  total              numeric(10, 2) not null,
  currency           text not null default 'USD',
  carrier            text,
  tracking_number    text,
  placed_at          timestamptz not null,
  estimated_delivery date
);

alter table public.orders enable row level security;

create policy "Signed-in users can read orders"
  on public.orders for select to authenticated
  using (true);

-- ---------------------------------------------------------------------------
-- sessions: one report per finished conversation; only the service writes
-- ---------------------------------------------------------------------------

create table public.sessions (
  session_id text primary key check (char_length(session_id) between 1 and 200),
  user_id    uuid not null references auth.users (id) on delete cascade,
  room_name  text,
  report     jsonb not null default '{}'::jsonb,
  started_at timestamptz,
  ended_at   timestamptz,
  created_at timestamptz not null default now()
);

create index sessions_user_id_created_at_idx on public.sessions (user_id, created_at desc);

alter table public.sessions enable row level security;

create policy "Users can read their own sessions"
  on public.sessions for select to authenticated
  using ((select auth.uid()) = user_id);

-- ---------------------------------------------------------------------------
-- Privileges: RLS decides rows; grants decide which statements are possible.
-- ---------------------------------------------------------------------------

revoke all on public.profiles, public.knowledge, public.memories, public.orders, public.sessions
  from anon, authenticated;

grant select on public.profiles to authenticated;
grant update (name, email, preferred_language, timezone, preferences, last_seen_at)
  on public.profiles to authenticated;
grant select on public.knowledge, public.orders, public.sessions to authenticated;
grant select, insert, update, delete on public.memories to authenticated;

grant all on public.profiles, public.knowledge, public.memories, public.orders, public.sessions
  to service_role;

-- ---------------------------------------------------------------------------
-- RPC: knowledge search (approximate HNSW, cosine)
-- ---------------------------------------------------------------------------

create or replace function public.match_knowledge(
  query_embedding extensions.vector(384),
  match_count     int default 5,
  filter_category text default null
)
returns table (
  id         bigint,
  title      text,
  content    text,
  category   text,
  distance   float,
  similarity float,
  rank       int
)
language sql stable
security invoker
set search_path = public, extensions, pg_temp
as $$
  select
    k.id, k.title, k.content, k.category,
    (k.embedding <=> query_embedding)::float as distance,
    (1 - (k.embedding <=> query_embedding))::float as similarity,
    (row_number() over (order by k.embedding <=> query_embedding, k.id))::int as rank
  from public.knowledge k
  where filter_category is null or k.category = filter_category
  order by k.embedding <=> query_embedding, k.id
  limit least(greatest(match_count, 1), 100);
$$;

-- ---------------------------------------------------------------------------
-- RPC: hybrid memory search with Reciprocal Rank Fusion
--
--   rrf_score = vector_weight / (rrf_k + vector_rank) + text_weight / (rrf_k + text_rank)
--
-- Each branch ranks one user's memories and keeps its best match_count * 4;
-- a hit missing from a branch gets nothing from it. A null query_embedding
-- means "text only" (the caller could not embed the query).
--
-- Text branch: text_match = 'any' (default) ORs the query's lexemes, so a
-- question ("what car does Evan drive") matches a stored fact that shares
-- only some words; 'all' is websearch_to_tsquery's AND. docs/RETRIEVAL.md
-- has the measurements behind the default.
-- ---------------------------------------------------------------------------

create or replace function public.match_memories_hybrid(
  query_embedding extensions.vector(384),
  query_text      text,
  match_user_id   uuid,
  match_count     int default 10,
  vector_weight   float default 0.7,
  text_weight     float default 0.3,
  rrf_k           int default 60,
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
    select mine.id,
           (mine.embedding <=> query_embedding)::float as distance,
           row_number() over (order by mine.embedding <=> query_embedding, mine.id)::int as rnk
    from mine
    where query_embedding is not null
    order by rnk
    limit (select candidates from params)
  ),
  text_query as (
    select case
      when coalesce(btrim(query_text), '') = '' then null
      when text_match = 'all' then websearch_to_tsquery('english', query_text)
      else (
        select string_agg(quote_literal(lexeme), ' | ')::tsquery
        from unnest(tsvector_to_array(to_tsvector('english', query_text))) as lexeme
      )
    end as q
  ),
  text_hits as (
    select mine.id,
           ts_rank_cd(mine.fts, tq.q)::float as score,
           row_number() over (order by ts_rank_cd(mine.fts, tq.q) desc, mine.id)::int as rnk
    from mine, text_query tq
    where tq.q is not null and mine.fts @@ tq.q
    order by rnk
    limit (select candidates from params)
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

grant execute on function public.match_knowledge(extensions.vector, int, text) to authenticated, service_role;
grant execute on function public.match_memories_hybrid(extensions.vector, text, uuid, int, float, float, int, text)
  to authenticated, service_role;
revoke execute on function public.match_knowledge(extensions.vector, int, text) from anon, public;
revoke execute on function public.match_memories_hybrid(extensions.vector, text, uuid, int, float, float, int, text)
  from anon, public;
