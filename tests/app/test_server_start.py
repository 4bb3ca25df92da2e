"""The app's server as `make run` starts it (`streamlit run streamlit_app.py`, a subprocess): before any visitor
connects, it has registered the livekit plugins on its main thread and loaded the database, the embedding
model, the agent and the voice models (GET /api/warmup); stopped with SIGTERM, it lets go of the embedded
database so the last process using it stops it."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from tests.support.app import postmaster, start_streamlit, stop_streamlit, wait_until_stopped

pytestmark = [pytest.mark.slow]


def _warmup(url: str) -> dict:
    with urllib.request.urlopen(f"{url}/api/warmup", timeout=10) as response:
        return json.load(response)


def test_the_server_warms_up_before_the_first_visitor_and_lets_go_of_the_database(cold_data_dir, tmp_path):
    pgdata = cold_data_dir / "pg"
    assert postmaster(pgdata) is None
    process, url = start_streamlit({"DATA_DIR": str(cold_data_dir)}, log_path=tmp_path / "streamlit.log")
    try:
        status = _warmup(url)
        assert [part["name"] for part in status["parts"]] == ["database", "embeddings", "agent", "voice"]
        deadline = time.monotonic() + 180
        while not status["done"]:
            assert time.monotonic() < deadline, f"the warm-up did not finish: {status}"
            time.sleep(0.5)
            status = _warmup(url)
        # every part loaded, nobody visited; the voice models need the silero plugin, which livekit only
        # registers on the main thread: loading them proves the entry point registered it there
        states = {part["name"]: (part["state"], part["error"]) for part in status["parts"]}
        assert states == dict.fromkeys(("database", "embeddings", "agent", "voice"), ("ready", None))
        assert status["seconds"] > 0
        assert postmaster(pgdata) is not None  # the server started the stopped database itself
    finally:
        stop_streamlit(process, pgdata)
    wait_until_stopped(pgdata)  # uvicorn skips atexit handlers: the lifespan's shutdown let go of it
    # the database's listener stopped first (found in a fresh-clone walkthrough: every stop logged that the
    # server had closed its connection, and that it would try again)
    logged = (tmp_path / "streamlit.log").read_text()
    assert "not listening for memory changes" not in logged, logged[-2000:]


def test_narwhals_is_imported_on_the_main_thread_before_the_warm_up_starts():
    """Two threads importing narwhals at once (a page's altair, the warm-up's scikit-learn) deadlocked in
    a CI run; the lifespan imports it first. A fresh interpreter, so nothing imported it before."""
    import subprocess
    import sys

    from tests.support.app import PROJECT_ROOT

    script = """
import asyncio, sys
from ui import server
seen = []
server.warmup.start = lambda: seen.append("narwhals.stable.v2" in sys.modules)
server.warmup.current = lambda: type("W", (), {"status": lambda self: []})()
async def main():
    async with server.lifespan(None):
        pass
server._stop = lambda *args: None
asyncio.run(main())
print("before" if "narwhals.stable.v2" not in sys.modules or not seen else ("imported" if seen[0] else "late"))
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "imported"


def test_the_server_runs_the_maintenance_job_on_the_interval_set(database_uri, tmp_path):
    """`streamlit run` with MAINTENANCE_INTERVAL_HOURS=0.0003 (about a second) against the test database: an
    idle anonymous user is deleted by the server's own schedule, no `cleanup` run by hand."""
    from core import db, identity

    session = identity.sign_in_anonymously()
    with db.admin_connection() as conn:
        conn.execute(
            "update auth.users set created_at = now() - interval '45 days', "
            "last_sign_in_at = now() - interval '45 days' where id = %s",
            (session.user_id,),
        )

    def exists() -> bool:
        with db.admin_connection() as conn:
            return conn.execute(
                "select exists (select 1 from auth.users where id = %s)", (session.user_id,)
            ).fetchone()[0]

    process, _ = start_streamlit({"MAINTENANCE_INTERVAL_HOURS": "0.0003"}, log_path=tmp_path / "streamlit.log")
    try:
        deadline = time.monotonic() + 120
        while exists():
            assert time.monotonic() < deadline, (tmp_path / "streamlit.log").read_text()[-3000:]
            time.sleep(0.5)
    finally:
        stop_streamlit(process)  # and it still stops within 30 s of SIGTERM
