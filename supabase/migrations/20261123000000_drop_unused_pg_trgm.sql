-- The first migration created pg_trgm, but no index, query or function uses
-- trigram matching (full-text search is tsvector). Without CASCADE: if a
-- project's own objects use pg_trgm, this stops with an error instead of
-- dropping them.
drop extension if exists pg_trgm;
