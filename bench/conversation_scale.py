"""The conversation tier at scale, on a throwaway embedded Postgres.

    .venv/bin/python -m bench.conversation_scale [--full] [--json out.json]

Default size: 50,000 turns over 100 users (2 heavy users with 10,000 turns).
--full: 1,000,000 turns over 1,000 users (5 heavy users with 50,000 turns each;
the other 995 users' sizes are log-normal, so most users have a few hundred
turns and some a few thousand).

Data:
  * texts: conversations from docs/eval/make_conversations.py with other seeds
    (greetings, requests, answers, personal news), so the full-text branch sees
    a realistic vocabulary and realistic document frequencies;
  * embeddings: a sample of turns is embedded with the real model
    (all-MiniLM-L6-v2); every other turn gets a synthetic embedding made from a
    random real one: the real vector plus Gaussian noise scaled to keep a
    cosine similarity of about 0.9 with it, renormalised. The table therefore
    has the clustered neighbourhoods of real sentence embeddings (many turns
    close to each other, as "thanks!" and "ok cool" are), which is what an
    approximate index's recall depends on; uniform random vectors would not.
  * queries: real questions from the eval set, embedded with the real model.

Measured: COPY ingestion throughput (with the lexicon triggers and all
indexes), one-turn stores through core.conversations, table and index sizes,
hybrid SQL latency (p50/p95/p99; the query is embedded beforehand) by user
size, and for every vector index choice: latency and recall@10 against exact
cosine computed in numpy.
"""

from __future__ import annotations

import argparse
import atexit
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench.stats import percentile

ROOT = Path(__file__).resolve().parent.parent
DIMS = 384
NOISE_COSINE = 0.9


@dataclass(frozen=True)
class Size:
    turns: int
    users: int
    heavy_users: int
    heavy_turns: int
    real_sample: int
    label: str


SMALL = Size(turns=50_000, users=100, heavy_users=2, heavy_turns=10_000, real_sample=4_000, label="small")
FULL = Size(turns=1_000_000, users=1_000, heavy_users=5, heavy_turns=50_000, real_sample=20_000, label="full")


def log(message: str) -> None:
    print(f"[scale {time.strftime('%H:%M:%S')}] {message}", flush=True)


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


def user_sizes(size: Size, rng: np.random.Generator) -> list[int]:
    """Heavy users first, then log-normal sizes for the rest, summing to size.turns."""
    rest = size.turns - size.heavy_users * size.heavy_turns
    n = size.users - size.heavy_users
    raw = rng.lognormal(mean=0.0, sigma=1.0, size=n)
    sizes = np.maximum(20, np.round(raw / raw.sum() * rest)).astype(int)
    sizes[np.argmax(sizes)] += rest - sizes.sum()  # exact total
    return [size.heavy_turns] * size.heavy_users + sorted(sizes.tolist(), reverse=True)


