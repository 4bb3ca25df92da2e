"""Tell whoever listens in this process that a user's memories or profile changed.

A running voice call recognises speech with the user's remembered words (`core.vocabulary`); it listens
here so that a memory edited or deleted on the Memories page reaches the call as surely as one the
agent's own tools wrote. Listeners are held weakly and called after the change is committed; a failing
listener is logged and never fails the change.
"""

from __future__ import annotations

import logging
import threading
import uuid
import weakref
from typing import Protocol

log = logging.getLogger(__name__)


class Listener(Protocol):
    def memories_changed(self, user_id: uuid.UUID) -> None: ...


_listeners: weakref.WeakSet[Listener] = weakref.WeakSet()
_lock = threading.Lock()


def subscribe(listener: Listener) -> None:
    with _lock:
        _listeners.add(listener)


def unsubscribe(listener: Listener) -> None:
    with _lock:
        _listeners.discard(listener)


def notify(user_id: uuid.UUID) -> None:
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        try:
            listener.memories_changed(user_id)
        except Exception:  # the change itself is committed; a listener's trouble is its own
            log.exception("a memory-change listener failed for %s", user_id)
