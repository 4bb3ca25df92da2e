"""The embedded database stops when the last process using it lets go, even when one of them was killed.

pgserver keeps a list of the processes attached to a data directory and the last one to exit stops the
server. A process killed without running its atexit handlers (SIGKILL, the OOM killer) used to stay on
that list for good, so no later process was ever the last: the server ran on after every process had
gone (a test's Streamlit killed after 30 s left it running into the next test). Real processes here:
`python -m core uri` as a user runs it, and a holder process that attaches and waits.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.app import PROJECT_ROOT, postmaster, wait_until_stopped

pytestmark = [pytest.mark.slow]

HOLD = "from core import db; db.database_url(); print('attached', flush=True); import sys; sys.stdin.read()"


def _env(data_dir: Path) -> dict[str, str]:
    return {**os.environ, "DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}


def _attached_holder(data_dir: Path) -> subprocess.Popen:
    """A process attached to the embedded database until its stdin closes (then it exits normally)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD],
        cwd=PROJECT_ROOT,
        env=_env(data_dir),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "attached"
    return holder


def _use_and_exit(data_dir: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "core", "uri"],
        cwd=PROJECT_ROOT,
        env=_env(data_dir),
        check=True,
        timeout=120,
        capture_output=True,
    )


def test_after_a_killed_process_the_last_one_to_exit_still_stops_the_database(tmp_path):
    data_dir = tmp_path / "data"
    pgdata = data_dir / "pg"
    killed = _attached_holder(data_dir)
    killed.kill()  # no atexit handlers: it never lets go
    killed.wait()
    assert postmaster(pgdata) is not None, "nobody stopped it: it runs on until someone lets go"

    _use_and_exit(data_dir)  # attaches to the running server, is the last one alive, exits

    wait_until_stopped(pgdata)


def test_a_process_still_attached_keeps_the_database_running(tmp_path):
    data_dir = tmp_path / "data"
    pgdata = data_dir / "pg"
    still_attached = _attached_holder(data_dir)
    try:
        _use_and_exit(data_dir)
        assert postmaster(pgdata) is not None, "stopped under a process still using it"
    finally:
        still_attached.stdin.close()  # it exits normally, the last one attached
        still_attached.wait(timeout=60)
    wait_until_stopped(pgdata)
