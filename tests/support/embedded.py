"""Stopping the embedded server underneath the app, for the outage tests.

`pg_ctl stop -w` waits for the pid file to go; the app revives the server as soon as it notices,
and a revive that writes a new pid file first makes pg_ctl wait 60 s and fail (seen in CI). So
the postmaster is signalled directly and the wait is for that process to exit."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

import psutil
from pgserver.utils import PostmasterInfo

_SIGNALS = {"fast": signal.SIGINT, "immediate": signal.SIGQUIT}  # PostgreSQL's shutdown modes


def stop_postmaster(server, mode: str = "fast", timeout: float = 60.0) -> None:
    """Stop the running postmaster of `server` and return once its process has exited."""
    info = PostmasterInfo.read_from_pgdata(server.pgdata)
    assert info is not None and info.is_running(), f"no server runs in {server.pgdata}"
    os.kill(info.pid, _SIGNALS[mode])
    with contextlib.suppress(psutil.NoSuchProcess):
        info.process.wait(timeout=timeout)


@contextlib.contextmanager
def kept_down(server, mode: str = "fast") -> Iterator[None]:
    """Stop `server` so that nobody can start it again until the block ends: PG_VERSION is moved
    aside first (a running server never reads it again), so no revive can slip in between."""
    version = server.pgdata / "PG_VERSION"
    version.rename(version.with_suffix(".moved"))
    try:
        stop_postmaster(server, mode)
        yield
    finally:
        version.with_suffix(".moved").rename(version)
