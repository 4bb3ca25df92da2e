"""The maintenance job: `python -m core cleanup` (run by `make run` before the app starts) and the app
server's schedule, which runs it again every MAINTENANCE_INTERVAL_HOURS while the server is up.

Every run holds one Postgres advisory lock, so that the app's processes and a `cleanup` by hand never run
the job at once (two builds of one user's vector index, two deletions of one idle user).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from core import conversations, identity, session_store, sessions, vector_indexes
from core.config import get_settings
from core.db import admin_connection
from core.errors import EmbeddingUnavailable

log = logging.getLogger(__name__)

# pg_advisory_lock's key for the job, the same in every process ("MPcl")
JOB_LOCK = 0x4D50_636C


@contextmanager
def job_lock(conninfo: str | None = None, *, wait: bool = True) -> Iterator[bool]:
    """Hold the job's lock for the block; yields False (without waiting) when `wait` is off and another
    process holds it. The lock's connection stays idle outside a transaction: CREATE INDEX CONCURRENTLY
    (the vector indexes) waits for every open transaction, this one's included."""
    with admin_connection(conninfo) as conn:  # autocommit
        if wait:
            conn.execute("select pg_advisory_lock(%s)", (JOB_LOCK,))
            held = True
        else:
            held = conn.execute("select pg_try_advisory_lock(%s)", (JOB_LOCK,)).fetchone()[0]
        try:
            yield held
        finally:
            if held:
                conn.execute("select pg_advisory_unlock(%s)", (JOB_LOCK,))


def cleanup(older_than_days: float | None = None, *, conninfo: str | None = None) -> dict[str, int]:
    """The job, once; waits for a run another process has started to finish first."""
    with job_lock(conninfo, wait=True):
        return _run_job(older_than_days, conninfo)


def cleanup_unless_running(conninfo: str | None = None) -> dict[str, int] | None:
    """The job, once, or None when another process is running it right now (it does the same work)."""
    with job_lock(conninfo, wait=False) as held:
        return _run_job(None, conninfo) if held else None


def _run_job(older_than_days: float | None, conninfo: str | None) -> dict[str, int]:
    """Delete anonymous users idle longer than ANON_USER_RETENTION_DAYS (with everything they own),
    session hand-offs older than the longest a session lasts, and the ids of sessions deleted more than
    30 days ago. Runs as the owner. Also embeds the conversation turns an earlier process stored without
    an embedding (core.conversations.embed_all_pending), and keeps the heavy users' vector indexes
    (core.vector_indexes), after the deletions so that a deleted user's goes with them."""
    removed = {"anonymous_users": identity.delete_idle_anonymous_users(older_than_days, conninfo=conninfo)}
    with admin_connection(conninfo) as conn:
        lifetime = get_settings().refresh_token_lifetime_days * 86400
        removed["session_handoffs"] = session_store.prune(conn, lifetime + 86400)
        removed["deleted_session_ids"] = sessions.prune_deleted(conn)
    try:
        removed["turns_embedded"] = conversations.embed_all_pending(conninfo=conninfo)
    except EmbeddingUnavailable as exc:  # the turns stay searchable by text; the next run tries again
        log.warning("conversation turns stored without an embedding are still waiting: %s", exc)
        removed["turns_embedded"] = 0
    changes = vector_indexes.keep_vector_indexes(conninfo=conninfo)
    removed["vector_indexes_built"], removed["vector_indexes_dropped"] = len(changes.built), len(changes.dropped)
    removed["vector_indexes_failed"] = len(changes.failed)
    return removed


class Schedule:
    """The job every `interval_seconds` on a daemon thread, the first run one interval after `start`
    (`make run` has just run it). A run that fails is logged and the next one comes on time: the job
    only tidies up, and each of its steps is safe to repeat. `stop` waits for a run in progress."""

    def __init__(self, interval_seconds: float, *, conninfo: str | None = None) -> None:
        if interval_seconds <= 0:
            raise ValueError("the interval must be positive")
        self.interval_seconds = interval_seconds
        self._conninfo = conninfo
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="maintenance", daemon=True)
        self.runs = self.skipped = self.failed = 0
        self.last_result: dict[str, int] | None = None

    def start(self) -> Schedule:
        self._thread.start()
        return self

    def stop(self, timeout: float = 120.0) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _loop(self) -> None:
        while not self._stopping.wait(self.interval_seconds):
            started = time.perf_counter()
            try:
                result = cleanup_unless_running(self._conninfo)
            except Exception:  # a background job: log it and keep the schedule
                self.failed += 1
                log.exception("the maintenance job failed; it runs again in %g s", self.interval_seconds)
                continue
            if result is None:
                self.skipped += 1
                log.info("the maintenance job is running in another process; skipped")
                continue
            self.runs += 1
            self.last_result = result
            log.info("maintenance job done in %.1f s: %s", time.perf_counter() - started, result)


def start_schedule(conninfo: str | None = None) -> Schedule | None:
    """The app server's schedule, from MAINTENANCE_INTERVAL_HOURS (None when it is 0: run `python -m core
    cleanup` some other way)."""
    hours = get_settings().maintenance_interval_hours
    return Schedule(hours * 3600, conninfo=conninfo).start() if hours > 0 else None
