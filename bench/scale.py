"""Hybrid memory search at scale, on a throwaway embedded database.

The table is filled with many users' memories (random unit vectors for the
embeddings and text drawn from a small vocabulary, so the full-text branch
meets common words in every user's rows), then one user's hybrid search is
timed as the table grows. Only the SQL is timed: the query embedding is
computed once beforehand (embedding cost does not depend on the table).
"""

from __future__ import annotations

import random
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from core import db, embeddings, retrieval
from core.db import Scope

WORDS = (  # noqa: SIM905 - one string of words reads better than 46 quoted ones
    "coffee tea milk oat espresso beans grinder order shipping denver boise teal blue green red dog cat "
    "beagle volvo car bike running climbing allergic nuts shellfish vegan vegetarian birthday march june "
    "partner kids school work engineer nurse teacher wifi code gate garage phone email city home"
).split()
SLOTS = [
    "favorite_color",
    "home_city",
    "allergies",
    "favorite_drink",
    "employer",
    "job",
    "pet",
    "car",
    "birthday",
    "diet",
    "partner_name",
    "favorite_food",
    "gym",
    "kids",
    "hometown",
    "sport",
    "wifi_name",
    "gate_code",
    "shoe_size",
    "usual_order",
]
QUERIES = [
    "what is my favorite color",
    "where do I live",
    "am I allergic to nuts",
    "what coffee do I drink",
    "what is the wifi code",
    "what car do I drive",
    "when is my birthday",
    "what is my dog called",
]


def _slot(index: int) -> str:
    return SLOTS[index] if index < len(SLOTS) else f"{SLOTS[index % len(SLOTS)]}_{index // len(SLOTS)}"


def _copy_rows(conn, user_ids: list[uuid.UUID], per_user: int, rng: np.random.Generator) -> int:
    """COPY per_user memories for each user (binary-safe text format)."""
    count = 0
    with (
        conn.cursor() as cur,
        cur.copy("copy public.memories (user_id, memory_type, content, embedding) from stdin") as copy,
    ):
        for user_id in user_ids:
            vectors = rng.standard_normal((per_user, 384)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            for i in range(per_user):
                content = " ".join(random.choices(WORDS, k=6))
                vector = "[" + ",".join(f"{x:.5f}" for x in vectors[i]) + "]"
                copy.write_row((user_id, _slot(i), content, vector))
                count += 1
    return count


def _new_users(conn, n: int) -> list[uuid.UUID]:
    rows = conn.execute(
        "insert into auth.users (is_anonymous) select true from generate_series(1, %s) returning id", (n,)
    ).fetchall()
    return [row[0] for row in rows]


def run(
    target_rows: list[int] | None = None, per_user: int = 40, heavy_memories: int = 2000, repeats: int = 5, log=print
) -> dict[str, Any]:
    target_rows = target_rows or [10_000, 100_000]
    workdir = Path(tempfile.mkdtemp(prefix="mp-bench-scale-"))
    random.seed(7)
    rng = np.random.default_rng(7)
    results = []
    try:
        uri = db.start_embedded(workdir / "pg", cleanup_mode="delete")
        db.migrate(uri, embedded=True, echo=lambda *_: None)
        query_vectors = {q: embeddings.embed_one(q) for q in QUERIES}
        with db.admin_connection(uri) as conn:
            typical = _new_users(conn, 1)[0]
            heavy = _new_users(conn, 1)[0]
            rows = _copy_rows(conn, [typical], per_user, rng) + _copy_rows(conn, [heavy], heavy_memories, rng)
            for target in target_rows:
                started = time.perf_counter()
                while rows < target:
                    batch = min(500, max(1, (target - rows) // per_user))
                    rows += _copy_rows(conn, _new_users(conn, batch), per_user, rng)
                conn.execute("analyze public.memories")
                log(f"scale: {rows:,} memories loaded ({time.perf_counter() - started:.0f} s); timing searches…")
                for label, user_id, own in (("typical user", typical, per_user), ("heavy user", heavy, heavy_memories)):
                    scope = Scope.service(user_id)
                    timings = []
                    for _ in range(repeats + 1):
                        for query in QUERIES:
                            result = retrieval.search_memories(
                                scope, query, limit=5, conninfo=uri, embed=lambda q, v=query_vectors[query]: v
                            )
                            timings.append(result.latency_ms - result.embed_ms)
                    timings = timings[len(QUERIES) :]  # first pass warms the plan cache
                    results.append({"rows": rows, "user": label, "own_memories": own, "sql_ms": timings})
    finally:
        db.close_pools()  # the throwaway server deletes its data directory when this process exits
    return {"results": results, "per_user": per_user}
