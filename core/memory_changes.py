"""Tell whoever listens in this process that a user's memories or profile changed.

A running voice call recognises speech with the user's remembered words (`core.vocabulary`); it listens
here so that a memory edited or deleted on the Memories page reaches the call as surely as one the
agent's own tools wrote. Listeners are held weakly and called after the change is committed; a failing
listener is logged and never fails the change.

Changes made by another process (the app's Memories page, seen from a LiveKit worker) come from the
database: every change to memories or a profile name sends a notification on the channel
``memory_changes`` (supabase/migrations/20261126000000_memory_change_notifications.sql), and
:func:`follow_database` starts this process's one listener on it, which tells the same listeners. The same
connection hears deleted sessions (channel ``session_deletions``) for :mod:`core.session_deletions`.
"""

from __future__ import annotations

import atexit
import logging
import threading
import uuid
from typing import Protocol

import psycopg

from core import session_deletions
from core.listeners import Listeners

log = logging.getLogger(__name__)

CHANNEL = "memory_changes"
APPLICATION_NAME = "memory-playground feed"  # how its connection shows in pg_stat_activity
RETRY_SECONDS = (0.5, 1, 2, 5, 10, 30)  # reconnecting after the database went away, then every 30 s


class Listener(Protocol):
    def memories_changed(self, user_id: uuid.UUID | None) -> None:
        """``user_id`` changed; None: anyone's may have (changes were missed while the database was away)."""


_listeners = Listeners("memories_changed")
subscribe = _listeners.subscribe
unsubscribe = _listeners.unsubscribe


def notify(user_id: uuid.UUID | None) -> None:
    _listeners.notify(user_id)


def notify_everyone() -> None:
    notify(None)  # every listener refreshes: see Listener.memories_changed


class DatabaseFeed:
    """One connection listening on the database's ``memory_changes`` and ``session_deletions`` channels, on
    its own thread, which tells this process's listeners. Reconnects when the database goes away, and then
    tells every listener to refresh or check (what happened meanwhile was not heard)."""

    def __init__(self, conninfo: str) -> None:
        self.conninfo = conninfo
        self.listening = threading.Event()  # set while LISTEN is in place
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-changes-feed", daemon=True)

    def start(self) -> DatabaseFeed:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            try:
                with psycopg.connect(
                    self.conninfo, autocommit=True, connect_timeout=10, application_name=APPLICATION_NAME
                ) as conn:
                    conn.execute(f"listen {CHANNEL}")
                    conn.execute(f"listen {session_deletions.CHANNEL}")
                    self.listening.set()
                    if failures:
                        log.info("listening for memory changes and deleted sessions again")
                        notify_everyone()
                        session_deletions.notify_missed()
                    failures = 0
                    while not self._stopping.is_set():
                        for note in conn.notifies(timeout=1.0):  # wakes every second to see whether to stop
                            if note.channel == session_deletions.CHANNEL:
                                if (deleted := session_deletions.parse_payload(note.payload)) is not None:
                                    session_deletions.notify(*deleted)
                            else:
                                self._deliver(note.payload)
            except psycopg.Error as exc:
                self.listening.clear()
                delay = RETRY_SECONDS[min(failures, len(RETRY_SECONDS) - 1)]
                failures += 1
                (log.warning if failures == 1 else log.debug)(
                    "not listening for memory changes (%s); trying again in %s s", exc, delay
                )
                self._stopping.wait(delay)
        self.listening.clear()

    @staticmethod
    def _deliver(payload: str) -> None:
        try:
            user_id = uuid.UUID(payload)
        except ValueError:
            log.warning("ignored a memory_changes notification that is not a user id: %r", payload[:80])
            return
        notify(user_id)


_feed: DatabaseFeed | None = None
_stops_at_exit = False
_feed_lock = threading.Lock()  # not the listeners' lock: a feed being stopped may be telling them


def follow_database(conninfo: str, timeout: float = 10.0) -> DatabaseFeed:
    """Start this process's listener on the database (once; later calls return it) and wait until it
    listens, so that nothing committed after this returns is missed."""
    global _feed, _stops_at_exit
    with _feed_lock:
        if _feed is None or _feed.conninfo != conninfo:
            if _feed is not None:
                _feed.stop()
            _feed = DatabaseFeed(conninfo).start()
            if not _stops_at_exit:
                # atexit runs the last registered first: the feed stops before an embedded server started
                # earlier is stopped, instead of warning that the server closed its connection
                atexit.register(stop_following)
                _stops_at_exit = True
        feed = _feed
    if not feed.listening.wait(timeout):
        log.warning("not yet listening for memory changes after %.0f s; changes made elsewhere may be late", timeout)
    return feed


def stop_following() -> None:
    global _feed
    with _feed_lock:
        feed, _feed = _feed, None
    if feed is not None:
        feed.stop()