def turn_texts(count: int, seed: int = 7) -> list[tuple[str, str]]:
    """(speaker, content) pairs from generated conversations."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_conversations", ROOT / "docs" / "eval" / "make_conversations.py"
    )
    generator = importlib.util.module_from_spec(spec)
    sys.modules["make_conversations"] = generator  # dataclasses look their module up
    spec.loader.exec_module(generator)
    out: list[tuple[str, str]] = []
    index = 0
    while len(out) < count:
        _, turns, _ = generator.build_user(random.Random(seed * 1_000_003 + index), index)
        out.extend((t.speaker, t.content) for t in turns)
        index += 1
    return out[:count]


def synthetic_embeddings(real: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """Perturbations of real embeddings: cos(real, synthetic) is about NOISE_COSINE on average."""
    base = real[rng.integers(0, len(real), size=count)]
    # For unit x and noise e ~ N(0, s^2 I), cos(x, x + e) ~ 1 / sqrt(1 + s^2 * d).
    sigma = math.sqrt((1 / NOISE_COSINE**2 - 1) / DIMS)
    out = base + rng.standard_normal(base.shape, dtype=np.float32) * sigma
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32)


def queries(count: int) -> list[str]:
    rows = []
    for split in ("dev", "test"):
        path = ROOT / "docs" / "eval" / "conversations" / split / "queries.jsonl"
        rows += [json.loads(line)["query"] for line in path.read_text().splitlines() if line.strip()]
    random.Random(11).shuffle(rows)
    return rows[:count]


# ---------------------------------------------------------------------------
# Database
# ---------------------------------------------------------------------------


def start_server(workdir: Path, shared_buffers: str) -> str:
    """A throwaway embedded server, restarted once with a larger shared_buffers."""
    from pgserver._commands import pg_ctl

    from core import db

    uri = db.start_embedded(workdir / "pg", cleanup_mode="delete")
    with db.admin_connection(uri) as conn:
        conn.execute(f"alter system set shared_buffers = '{shared_buffers}'")
        conn.execute("alter system set max_wal_size = '4GB'")
    server = db._embedded_servers[(workdir / "pg").resolve()]
    with server._lock:
        pg_ctl(["-w", "stop"], pgdata=server.pgdata, user=server.system_user)
        server.ensure_postgres_running()
    db.migrate(uri, embedded=True, echo=lambda *_: None)
    return server.uri()  # with its passfile: the embedded server requires passwords


def copy_turns(conn, rows) -> None:
    with (
        conn.cursor() as cur,
        cur.copy(
            "copy public.conversation_turns (user_id, session_id, turn_index, speaker, content, "
            "created_at, embedding) from stdin"
        ) as copy,
    ):
        for row in rows:
            copy.write_row(row)


def vector_text(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in vector) + "]"


def sizes_of(conn) -> dict[str, int]:
    from core import vector_indexes

    names = [
        "public.conversation_turns",
        "public.conversation_turns_pkey",
        "public.conversation_turns_user_embedding_idx",
        "public.conversation_turns_owner_fts_idx",
        "public.conversation_turns_one_row_per_turn",
        "public.conversation_turns_user_time_idx",
        "public.conversation_lexemes",
        "public.conversation_lexicon_totals",
    ]
    out = {}
    for name in names:
        out[name.split(".")[1]] = conn.execute("select pg_relation_size(%s::regclass)", (name,)).fetchone()[0]
    out["heavy users' HNSW indexes"] = conn.execute(
        "select coalesce(sum(pg_relation_size(oid)), 0)::bigint from pg_class where relname like %s",
        (vector_indexes.NAME_PREFIX.replace("_", "\\_") + "%",),
    ).fetchone()[0]
    out["conversation_turns (toast)"] = conn.execute(
        "select coalesce(pg_relation_size(reltoastrelid), 0) from pg_class "
        "where oid = 'public.conversation_turns'::regclass"
    ).fetchone()[0]
    out["conversation_turns (total)"] = conn.execute(
        "select pg_total_relation_size('public.conversation_turns')"
    ).fetchone()[0]
    return out


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------


def plan_indexes(conn, sql: str, params) -> set[str]:
    """The names of the indexes the plan of one statement reads."""
    plan = conn.execute("explain (format json) " + sql, params).fetchone()[0]
    found, nodes = set(), [plan[0]["Plan"]]
    while nodes:
        node = nodes.pop()
        if "Index Name" in node:
            found.add(node["Index Name"])
        nodes.extend(node.get("Plans", []))
    return found


def timed(conn, sql: str, params, repeats: int = 1) -> tuple[list, float]:
    started = time.perf_counter()
    rows = None
    for _ in range(repeats):
        rows = conn.execute(sql, params).fetchall()
    return rows, (time.perf_counter() - started) * 1000 / repeats


HYBRID_SQL = (
    "select id from public.match_conversation_turns_hybrid(%s::extensions.vector, %s, %s, 10, %s, %s, %s, 'any', %s)"
)


def run(
    size: Size = SMALL,
    *,
    n_queries: int = 40,
    repeats: int = 3,
    shared_buffers: str = "1GB",
    index_choices: bool = True,
) -> dict[str, Any]:
    from core import db, embeddings, vector_indexes
    from core.config import get_settings

    settings = get_settings()
    rng = np.random.default_rng(7)
    result: dict[str, Any] = {"size": size.__dict__, "shared_buffers": shared_buffers, "load_before": os.getloadavg()}
    workdir = Path(tempfile.mkdtemp(prefix="mp-bench-conv-"))
    # atexit runs last-registered first: pgserver's hook (registered when the server starts) deletes
    # the data directory, then this removes the empty parent.
    atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    try:
        uri = start_server(workdir, shared_buffers)
        sizes = user_sizes(size, rng)
        log(
            f"{size.turns:,} turns over {size.users:,} users (largest {sizes[0]:,}, median "
            f"{int(np.median(sizes)):,}, smallest {sizes[-1]:,})"
        )
        texts = turn_texts(size.turns)
        log(f"embedding a real sample of {size.real_sample:,} turns")
        started = time.perf_counter()
        sample_index = rng.choice(size.turns, size=size.real_sample, replace=False)
        real = embeddings.embed([f"{texts[i][0]}: {texts[i][1]}" for i in sample_index])
        result["embed_rate_per_s"] = size.real_sample / (time.perf_counter() - started)
        vectors = synthetic_embeddings(real, size.turns, rng)
        vectors[sample_index] = real
        query_texts = queries(n_queries)
        query_vectors = embeddings.embed(query_texts)

        # Users and their turns, interleaved in time like real traffic: every user's sessions are
        # spread over the whole load, so a user's rows are scattered across the heap.
        with db.admin_connection(uri) as conn:
            user_ids = [
                row[0]
                for row in conn.execute(
                    "insert into auth.users (is_anonymous) select true from generate_series(1, %s) returning id",
                    (size.users,),
                ).fetchall()
            ]
        owner = np.repeat(np.arange(size.users), sizes)
        rng.shuffle(owner)
        session_len = 30
        seen = np.zeros(size.users, dtype=int)
        start_time = datetime(2024, 1, 1, tzinfo=UTC)
        rows_of_user: list[list[int]] = [[] for _ in range(size.users)]
        batch, batch_size, loaded = [], 20_000, 0
        session_rows = set()
        log("loading (COPY, one statement per 20,000 turns)")
        load_started = time.perf_counter()
        db_seconds = 0.0
        float_batch = []
        with db.admin_connection(uri) as conn:
            # float32 copies of the same embeddings, keyed by load position, for the index choices
            conn.execute(
                "create table bench_float (pos int primary key, user_id uuid not null, "
                "embedding extensions.vector(384) not null)"
            )
            for i in range(size.turns):
                u = int(owner[i])
                n = int(seen[u])
                seen[u] += 1
                session = f"bench-{u}-{n // session_len}"
                if (u, session) not in session_rows:
                    session_rows.add((u, session))
                    conn.execute(
                        "insert into public.sessions (session_id, user_id) values (%s, %s)", (session, user_ids[u])
                    )
                rows_of_user[u].append(i)
                speaker, content = texts[i]
                literal = vector_text(vectors[i])
                batch.append(
                    (
                        user_ids[u],
                        session,
                        n % session_len,
                        speaker,
                        content,
                        start_time + timedelta(seconds=i * 30),
                        literal,
                    )
                )
                if index_choices:
                    float_batch.append((i, user_ids[u], literal))
                if len(batch) == batch_size or i == size.turns - 1:
                    copy_started = time.perf_counter()
                    with conn.transaction():
                        copy_turns(conn, batch)
                    db_seconds += time.perf_counter() - copy_started
                    if float_batch:
                        with (
                            conn.transaction(),
                            conn.cursor() as cur,
                            cur.copy("copy bench_float (pos, user_id, embedding) from stdin") as copy,
                        ):
                            for row in float_batch:
                                copy.write_row(row)
                    loaded += len(batch)
                    batch, float_batch = [], []
                    if loaded % 100_000 == 0 or loaded == size.turns:
                        log(f"  {loaded:,} turns ({loaded / (time.perf_counter() - load_started):,.0f}/s)")
            load_s = time.perf_counter() - load_started
            conn.execute("vacuum analyze public.conversation_turns")
            conn.execute("create index bench_float_cover on bench_float (user_id) include (pos, embedding)")
            conn.execute("vacuum analyze bench_float")
            conn.execute("analyze public.conversation_lexemes")
            result["ingest"] = {
                "turns": size.turns,
                "seconds": load_s,
                "turns_per_s": size.turns / load_s,
                "copy_seconds": db_seconds,
                "copy_turns_per_s": size.turns / db_seconds,
            }
        # what the maintenance job (python -m core cleanup) does after such a load: the heavy users' own
        # HNSW indexes, which their searches then read
        changes = vector_indexes.keep_vector_indexes(conninfo=uri)
        result["vector_indexes"] = {
            "users": len(changes.built),
            "min_turns": settings.vector_index_min_turns,
            "seconds": changes.seconds,
        }
        log(f"built {len(changes.built)} heavy-user vector index(es) in {changes.seconds:.0f} s")
        with db.admin_connection(uri) as conn:
            result["sizes"] = sizes_of(conn)
        log(f"loaded in {load_s:.0f} s; sizes {json.dumps(result['sizes'])}")

        with db.admin_connection(uri) as conn:
            writer = conn.execute("insert into auth.users (is_anonymous) values (true) returning id").fetchone()[0]
        result["store_turn"] = single_turn_stores(uri, writer, vectors[:1])
        probe = probe_users(sizes)
        result["hybrid"] = hybrid_latency(uri, user_ids, sizes, probe, query_texts, query_vectors, repeats, settings)
        if size.heavy_users > 1:
            # a heavy user's new turn also goes into their own HNSW index; written to the last heavy user,
            # never the probed one (user 0), whose rows the recall checks below compare with
            heavy_writer = size.heavy_users - 1
            result["store_turn_heavy"] = {
                **single_turn_stores(uri, user_ids[heavy_writer], vectors[:1]),
                "turns": sizes[heavy_writer],
                "own_index": uuid.UUID(str(user_ids[heavy_writer])) in changes.built,
            }
        truth = exact_truth(vectors, rows_of_user, probe, query_vectors)
        if index_choices:
            # each choice on its own: the heavy users' indexes would serve the exact scan's statements too
            vector_indexes.keep_vector_indexes(min_turns=10**9, conninfo=uri)
            result["index_choices"] = vector_index_choices(uri, user_ids, sizes, probe, query_vectors, truth, repeats)
    finally:
        db.close_pools()
    result["load_after"] = os.getloadavg()
    return result


def probe_users(sizes: list[int]) -> dict[str, int]:
    """Users to time, by size: a heavy one, the median user ("typical") and a spread of the others."""
    heavy = max(sizes)
    others = [u for u in np.argsort(sizes, kind="stable") if sizes[u] < heavy]
    probe = {"heavy": 0, "typical": int(others[len(others) // 2])}
    for q in (0.1, 0.75, 0.9, 0.99):
        probe[f"p{int(q * 100)}"] = int(others[min(len(others) - 1, int(q * len(others)))])
    return probe


def single_turn_stores(uri: str, user_id: uuid.UUID, vector: np.ndarray, n: int = 60) -> dict[str, float]:
    """The agent's write path: store_turn one turn at a time (embedding computed beforehand)."""
    from core import conversations, db

    scope = db.Scope.service(user_id)
    timings = []
    original = db.get_pool
    # every pool the write path asks for (it names the service login's URI) is the throwaway server's
    db.get_pool = lambda conninfo=None, *, purpose="queries": original(uri, purpose=purpose)
    try:
        for i in range(n):
            started = time.perf_counter()
            conversations.store_turn(
                scope,
                f"bench-live-{user_id}",
                i,
                "user",
                f"live turn number {i} about hiking",
                embed=lambda texts: np.repeat(vector, len(texts), axis=0),
            )
            timings.append((time.perf_counter() - started) * 1000)
    finally:
        db.get_pool = original
    timings = timings[5:]
    return {"p50": percentile(timings, 0.5), "p95": percentile(timings, 0.95), "n": len(timings)}


