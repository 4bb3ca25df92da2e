"""What ranking past turns in context costs: the hybrid SQL with and without it, in one database.

    .venv/bin/python -m bench.context_cost [--heavy 50000] [--others 300] [--rounds 3]

Loads a throwaway embedded Postgres with one heavy user, one typical user (500
turns) and `--others` users of 150 turns each (so that the planner's per-user
estimates look like a real table's), the texts and embeddings made as
bench.conversation_scale makes them. Installs the search as it was before the
turn in context (supabase/migrations/20261127180000_text_weight_by_coverage.sql,
renamed) beside today's, and times both on the same questions, alternating which
runs first. Prints p50 / p95 / p99 per user and function, and the load average.
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
BEFORE = ROOT / "supabase" / "migrations" / "20261127180000_text_weight_by_coverage.sql"
FUNCTIONS = {
    "without the turn in context": "public.match_turns_without_context",
    "with the turn in context (today)": "public.match_conversation_turns_hybrid",
}
TURNS_PER_SESSION = 40
SEARCH = "select id from {}(%s::extensions.vector, %s, %s, 10, 0.5, 0.5, 2, 'any', null)"


def load(uri: str, sizes: dict[str, int]) -> dict[str, uuid.UUID]:
    """One auth user per name, with that many turns in sessions of 40."""
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
        scale.copy_turns(conn, rows)
        conn.commit()
        conn.autocommit = True
        conn.execute("vacuum analyze")
        before = BEFORE.read_text().replace(
            "public.match_conversation_turns_hybrid(", FUNCTIONS["without the turn in context"] + "("
        )
        conn.execute(before)
    return ids


def run(heavy: int = 50_000, others: int = 300, rounds: int = 3, questions: int = 60) -> dict:
    from core import db, embeddings

    workdir = Path(tempfile.mkdtemp(prefix="mp-context-cost-"))
    # atexit runs the last registered first: pgserver's hook (registered when the server starts) stops the
    # server before this one deletes its folder
    atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    uri = scale.start_server(workdir, "1GB")
    sizes = {"heavy": heavy, "typical": 500, **{f"other{i}": 150 for i in range(others)}}
    ids = load(uri, sizes)
    asked = scale.queries(questions)
    vectors = [scale.vector_text(v) for v in embeddings.embed(asked)]
    load_before = os.getloadavg()
    result: dict = {"users": {}, "load_before": load_before}
    with db.admin_connection(uri) as conn:
        for name in ("heavy", "typical"):
            times: dict[str, list[float]] = {label: [] for label in FUNCTIONS}
            for function in FUNCTIONS.values():  # warm both
                for text, vector in list(zip(asked, vectors, strict=True))[:5]:
                    conn.execute(SEARCH.format(function), (vector, text, ids[name])).fetchall()
            for round_number in range(rounds):
                order = list(FUNCTIONS.items())
                if round_number % 2:
                    order.reverse()
                for text, vector in zip(asked, vectors, strict=True):
                    for label, function in order:
                        started = time.perf_counter()
                        conn.execute(SEARCH.format(function), (vector, text, ids[name])).fetchall()
                        times[label].append((time.perf_counter() - started) * 1000)
            result["users"][name] = {
                "turns": sizes[name],
                **{
                    label: {p: percentile(values, q) for p, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))}
                    for label, values in times.items()
                },
            }
        # what each function ranked for the first question, so a reader (and the test) can see the two differ
        for label, function in FUNCTIONS.items():
            row = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    f"select * from {function}(%s::extensions.vector, %s, %s, 10, 0.5, 0.5, 2, 'any', null)",
                    (vectors[0], asked[0], ids["heavy"]),
                )
                .fetchone()
            )
            result.setdefault("first_hit", {})[label] = {column: row[column] for column in ("id", "rrf_score")} | {
                "context_rank": row.get("context_rank")
            }
    result["load_after"] = os.getloadavg()
    return result


def report(result: dict) -> str:
    lines = [
        "| user | turns | search | p50 | p95 | p99 |",
        "| --- | ---: | --- | ---: | ---: | ---: |",
    ]
    for name, data in result["users"].items():
        for label in FUNCTIONS:
            t = data[label]
            lines.append(
                f"| {name} | {data['turns']:,} | {label} | {t['p50']:.1f} ms | {t['p95']:.1f} ms | {t['p99']:.1f} ms |"
            )
    before, after = result["load_before"], result["load_after"]
    lines.append("")
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
    args = parser.parse_args(argv)
    print(report(run(args.heavy, args.others, args.rounds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
