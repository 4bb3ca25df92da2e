"""How many simultaneous voice calls one app process carries.

For 1, 2, 3 and 4 calls at once (each a different signed-in user with its own fake browser), every
caller says the benchmark's utterances with a pause to listen and think between turns (a seeded
random 1–2.5 s after the agent finishes), the callers starting a little apart so their turns do not
line up. Per call count: end of speech -> first agent audio p50/p95 over every turn of every call,
and the process's CPU use (user + system time of all its threads / wall time / cores).
"""

from __future__ import annotations

import os
import random
import resource
import threading
import time
import uuid
from typing import Any

from agent import end_call, open_call, prewarm_voice
from bench.stats import summary
from bench.voice import UTTERANCES, spoken
from core import identity
from core.db import admin_connection
from tests.support.audio import FakeBrowser
from tests.support.events import wait_for_event

PIPER_RATE = 22_050
P95_LIMIT_MS = 1500


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _caller(call, texts: list[str], recordings: dict, seed: int, start_delay: float, out: list, log) -> None:
    rng = random.Random(seed)
    with FakeBrowser(call) as browser:
        call.ready.result(timeout=180)
        time.sleep(1.0 + start_delay)
        for text in texts:
            cursor = call.events_since(0)[1]
            browser.say(recordings[text], PIPER_RATE, lead_silence=0.2, tail_silence=0.0)
            try:
                said = wait_for_event(
                    call,
                    lambda e: e["type"] == "transcript" and e["role"] == "user" and e.get("final"),
                    cursor=cursor,
                    timeout=30,
                )
                wait_for_event(
                    call, lambda e, t=said["turn"]: e["type"] == "turn_done" and e["turn"] == t, cursor=cursor,
                    timeout=60,
                )  # fmt: skip
            except TimeoutError:
                log(f"capacity: a turn got no reply ({text!r})")
                out.append(None)
                continue
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not (
                call.agent_state == "listening" and call.speaker.buffered_seconds == 0
            ):
                time.sleep(0.05)
            first = browser.first_sound_after(browser.speech_ended_at[-1])
            out.append(None if first is None else (first - browser.speech_ended_at[-1]) * 1000)
            time.sleep(rng.uniform(1.0, 2.5))


def run_level(count: int, turns_per_call: int, log=print) -> dict[str, Any]:
    users = [identity.verify(identity.sign_in_anonymously().access_token) for _ in range(count)]
    keys = [f"bench-cap-{uuid.uuid4().hex}" for _ in range(count)]
    recordings = {text: spoken(text) for text in UTTERANCES}
    results: list[list] = [[] for _ in range(count)]
    calls = [open_call(key, user, greet=False) for key, user in zip(keys, users, strict=True)]
    try:
        for call in calls:
            call.ready.result(timeout=180)
        cpu_before, wall_before = _cpu_seconds(), time.monotonic()
        threads = []
        for index, call in enumerate(calls):
            texts = [UTTERANCES[(index * 3 + i) % len(UTTERANCES)] for i in range(turns_per_call)]
            thread = threading.Thread(
                target=_caller,
                args=(call, texts, recordings, 1000 * count + index, index * 0.7, results[index], log),
                daemon=True,
            )
            threads.append(thread)
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
        cpu_used = _cpu_seconds() - cpu_before
        wall = time.monotonic() - wall_before
    finally:
        for key in keys:
            future = end_call(key)
            if future is not None:
                future.result(timeout=120)
        with admin_connection() as conn:
            for user in users:
                conn.execute("delete from auth.users where id = %s", (user.user_id,))
    latencies = [v for per_call in results for v in per_call]
    stats = summary(v for v in latencies if v is not None)
    cores = os.cpu_count() or 1
    result = {
        "calls": count,
        "turns": len(latencies),
        "no_reply": sum(1 for v in latencies if v is None),
        "p50": stats["p50"],
        "p95": stats["p95"],
        "max": stats["max"],
        "cpu_percent": 100 * cpu_used / wall / cores,
        "load_after": os.getloadavg()[0],
    }
    log(
        f"capacity: {count} call(s): p50 {result['p50'] or 0:.0f} ms, p95 {result['p95'] or 0:.0f} ms, "
        f"CPU {result['cpu_percent']:.0f}% of {cores} cores"
    )
    return result


def run(counts=(1, 2, 3, 4), turns_per_call: int = 8, log=print) -> dict[str, Any]:
    prewarm_voice()
    levels = [run_level(count, turns_per_call, log) for count in counts]
    over = next((lv["calls"] for lv in levels if lv["p95"] is None or lv["p95"] > P95_LIMIT_MS), None)
    return {"levels": levels, "first_over_limit": over, "turns_per_call": turns_per_call}
