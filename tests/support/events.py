"""Waiting for the agent's events (agent/events.py) from outside its loop."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from agent import Event


class EventSource(Protocol):
    """A conversation or a voice call: anything with events_since(cursor)."""

    def events_since(self, cursor: int = 0) -> tuple[list[Event], int]: ...


def wait_for_event(
    source: EventSource,
    predicate: Callable[[Event], Any],
    *,
    cursor: int = 0,
    timeout: float = 60.0,
    poll_seconds: float = 0.02,
) -> Event:
    """Poll `source.events_since(cursor)` until an event matches `predicate`; TimeoutError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events, _ = source.events_since(cursor)
        for event in events:
            if predicate(event):
                return event
        time.sleep(poll_seconds)
    raise TimeoutError("no matching event")
