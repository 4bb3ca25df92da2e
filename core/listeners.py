"""A set of in-process listeners, held weakly, each told of an event on the caller's thread.

Used by :mod:`core.memory_changes` and :mod:`core.session_deletions`. Weakly: a call or a conversation
that ends without unsubscribing is simply forgotten. The event has already happened when listeners are
told, so a failing listener is logged and never stops the others or the caller.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any

log = logging.getLogger(__name__)


class Listeners:
    def __init__(self, method: str) -> None:
        self.method = method  # what each listener is called: listener.<method>(*args)
        self._listeners: weakref.WeakSet[Any] = weakref.WeakSet()
        self._lock = threading.Lock()

    def subscribe(self, listener: Any) -> None:
        with self._lock:
            self._listeners.add(listener)

    def unsubscribe(self, listener: Any) -> None:
        with self._lock:
            self._listeners.discard(listener)

    def __contains__(self, listener: object) -> bool:
        with self._lock:
            return listener in self._listeners

    def __iter__(self):
        with self._lock:
            return iter(list(self._listeners))

    def notify(self, *args: Any) -> None:
        for listener in self:  # a copy: a listener may subscribe or unsubscribe while being told
            try:
                getattr(listener, self.method)(*args)
            except Exception:
                log.exception("a %s listener failed for %r", self.method, args)
