"""What "what did we talk about yesterday?" costs: the conversations of a day, a week and a month at scale.

    .venv/bin/python -m bench.conversations_by_day [--heavy 50000] [--others 300] [--rounds 25]

Loads the throwaway database bench.search_cost loads (one heavy user, one typical user of 500 turns and
`--others` users of 150, a turn a minute, sessions of 40, interleaved as real traffic writes them) and
times core.conversations.conversations_within, what the recall_conversations tool runs, as the service,
for a day, a week and a month of each user's turns: once with the turns-by-time index
(conversation_turns_user_time_idx) and once with it dropped, in the same database. Prints p50 / p95 per
user, window and index, the index's size, and the load average.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from bench import conversation_scale as scale
from bench import search_cost
from bench.stats import percentile

INDEX = "conversation_turns_user_time_idx"
WINDOWS = {"day": 1, "week": 7, "month": 31}
FIRST_DAY = date(2026, 1, 1)  # the day search_cost's turns start (a turn a minute: the heavy user's span 35 days)


def run(heavy: int = 50_000, others: int = 300, rounds: int = 25) -> dict:
    from core import db
    from core.conversations import conversations_within
    from core.date_window import DateWindow

    workdir = Path(tempfile.mkdtemp(prefix="mp-by-day-"))
    # atexit runs the last registered first: pgserver's hook stops the server before this deletes its folder
    atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    uri = scale.start_server(workdir, "1GB")
    ids = search_cost.load(uri, {"heavy": heavy, "typical": 500, **{f"other{i}": 150 for i in range(others)}})
    result: dict = {"load_before": os.getloadavg(), "turns": {"heavy": heavy, "typical": 500}, "times": {}}
    with db.admin_connection(uri) as conn:
        conn.autocommit = True
        result["index_bytes"] = conn.execute(f"select pg_relation_size('public.{INDEX}')").fetchone()[0]
        definition = conn.execute("select indexdef from pg_indexes where indexname = %s", (INDEX,)).fetchone()[0]
    for indexed in (True, False):
        if not indexed:
            with db.admin_connection(uri) as conn:
                conn.autocommit = True
                conn.execute(f"drop index public.{INDEX}")
                conn.execute("analyze public.conversation_turns")
        for user in ("heavy", "typical"):
            scope = db.Scope.service(ids[user])
            for window, days in WINDOWS.items():
                asked = DateWindow.from_dates(FIRST_DAY.isoformat(), (FIRST_DAY + timedelta(days=days - 1)).isoformat())
                times = []
                for _ in range(rounds + 1):
                    started = time.perf_counter()
                    held, _count = conversations_within(scope, asked, conninfo=uri)
                    times.append((time.perf_counter() - started) * 1000)
                assert held, f"no conversations of {user} in the {window} from {FIRST_DAY}"
                times = times[1:]  # the first warms the caches
                result["times"][(user, window, indexed)] = (percentile(times, 0.5), percentile(times, 0.95))
    with db.admin_connection(uri) as conn:
        conn.autocommit = True
        conn.execute(definition)  # as it was: the database is thrown away, but say what was measured
    db.close_pools()
    result["load_after"] = os.getloadavg()
    return result


def report(result: dict) -> str:
    lines = [
        f"load average before / after: {', '.join(f'{x:.2f}' for x in result['load_before'])} / "
        f"{', '.join(f'{x:.2f}' for x in result['load_after'])}",
        f"{INDEX}: {result['index_bytes'] / 1024 / 1024:.1f} MB",
        "",
        "| user | window | with the index p50 / p95 (ms) | without p50 / p95 (ms) |",
        "| --- | --- | ---: | ---: |",
    ]
    for user, turns in result["turns"].items():
        for window in WINDOWS:
            with_index = result["times"][(user, window, True)]
            without = result["times"][(user, window, False)]
            lines.append(
                f"| {user} ({turns:,} turns) | {window} | {with_index[0]:.1f} / {with_index[1]:.1f} | "
                f"{without[0]:.1f} / {without[1]:.1f} |"
            )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heavy", type=int, default=50_000, help="turns of the heavy user")
    parser.add_argument("--others", type=int, default=300, help="other users of 150 turns each")
    parser.add_argument("--rounds", type=int, default=25)
    args = parser.parse_args(argv)
    print(report(run(args.heavy, args.others, args.rounds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
