"""The app as a user runs it: `streamlit run streamlit_app.py` on a free port against this test run's
database (conftest sets DATA_DIR; hosted-service settings are blank as in conftest).

Loaded as a pytest plugin by tests/conftest.py, so `streamlit_server` is a fixture everywhere.
"""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from pgserver.utils import PostmasterInfo

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SERVER_SCRIPT = PROJECT_ROOT / "streamlit_app.py"  # the st.App: what `make run` starts
APP_SCRIPT = PROJECT_ROOT / "app_script.py"  # the page script it runs (AppTest runs it directly)
APP_TIMEOUT = 180  # first run loads the embedding model and starts the agent
TEST_DATA = PROJECT_ROOT / "tests" / "data"
SERVER_LOGS: dict[str, Path] = {}  # base URL of each server started here -> the file it logs to
_LOG_OF_PID: dict[int, Path] = {}  # the same files by the server's pid


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_streamlit(
    extra_env: dict[str, str] | None = None,
    *,
    log_path: Path | None = None,
    timeout: float = 90,
    tls: tuple[Path, Path] | None = None,
) -> tuple[subprocess.Popen, str]:
    """`streamlit run streamlit_app.py` on a free port with this test run's DATA_DIR; returns (process, url).
    `tls` = (certificate, key) serves it over https."""
    port = free_port()
    # PYTHONFAULTHANDLER: a server that will not stop writes its threads' stacks on SIGABRT (stop_streamlit)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1", **(extra_env or {})}
    log = open(log_path or Path(tempfile.mkstemp(prefix="mp-streamlit-", suffix=".log")[1]), "w")  # noqa: SIM115 - the server writes to it until it stops
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(SERVER_SCRIPT),
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
            *(["--server.sslCertFile", str(tls[0]), "--server.sslKeyFile", str(tls[1])] if tls else []),
        ],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    SERVER_LOGS[url] = _LOG_OF_PID[process.pid] = Path(log.name)
    # a test's self-signed certificate: the health check only asks whether the server is up
    unverified = ssl._create_unverified_context() if tls else None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with {process.returncode}; see {log.name}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2, context=unverified) as response:
                if response.status == 200:
                    return process, url
        except OSError:
            time.sleep(0.5)
    stop_streamlit(process)
    raise RuntimeError(f"streamlit did not become healthy within {timeout} s; see {log.name}")


def server_log_tail(page_url: str, lines: int = 60) -> str:
    """The last `lines` lines the server behind `page_url` logged (for a failing test's message)."""
    log_path = next((path for url, path in SERVER_LOGS.items() if f"{page_url}/".startswith(f"{url}/")), None)
    if log_path is None or not log_path.exists():
        return "(no log of this server)"
    return "\n".join(log_path.read_text(errors="replace").splitlines()[-lines:])


def stop_streamlit(process: subprocess.Popen, pgdata: Path | None = None) -> None:
    """SIGTERM, as a user's Ctrl-C. A server that has not exited 30 s later is a bug (Ctrl-C would hang):
    SIGABRT makes faulthandler (PYTHONFAULTHANDLER, set at start) write every thread's stack to the
    server's log, it is killed, the embedded database under `pgdata` it could not let go of is stopped
    (so the next test starts clean), and the test fails with those stacks."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)  # its own process group: only what this fixture started
    try:
        process.wait(timeout=30)
        return
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGABRT)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    if pgdata is not None and (left := postmaster(pgdata)) is not None:
        left.process.send_signal(signal.SIGINT)  # PostgreSQL's fast shutdown
        wait_until_stopped(pgdata)
    log_path = _LOG_OF_PID.get(process.pid)
    stacks = log_path.read_text(errors="replace").splitlines()[-120:] if log_path and log_path.exists() else []
    raise AssertionError(
        f"streamlit (pid {process.pid}) did not exit within 30 s of SIGTERM; the end of its log, with its "
        "threads' stacks:\n" + "\n".join(stacks or ["(no log)"])
    )


def postmaster(pgdata: Path) -> PostmasterInfo | None:
    """The embedded database server running on `pgdata`, or None when it is stopped."""
    info = PostmasterInfo.read_from_pgdata(pgdata)
    return info if info is not None and info.is_running() else None


def wait_until_stopped(pgdata: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while postmaster(pgdata) is not None:
        assert time.monotonic() < deadline, f"the embedded database in {pgdata} did not stop"
        time.sleep(0.2)


def prepare_stopped_database(data_dir: Path) -> Path:
    """Migrate and seed the embedded database under `data_dir` with the command line (`python -m core`, as
    `make run` does); it stops when that command exits, so the next app start finds it cold."""
    env = {**os.environ, "DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    for command in ("migrate", "seed"):
        command_line = [sys.executable, "-m", "core", command]
        subprocess.run(command_line, cwd=PROJECT_ROOT, env=env, check=True, timeout=180, stdout=subprocess.DEVNULL)
    wait_until_stopped(data_dir / "pg")
    return data_dir


@pytest.fixture(scope="module")
def cold_data_dir(database_uri, tmp_path_factory) -> Path:
    """A DATA_DIR of its own whose embedded database is migrated, seeded and stopped."""
    return prepare_stopped_database(tmp_path_factory.mktemp("cold-start"))


@pytest.fixture(scope="session")
def streamlit_server(database_uri) -> Iterator[str]:
    """Base URL of a `streamlit run` of the app against the test database."""
    process, url = start_streamlit()
    yield url
    stop_streamlit(process)