def hybrid_latency(uri, user_ids, sizes, probe, query_texts, query_vectors, repeats, settings):
    from core import db

    out = {}
    literals = [vector_text(v) for v in query_vectors]
    with db.admin_connection(uri) as conn:
        conn.execute("set role service_role")
        for label, u in probe.items():
            timings = []
            for r in range(repeats + 1):
                for text, vec in zip(query_texts, literals, strict=True):
                    _, ms = timed(
                        conn,
                        HYBRID_SQL,
                        (
                            vec,
                            text,
                            user_ids[u],
                            settings.rrf_vector_weight,
                            settings.rrf_text_weight,
                            settings.rrf_k,
                            None,
                        ),
                    )
                    if r:  # the first pass warms caches
                        timings.append(ms)
            out[label] = {
                "turns": sizes[u],
                "p50": percentile(timings, 0.5),
                "p95": percentile(timings, 0.95),
                "p99": percentile(timings, 0.99),
                "n": len(timings),
            }
            # each branch alone (same function, the other branch given no input)
            for branch, make in (("vector", lambda t, v: (v, None)), ("text", lambda t, v: (None, t))):
                branch_ms = []
                for text, vec in zip(query_texts, literals, strict=True):
                    qv, qt = make(text, vec)
                    branch_ms.append(timed(conn, HYBRID_SQL, (qv, qt, user_ids[u], 0.5, 0.5, settings.rrf_k, None))[1])
                out[label][f"{branch}_p50"] = percentile(branch_ms, 0.5)
                out[label][f"{branch}_p95"] = percentile(branch_ms, 0.95)
            log(
                f"hybrid {label:8} ({sizes[u]:>6,} turns): p50 {out[label]['p50']:.1f} ms, "
                f"p95 {out[label]['p95']:.1f} ms, p99 {out[label]['p99']:.1f} ms; vector alone p50 "
                f"{out[label]['vector_p50']:.1f}, text alone p50 {out[label]['text_p50']:.1f} ms"
            )
    return out


