"""Where events go: the bus that stamps a session's events, and the sinks that carry them.

:class:`QueueSink` keeps events in memory for in-process readers (the
Streamlit pages poll it with a cursor, from any thread);
:class:`RoomTextStreamSink` sends each event as one text-stream message on
topic :data:`agent.events.EVENTS_TOPIC` when the agent runs in a LiveKit
worker. The events themselves are defined in agent/events.py.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import math
import threading
import time
from collections.abc import Iterable
from typing import Protocol

from agent import events
from agent.events import EVENTS_TOPIC, Event, EventFields, encode_event

log = logging.getLogger(__name__)


class EventSink(Protocol):
    def publish(self, event: Event) -> None: ...


class EventBus:
    """Stamps events for one session and fans them out to its sinks.

    Lives on the agent's event loop; sinks must not block. The bus also keeps
    every event (for the session report).
    """

    def __init__(self, session_id: str, sinks: Iterable[EventSink] = ()) -> None:
        self.session_id = session_id
        self.turn = 0
        self._sinks = list(sinks)
        self._events: list[Event] = []
        self._lock = threading.Lock()
        self._turns_started: set[str] = set()
        self._turns_done: set[int] = set()
        self.answering: str | None = None  # the id of the user message whose turn is in progress

    def add_sink(self, sink: EventSink) -> None:
        self._sinks.append(sink)

    @property
    def events(self) -> list[Event]:
        with self._lock:
            return list(self._events)

    def emit(self, fields: EventFields, *, turn: int | None = None) -> Event:
        """Stamp one event made by a builder in agent/events.py (this turn unless `turn` is given) and publish it."""
        with self._lock:
            event = events.stamped(
                fields,
                ts=time.time(),
                session_id=self.session_id,
                turn=self.turn if turn is None else int(turn),
                seq=len(self._events),
            )
            self._events.append(event)
        for sink in self._sinks:
            try:
                sink.publish(event)
            except Exception:  # a broken sink must never break the conversation
                log.exception("event sink %r failed", sink)
        return event

    # --- turns -------------------------------------------------------------
    def begin_user_turn(self, message_id: str, text: str) -> bool:
        """Start a new turn for a user message (idempotent per message id).

        A turn can be noticed from several places (the voice hook, the first
        model call, the history); whichever comes first starts it.
        """
        with self._lock:
            if message_id in self._turns_started:
                return False
            self._turns_started.add(message_id)
            self.turn += 1
            self.answering = message_id
        self.emit(events.transcript("user", text, final=True))
        return True

    def finish_turn(self) -> None:
        with self._lock:
            if self.turn in self._turns_done:
                return
            self._turns_done.add(self.turn)
            self.answering = None
        self.emit(events.turn_done())

    def metric(self, name: str, value_ms: float | None, *, turn: int | None = None) -> None:
        if value_ms is None or not math.isfinite(value_ms) or value_ms < 0:
            return
        self.emit(events.metric(name, value_ms), turn=turn)

    def metric_for_next_turn(self, name: str, value_ms: float | None) -> None:
        """A metric measured before its user turn starts (speech-to-text finishes before the message is committed)."""
        with self._lock:
            upcoming = self.turn + 1
        self.metric(name, value_ms, turn=upcoming)


class QueueSink:
    """Thread-safe in-memory event log read with a cursor.

    ``since(cursor)`` returns the events after ``cursor`` and the new cursor;
    cursors are absolute, so a reader that falls behind the bounded buffer
    just gets what is left (and can tell from ``seq``).
    """

    def __init__(self, maxlen: int = 5000) -> None:
        self._buffer: collections.deque[Event] = collections.deque(maxlen=maxlen)
        self._total = 0
        self._cond = threading.Condition()

    def publish(self, event: Event) -> None:
        with self._cond:
            self._buffer.append(event)
            self._total += 1
            self._cond.notify_all()

    @property
    def cursor(self) -> int:
        with self._cond:
            return self._total

    def since(self, cursor: int = 0) -> tuple[list[Event], int]:
        with self._cond:
            first_kept = self._total - len(self._buffer)
            start = max(int(cursor), first_kept) - first_kept
            return list(self._buffer)[start:], self._total

    def wait(self, cursor: int, timeout: float) -> bool:
        """Block until there is something after `cursor` (or timeout)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._total > cursor, timeout=timeout)


class RoomTextStreamSink:
    """Sends each event as a text-stream message on the room (LiveKit worker).

    Sending is asynchronous; a single task drains a queue so events keep
    their order and a slow network never blocks the agent.
    """

    def __init__(self, room, *, topic: str = EVENTS_TOPIC, destination_identities: list[str] | None = None) -> None:
        self._room = room
        self._topic = topic
        self._destinations = destination_identities
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._task: asyncio.Task | None = None
        self.failures = 0

    def publish(self, event: Event) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._drain(), name="RoomTextStreamSink")
        self._queue.put_nowait(event)

    async def _drain(self) -> None:
        while True:
            event = await self._queue.get()
            if event is None:
                return
            try:
                await self._room.local_participant.send_text(
                    encode_event(event), topic=self._topic, destination_identities=self._destinations
                )
            except Exception as exc:  # the room may be gone; the report still has every event
                self.failures += 1
                if self.failures <= 3:
                    log.warning("could not publish event to the room: %s", exc)

    async def aclose(self) -> None:
        if self._task is None:
            return
        self._queue.put_nowait(None)
        try:
            await asyncio.wait_for(self._task, timeout=5)
        except Exception:  # TimeoutError: the room stopped taking text; the report has the events
            self._task.cancel()
