"""An HNSW index of their own turns for each heavy user, kept by the maintenance job.

The past-turn search ranks a user's turns by exact cosine distance, a walk of all their entries in a
covering index: about 2 ms for a typical user, most of the 50 ms budget at 50,000 turns. A user with at
least VECTOR_INDEX_MIN_TURNS turns gets a partial HNSW index over their turns alone, which the search
(public.nearest_conversation_turns) uses whenever it exists and is valid. This module builds the missing
ones and drops those no longer needed. It runs as the owner, and CREATE INDEX CONCURRENTLY keeps every
other user's turns flowing in while one is built; it never runs on a request.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from core.config import get_settings
from core.db import admin_connection

log = logging.getLogger(__name__)

# The graph's shape: at 50,000 turns m 16 / ef_construction 200 found 0.993 of the exact top 10 with the
# search's ef_search 1000, where m 24 and 32 were no better for the time (docs/RETRIEVAL.md).
HNSW_OPTIONS = "m = 16, ef_construction = 200"
NAME_PREFIX = "conversation_turns_vectors_"


@dataclass
class VectorIndexChanges:
    built: list[uuid.UUID] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    failed: list[uuid.UUID] = field(default_factory=list)
    seconds: float = 0.0


def index_name(user_id: uuid.UUID) -> str:
    """What public.conversation_turns_vector_index_name names it."""
    return NAME_PREFIX + user_id.hex


def keep_vector_indexes(min_turns: int | None = None, *, conninfo: str | None = None) -> VectorIndexChanges:
    """Build the index of every user with at least `min_turns` turns who has none (or a broken one, left by a
    build that was interrupted), and drop those of users who are gone or have fewer than half as many (the
    half keeps a user near the line from having theirs rebuilt and dropped in turn). Idempotent."""
    threshold = get_settings().vector_index_min_turns if min_turns is None else min_turns
    started = time.perf_counter()
    changes = VectorIndexChanges()
    with admin_connection(conninfo) as conn:
        conn.autocommit = True  # CREATE / DROP INDEX CONCURRENTLY cannot run in a transaction
        conn.execute("set maintenance_work_mem = '256MB'")  # a 50,000-turn graph (56 MB) built in memory
        existing = dict(
            conn.execute(
                "select c.relname, i.indisvalid and i.indisready from pg_catalog.pg_index i "
                "join pg_catalog.pg_class c on c.oid = i.indexrelid "
                "join pg_catalog.pg_namespace n on n.oid = c.relnamespace "
                "where n.nspname = 'public' and c.relname like %s",
                (NAME_PREFIX.replace("_", r"\_") + "%",),
            ).fetchall()
        )
        counts = dict(
            conn.execute(
                "select user_id, turn_count from public.conversation_lexicon_totals where turn_count >= %s",
                (max(1, threshold // 2),),
            ).fetchall()
        )
        wanted = {index_name(u): u for u, turns in counts.items() if turns >= threshold}
        kept = {index_name(u) for u in counts}  # at least half the threshold: an index it has stays
        for name, valid in existing.items():
            if name not in kept or not valid:
                conn.execute(sql.SQL("drop index concurrently if exists public.{}").format(sql.Identifier(name)))
                changes.dropped.append(name)
                log.info("dropped the vector index %s (%s)", name, "not needed" if valid else "broken")
        for name, user_id in sorted(wanted.items()):
            if existing.get(name):
                continue
            built = time.perf_counter()
            try:
                conn.execute(
                    sql.SQL(
                        "create index concurrently if not exists {} on public.conversation_turns "
                        "using hnsw (embedding extensions.halfvec_cosine_ops) with ({}) where user_id = {}"
                    ).format(sql.Identifier(name), sql.SQL(HNSW_OPTIONS), sql.Literal(str(user_id)))
                )
            except psycopg.Error as exc:
                # The user's search stays exact, and the next run drops what this one left and tries again:
                # an index the job could not build must not stop the job (or `make run`, which runs it).
                changes.failed.append(user_id)
                log.warning("could not build the vector index %s: %s", name, exc)
                continue
            changes.built.append(user_id)
            log.info(
                "built the vector index of a user with %s turns in %.1f s", counts[user_id], time.perf_counter() - built
            )
    changes.seconds = time.perf_counter() - started
    return changes