def exact_truth(vectors, rows_of_user, probe, query_vectors, k: int = 10):
    """Per probed user and query: load positions of the exact top-k by float32 cosine (numpy)."""
    truth = {}
    for label, u in probe.items():
        rows = np.array(rows_of_user[u])
        sims = vectors[rows] @ query_vectors.T  # (turns, queries)
        truth[label] = [
            {int(i) for i in rows[np.argsort(-sims[:, q], kind="stable")[:k]]} for q in range(len(query_vectors))
        ]
    return truth


# Turns carry their load position in created_at (one turn every 30 s from 2024-01-01).
POSITION = "(extract(epoch from created_at - '2024-01-01'::timestamptz) / 30)::int"


def vector_index_choices(uri, user_ids, sizes, probe, query_vectors, truth, repeats):
    """Each way of running one user's vector branch: latency and recall@10 against float32 cosine.

    Every query returns load positions (see POSITION), compared with the numpy truth."""
    from core import db

    literals = [vector_text(v) for v in query_vectors]
    choices: list[dict[str, Any]] = []

    def measure(
        name: str,
        sql: str,
        setup: list[str],
        note: str,
        users: tuple[str, ...] | None = None,
        reads: str | None = None,
    ):
        # setup may drop indexes: it runs in a transaction that is rolled back afterwards
        with db.admin_connection(uri) as conn, conn.transaction(force_rollback=True):
            for statement in setup:
                conn.execute(statement)
            for label, u in probe.items():
                if users is not None and label not in users:
                    continue
                if reads is not None:
                    # the planner may prefer another index for a small user; then the row would time that
                    # index under this one's name (it did: the index by time, added later, for typical users)
                    used = plan_indexes(conn, sql, {"q": literals[0], "u": user_ids[u]})
                    if not any(index.startswith(reads) for index in used):
                        raise RuntimeError(f"{name}: the plan for the {label} user reads {sorted(used)}, not {reads}")
                timings, recalls = [], []
                for r in range(repeats + 1):
                    for q, vec in enumerate(literals):
                        rows, ms = timed(conn, sql, {"q": vec, "u": user_ids[u]})
                        if r:
                            timings.append(ms)
                        else:
                            got = {row[0] for row in rows}
                            recalls.append(len(got & truth[label][q]) / len(truth[label][q]))
                entry = {
                    "choice": name,
                    "user": label,
                    "turns": sizes[u],
                    "note": note,
                    "p50": percentile(timings, 0.5),
                    "p95": percentile(timings, 0.95),
                    "p99": percentile(timings, 0.99),
                    "recall@10": float(np.mean(recalls)),
                }
                choices.append(entry)
                log(
                    f"{name:44} {label:8} p50 {entry['p50']:7.1f} p95 {entry['p95']:7.1f} ms "
                    f"recall@10 {entry['recall@10']:.3f}"
                )

    def size_mb(conn, relation: str) -> float:
        return conn.execute("select pg_total_relation_size(%s::regclass)", (relation,)).fetchone()[0] / 2**20

    # The vector branch the app runs: the top 10 of an exact scan of the user's halfvec embeddings.
    # (Positions are read back for the 10 winners only, after the ordering.)
    half_exact = (
        f"select {POSITION} from public.conversation_turns where id in ("
        "select id from public.conversation_turns where user_id = %(u)s "
        "order by embedding <=> %(q)s::extensions.halfvec(384), id limit 10)"
    )
    measure(
        "exact halfvec, covering index (default below 10,000 turns)",
        half_exact,
        [],
        "index-only scan of (user_id) include (id, session_id, embedding, created_at)",
    )
    without_covering = ["drop index public.conversation_turns_user_embedding_idx"]
    measure(
        "exact halfvec, heap rows",
        half_exact,
        without_covering,
        "the user's rows through an index on user_id (by session or by time), then the heap",
    )

    float_exact = (
        "select pos from bench_float where user_id = %(u)s "
        "order by embedding <=> %(q)s::extensions.vector, pos limit 10"
    )
    with db.admin_connection(uri) as conn:
        float_mb = size_mb(conn, "bench_float")
    measure(
        "exact float32 (vector), covering index",
        float_exact,
        [],
        f"a float32 copy ({float_mb:,.0f} MB with its covering index)",
    )

    with db.admin_connection(uri) as conn:
        log("building HNSW on the halfvec embeddings (m 16, ef_construction 64)")
        started = time.perf_counter()
        conn.execute("set maintenance_work_mem = '3GB'")
        conn.execute(
            "create index bench_hnsw on public.conversation_turns using hnsw (embedding extensions.halfvec_cosine_ops)"
        )
        build_s = time.perf_counter() - started
        hnsw_mb = size_mb(conn, "bench_hnsw")
    with db.admin_connection(uri) as conn:
        # every index of the table but its primary key and the HNSW ones measured: none of them is then
        # a way round the graph (the constraint's index goes with the constraint)
        others = [
            row[0]
            for row in conn.execute(
                "select c.relname from pg_index i join pg_class c on c.oid = i.indexrelid "
                "where i.indrelid = 'public.conversation_turns'::regclass and not i.indisprimary "
                "and c.relname not like 'bench\\_hnsw%' "
                "and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid)"
            ).fetchall()
        ]
    hnsw_only = [
        *(f"drop index public.{name}" for name in others),
        "alter table public.conversation_turns drop constraint conversation_turns_one_row_per_turn",
        "set local enable_seqscan = off",
    ]
    for ef, mode in ((40, "relaxed_order"), (100, "relaxed_order"), (200, "strict_order")):
        measure(
            f"HNSW ef_search {ef}, iterative {mode}",
            f"select {POSITION} from public.conversation_turns where user_id = %(u)s "
            "order by embedding <=> %(q)s::extensions.halfvec(384) limit 10",
            [*hnsw_only, f"set local hnsw.ef_search = {ef}", f"set local hnsw.iterative_scan = {mode}"],
            f"one HNSW index over all users, user filter applied during the scan; "
            f"build {build_s:,.0f} s, {hnsw_mb:,.0f} MB",
            reads="bench_hnsw",
        )
    with db.admin_connection(uri) as conn:
        conn.execute("drop index bench_hnsw")

    # HNSW over one user's turns alone (a partial index), so the scan has no filter to miss rows by: only a
    # heavy user would get one, the others keep the exact scan. The predicate must name the user literally
    # for the planner to use the index.
    heavy_id = user_ids[probe["heavy"]]
    with db.admin_connection(uri) as conn:
        log("building HNSW on the heavy user's turns alone (m 16, ef_construction 200)")
        started = time.perf_counter()
        conn.execute("set maintenance_work_mem = '3GB'")
        conn.execute(
            "create index bench_hnsw_heavy on public.conversation_turns using hnsw "
            "(embedding extensions.halfvec_cosine_ops) with (m = 16, ef_construction = 200) "
            f"where user_id = '{heavy_id}'"
        )
        heavy_build_s = time.perf_counter() - started
        heavy_mb = size_mb(conn, "bench_hnsw_heavy")
    for ef in (500, 1000):
        measure(
            f"HNSW of the heavy user alone, ef_search {ef}" + (" (default from 10,000 turns)" if ef == 1000 else ""),
            f"select {POSITION} from public.conversation_turns where user_id = '{heavy_id}' "
            "order by embedding <=> %(q)s::extensions.halfvec(384) limit 10",
            [*hnsw_only, f"set local hnsw.ef_search = {ef}"],
            f"a partial index (where user_id = the user) over {sizes[probe['heavy']]:,} turns, no filter in the "
            f"scan; m 16, ef_construction 200, build {heavy_build_s:,.0f} s, {heavy_mb:,.0f} MB",
            users=("heavy",),
            reads="bench_hnsw_heavy",
        )
    with db.admin_connection(uri) as conn:
        conn.execute("drop index bench_hnsw_heavy")

    with db.admin_connection(uri) as conn:
        log("hash-partitioned copy (16 partitions) with an HNSW index per partition")
        conn.execute(
            "create table bench_parts (pos int, user_id uuid, "
            "embedding extensions.halfvec(384)) partition by hash (user_id)"
        )
        for i in range(16):
            conn.execute(
                f"create table bench_parts_{i} partition of bench_parts for values with (modulus 16, remainder {i})"
            )
        conn.execute(f"insert into bench_parts select {POSITION}, user_id, embedding from public.conversation_turns")
        started = time.perf_counter()
        conn.execute("set maintenance_work_mem = '3GB'")
        conn.execute("create index on bench_parts using hnsw (embedding extensions.halfvec_cosine_ops)")
        parts_build = time.perf_counter() - started
        conn.execute("vacuum analyze bench_parts")
    measure(
        "16 hash partitions, HNSW each, ef 100",
        "select pos from bench_parts where user_id = %(u)s "
        "order by embedding <=> %(q)s::extensions.halfvec(384) limit 10",
        [
            "set local enable_seqscan = off",
            "set local hnsw.ef_search = 100",
            "set local hnsw.iterative_scan = relaxed_order",
        ],
        f"partition by hash(user_id), HNSW per partition, user filter during the scan; build {parts_build:,.0f} s",
        reads="bench_parts_",
    )

    with db.admin_connection(uri) as conn:
        log("binary-quantized copy (384 bits per turn) with its own covering index")
        conn.execute(
            "create table bench_bq as select pos, user_id, "
            "extensions.binary_quantize(embedding)::bit(384) as bq from bench_float"
        )
        conn.execute("create index on bench_bq (user_id) include (pos, bq)")
        conn.execute("vacuum analyze bench_bq")
        bq_mb = size_mb(conn, "bench_bq")
    for depth in (200, 400):
        measure(
            f"binary pre-filter ({depth}) + float32 re-rank",
            "with c as materialized (select pos from bench_bq where user_id = %(u)s "
            "order by bq <~> extensions.binary_quantize(%(q)s::extensions.vector)::bit(384) "
            f"limit {depth}) select f.pos from bench_float f join c using (pos) "
            "order by f.embedding <=> %(q)s::extensions.vector, f.pos limit 10",
            [],
            f"Hamming distance over the user's bit codes ({bq_mb:,.0f} MB), the best {depth} re-ranked by exact cosine",
        )
    return choices


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="1,000,000 turns over 1,000 users")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-index-choices", action="store_true")
    parser.add_argument("--json", type=Path, help="write the raw results here")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = run(
        FULL if args.full else SMALL,
        n_queries=args.queries,
        repeats=args.repeats,
        index_choices=not args.no_index_choices,
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
