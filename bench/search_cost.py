"""What a change to the past-turn search costs: an earlier migration's hybrid SQL beside today's, in one database.

    .venv/bin/python -m bench.search_cost [--before MIGRATION] [--heavy 50000] [--others 300] [--rounds 3]

Loads a throwaway embedded Postgres with one heavy user, one typical user (500
turns) and `--others` users of 150 turns each (so that the planner's per-user
estimates look like a real table's), the texts and embeddings made as
bench.conversation_scale makes them, the users' turns interleaved as real
traffic writes them. Installs the search as `--before` defined
it (a migration file that creates match_conversation_turns_hybrid, renamed)
beside today's, and times both on the same questions, alternating which runs
first. Prints p50 / p95 / p99 per user and function, how many questions both
answered with the same rows, and the load average.

    --before supabase/migrations/20261127180000_text_weight_by_coverage.sql     # the turn in context
    --before supabase/migrations/20261127190000_turns_in_context.sql            # each turn read once
    --before supabase/migrations/20261202000000_past_turns_within_dates.sql     # a heavy user's own index
    --before supabase/migrations/20261203000000_vector_index_per_heavy_user.sql # the vector weight by
                                                                                # confidence (default)

Before timing, the maintenance job's heavy-user HNSW indexes are built (core.vector_indexes), as a
deployment has them; a `--before` search that ranks exactly does not read them.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from psycopg.rows import dict_row

from bench import conversation_scale as scale
from bench.stats import percentile

ROOT = Path(__file__).resolve().parent.parent
BEFORE = ROOT / "supabase" / "migrations" / "20261203000000_vector_index_per_heavy_user.sql"
FUNCTIONS = {"before": "public.match_turns_before", "today": "public.match_conversation_turns_hybrid"}
TURNS_PER_SESSION = 40
SEARCH = "select * from {}(%s::extensions.vector, %s, %s, 10, 0.5, 0.5, 2, 'any', null)"
# what two searches must agree on to count as the same answer (the columns every version returns), scores
# to 9 decimals: a sum of the same word weights added in another order differs in the 15th digit
SAME = ("id", "vector_rank", "text_rank", "text_score", "rrf_score")


def _rounded(value):
    return round(value, 9) if isinstance(value, float) else value


def search_defined_in(migration: Path) -> str:
    """The statement of a migration that creates match_conversation_turns_hybrid, alone: the migration's
    other statements (indexes, grants, dropping an older signature) are for the table, not the copy."""
    text = migration.read_text()
    start = text.find("create or replace function public.match_conversation_turns_hybrid(")
    end = text.find("\n$$;", start)
    if start < 0 or end < 0:
        raise SystemExit(f"{migration} does not create public.match_conversation_turns_hybrid")
    return text[start : end + 4]


def load(uri: str, sizes: dict[str, int], before: Path = BEFORE) -> dict[str, uuid.UUID]:
    """One auth user per name, with that many turns in sessions of 40; `before`'s search installed beside today's."""
    from core import db, embeddings

    total = sum(sizes.values())
    texts = scale.turn_texts(total)
    real = embeddings.embed([f"{speaker}: {content}" for speaker, content in texts[:3000]])
    vectors = scale.synthetic_embeddings(real, total, np.random.default_rng(3))
    ids = {name: uuid.uuid4() for name in sizes}
    start = datetime(2026, 1, 1, tzinfo=UTC)
    rows, position = [], 0
    with db.admin_connection(uri) as conn:
        for name, count in sizes.items():
            conn.execute("insert into auth.users (id, is_anonymous) values (%s, true)", (ids[name],))
            for session in range((count + TURNS_PER_SESSION - 1) // TURNS_PER_SESSION):
                conn.execute(
                    "insert into public.sessions (session_id, user_id) values (%s, %s)",
                    (f"{name}-{session}", ids[name]),
                )
            for turn in range(count):
                speaker, content = texts[position]
                rows.append(
                    (
                        ids[name],
                        f"{name}-{turn // TURNS_PER_SESSION}",
                        turn % TURNS_PER_SESSION,
                        speaker,
                        content,
                        start + timedelta(minutes=turn),
                        scale.vector_text(vectors[position]),
                    )
                )
                position += 1
        # interleaved in time like real traffic (as bench.conversation_scale loads them): a user's turns are
        # scattered over the heap, so reading a turn's row is a page of its own
        np.random.default_rng(5).shuffle(rows)
        scale.copy_turns(conn, rows)
        conn.commit()
        conn.autocommit = True
        conn.execute("vacuum analyze")
        conn.execute(
            search_defined_in(before).replace("public.match_conversation_turns_hybrid(", FUNCTIONS["before"] + "(")
        )
    return ids


def run(heavy: int = 50_000, others: int = 300, rounds: int = 3, questions: int = 60, before: Path = BEFORE) -> dict:
    from core import db, embeddings, vector_indexes

    workdir = Path(tempfile.mkdtemp(prefix="mp-search-cost-"))
    # atexit runs the last registered first: pgserver's hook (registered when the server starts) stops the
    # server before this one deletes its folder
    atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    uri = scale.start_server(workdir, "1GB")
    sizes = {"heavy": heavy, "typical": 500, **{f"other{i}": 150 for i in range(others)}}
    ids = load(uri, sizes, before)
    # as the maintenance job leaves a deployment: the heavy user's own HNSW index, which today's search reads
    built = vector_indexes.keep_vector_indexes(conninfo=uri)
    asked = scale.queries(questions)
    vectors = [scale.vector_text(v) for v in embeddings.embed(asked)]
    load_before = os.getloadavg()
    result: dict = {
        "users": {},
        "load_before": load_before,
        "before": before.name,
        "vector_indexes": {"users": len(built.built), "seconds": built.seconds},
    }
    with db.admin_connection(uri) as conn, conn.cursor(row_factory=dict_row) as cur:
        for name in ("heavy", "typical"):
            times: dict[str, list[float]] = {label: [] for label in FUNCTIONS}
            answers: dict[str, list[list[tuple]]] = {label: [] for label in FUNCTIONS}
            for function in FUNCTIONS.values():  # warm both
                for text, vector in list(zip(asked, vectors, strict=True))[:5]:
                    cur.execute(SEARCH.format(function), (vector, text, ids[name])).fetchall()
            for round_number in range(rounds):
                order = list(FUNCTIONS.items())
                if round_number % 2:
                    order.reverse()
                for text, vector in zip(asked, vectors, strict=True):
                    for label, function in order:
                        started = time.perf_counter()
                        rows = cur.execute(SEARCH.format(function), (vector, text, ids[name])).fetchall()
                        times[label].append((time.perf_counter() - started) * 1000)
                        if round_number == 0:
                            answers[label].append([tuple(_rounded(row[c]) for c in SAME) for row in rows])
            result["users"][name] = {
                "turns": sizes[name],
                "same": sum(a == b for a, b in zip(*answers.values(), strict=True)),
                "questions": len(asked),
                **{
                    label: {p: percentile(values, q) for p, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))}
                    for label, values in times.items()
                },
            }
    result["load_after"] = os.getloadavg()
    return result


def report(result: dict) -> str:
    lines = [
        "| user | turns | search | p50 | p95 | p99 | the same answer |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for name, data in result["users"].items():
        for label in FUNCTIONS:
            t = data[label]
            search = f"before ({result['before']})" if label == "before" else "today"
            same = f"{data['same']} of {data['questions']}" if label == "today" else ""
            lines.append(
                f"| {name} | {data['turns']:,} | {search} | {t['p50']:.1f} ms | {t['p95']:.1f} ms | {t['p99']:.1f} ms"
                f" | {same} |"
            )
    before, after = result["load_before"], result["load_after"]
    built = result["vector_indexes"]
    lines.append("")
    lines.append(f"Heavy-user HNSW indexes built by the maintenance job: {built['users']} ({built['seconds']:.0f} s).")
    lines.append(
        "Load average (1, 5, 15 min) before / after: "
        + ", ".join(f"{x:.2f}" for x in before)
        + " / "
        + ", ".join(f"{x:.2f}" for x in after)
    )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heavy", type=int, default=50_000, help="turns of the heavy user")
    parser.add_argument("--others", type=int, default=300, help="other users of 150 turns each")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--before", type=Path, default=BEFORE, help="the migration whose search is compared with today's"
    )
    args = parser.parse_args(argv)
    print(report(run(args.heavy, args.others, args.rounds, before=args.before)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
