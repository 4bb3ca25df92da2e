"""The maintenance job on a schedule (core.maintenance.Schedule, started by the app server) against the real
embedded Postgres: it runs the job on its interval, a run another process holds the job's lock for is
skipped (and `cleanup` by hand waits for it), a run that fails does not end the schedule, and the server's
lifespan starts it from MAINTENANCE_INTERVAL_HOURS and stops it at shutdown."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time

import pytest

from core import config, db, identity, maintenance
from tests.support.app import PROJECT_ROOT


def _idle_anonymous_user(days: int = 45):
    session = identity.sign_in_anonymously()
    with db.admin_connection() as conn:
        conn.execute(
            "update auth.users set created_at = now() - make_interval(days => %s), "
            "last_sign_in_at = now() - make_interval(days => %s) where id = %s",
            (days, days, session.user_id),
        )
    return session.user_id


def _exists(user_id) -> bool:
    with db.admin_connection() as conn:
        return conn.execute("select exists (select 1 from auth.users where id = %s)", (user_id,)).fetchone()[0]


def _lock_holder_states() -> list[str]:
    with db.admin_connection() as conn:
        rows = conn.execute(
            "select a.state from pg_catalog.pg_locks l join pg_catalog.pg_stat_activity a on a.pid = l.pid "
            "where l.locktype = 'advisory' and l.granted and l.classid = 0 and l.objid = %s",
            (maintenance.JOB_LOCK,),
        ).fetchall()
    return [state for (state,) in rows]


def _wait(condition, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_the_schedule_runs_the_job_on_its_interval(database_uri):
    idle = _idle_anonymous_user()
    schedule = maintenance.Schedule(0.5).start()
    try:
        assert schedule.runs == 0 and _exists(idle)  # the first run comes one interval after the start
        assert _wait(lambda: schedule.runs >= 2), (schedule.runs, schedule.failed, schedule.skipped)
        assert not _exists(idle)
        assert set(schedule.last_result) >= {"anonymous_users", "vector_indexes_built", "turns_embedded"}
    finally:
        schedule.stop()
    assert not schedule.running and schedule.failed == 0


def test_a_run_while_another_process_holds_the_lock_is_skipped_and_cleanup_waits_for_it(database_uri):
    idle = _idle_anonymous_user()
    schedule = maintenance.Schedule(0.2)
    by_hand: dict[str, object] = {}
    try:
        # the lock as another process holds it: a session of its own
        with maintenance.job_lock() as held:
            assert held
            # held by an idle session, not an open transaction, which CREATE INDEX CONCURRENTLY would wait for
            assert _lock_holder_states() == ["idle"]
            schedule.start()
            assert _wait(lambda: schedule.skipped >= 2)
            assert schedule.runs == 0 and _exists(idle)
            waiting = threading.Thread(target=lambda: by_hand.update(result=maintenance.cleanup()))
            waiting.start()
            time.sleep(1.0)
            assert waiting.is_alive() and "result" not in by_hand  # `python -m core cleanup` waits its turn
        waiting.join(60)
        assert by_hand["result"]["anonymous_users"] >= 1 and not _exists(idle)
        assert _wait(lambda: schedule.runs >= 1)  # the lock is free again: the schedule's next run runs
    finally:
        schedule.stop()
    with maintenance.job_lock(wait=False) as held:
        assert held  # nobody kept it


def test_a_run_that_fails_is_logged_and_the_schedule_goes_on(database_uri, caplog):
    unreachable = "postgresql://nobody@127.0.0.1:1/nothing?connect_timeout=1"
    schedule = maintenance.Schedule(0.1, conninfo=unreachable)
    with caplog.at_level(logging.ERROR, logger="core.maintenance"):
        schedule.start()
        try:
            assert _wait(lambda: schedule.failed >= 2)
            assert schedule.running and schedule.runs == 0
        finally:
            schedule.stop()
    assert "the maintenance job failed; it runs again in 0.1 s" in caplog.text


def test_an_interval_of_zero_starts_no_schedule(monkeypatch):
    monkeypatch.setattr(config.get_settings(), "maintenance_interval_hours", 0.0)
    assert maintenance.start_schedule() is None
    with pytest.raises(ValueError):
        maintenance.Schedule(0)


def test_the_server_lifespan_runs_the_job_on_the_setting_and_stops_it_at_shutdown(database_uri):
    """The real lifespan in a fresh interpreter (the warm-up left out), with the test database: the job runs
    every 0.0003 h (about a second) while the server is up, and not after it stopped."""
    idle = _idle_anonymous_user()
    script = """
import asyncio, threading, time
from ui import server
server.warmup.start = lambda: None
server.warmup.current = lambda: type("W", (), {"status": lambda self: []})()
stopped = []
real_stop = server._stop
def stop(schedule=None):
    real_stop(schedule)
    stopped.append((schedule.runs, schedule.failed, schedule.running))
server._stop = stop
async def main():
    async with server.lifespan(None):
        deadline = time.monotonic() + 60
        while not any(t.name == "maintenance" for t in threading.enumerate()) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        await asyncio.sleep(3.0)
asyncio.run(main())
runs, failed, running = stopped[0]
print(f"runs={runs} failed={failed} running={running}")
"""
    env = {**os.environ, "DATA_DIR": str(config.get_settings().data_dir), "MAINTENANCE_INTERVAL_HOURS": "0.0003"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    runs, failed, running = (part.split("=")[1] for part in done.stdout.strip().splitlines()[-1].split())
    assert int(runs) >= 1 and failed == "0" and running == "False"
    assert not _exists(idle)
