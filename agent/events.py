"""What the agent publishes while it runs, and where it goes.

Every event is a plain JSON-able dict. The chat and voice pages, the session
report and the LiveKit voice bridge all read this one shape, so it is the
contract between the agent and everything that shows what it did.

Common keys (every event)::

    {"type": str, "ts": float (epoch seconds), "session_id": str, "turn": int, "seq": int}

``turn`` is 0 for the greeting and counts user turns from 1. ``seq`` is the
event's position in its session (0, 1, 2, ...), so a reader can spot gaps.

Types and their own keys:

``transcript``
    ``role`` ("user" | "assistant"), ``text``, ``final`` (bool; False for
    interim speech-to-text results). Fillers ("One moment...") are assistant
    transcripts too.
``tool_call``
    ``name``, ``arguments`` (dict), ``output`` (str | None), ``error``
    (str | None; the message the model read back), ``duration_ms``.
``retrieval``
    ``source`` ("memories" | "knowledge"), ``trigger`` ("per_turn_recall",
    "tool:search_memories", "tool:search_knowledge"), ``query``, ``mode``
    ("hybrid" | "vector" | "text" for memories, "vector" for knowledge),
    ``params`` ({"vector_weight", "text_weight", "k"} or None),
    ``latency_ms``, ``degraded_reason`` (str | None), ``skipped`` (bool),
    ``skip_reason`` (str | None), ``hits`` (list of ``MemoryHit.as_dict()`` /
    ``KnowledgeHit.as_dict()``: vector_rank, vector_distance, text_rank,
    text_score, vector_rrf, text_rrf, rrf_score / distance, similarity, rank),
    ``injected`` (ids of the hits put into the model's context; recall only).
``state``
    ``who`` ("agent" | "user"), ``state`` (agent: initializing, idle,
    listening, thinking, speaking; user: speaking, listening, away).
``metric``
    ``name`` (llm_ttft_ms, llm_duration_ms, e2e_ms, recall_ms, stt_ms,
    transcription_delay_ms, tts_ttfb_ms, eou_delay_ms, turn_total_ms),
    ``value`` (float, milliseconds). ``stt_ms`` is stamped with the user turn it
    transcribes (the next one: it is measured before that message is committed).
``turn_done``
    The agent finished answering turn ``turn``. No extra keys.
``error``
    ``message``, ``where``: something failed in a way the page should show.

Sinks: :class:`QueueSink` keeps events in memory for in-process readers (the
Streamlit pages poll it with a cursor, from any thread);
:class:`RoomTextStreamSink` sends each event as one text-stream message on
topic :data:`EVENTS_TOPIC` when the agent runs in a LiveKit worker. Use
:func:`decode_event` to read one back.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import math
import threading
import time
from collections.abc import Iterable
from typing import Any, Protocol

log = logging.getLogger(__name__)

EVENTS_TOPIC = "memory-playground.events"
EVENT_TYPES = ("transcript", "tool_call", "retrieval", "state", "metric", "turn_done", "error")
_REQUIRED = {
    "transcript": ("role", "text", "final"),
    "tool_call": ("name", "arguments", "output", "error", "duration_ms"),
    "retrieval": ("source", "trigger", "query", "hits"),
    "state": ("who", "state"),
    "metric": ("name", "value"),
    "turn_done": (),
    "error": ("message",),
}


class EventSink(Protocol):
    def publish(self, event: dict[str, Any]) -> None: ...


def _jsonable(value: Any) -> Any:
    """Make a value safe for json.dumps (datetimes, UUIDs, NaN...)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


class EventBus:
    """Stamps events for one session and fans them out to its sinks.

    Lives on the agent's event loop; sinks must not block. The bus also keeps
    every event (for the session report).
    """

    def __init__(self, session_id: str, sinks: Iterable[EventSink] = ()) -> None:
        self.session_id = session_id
        self.turn = 0
        self._sinks = list(sinks)
        self._events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._turns_started: set[str] = set()
        self._turns_done: set[int] = set()

    def add_sink(self, sink: EventSink) -> None:
        self._sinks.append(sink)

    @property
    def events(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._events)

    def emit(self, type_: str, **fields: Any) -> dict[str, Any]:
        if type_ not in EVENT_TYPES:
            raise ValueError(f"unknown event type {type_!r}")
        turn = fields.pop("turn", None)
        with self._lock:
            event = {"type": type_, "ts": time.time(), "session_id": self.session_id,
                     "turn": self.turn if turn is None else int(turn), "seq": len(self._events)}
            event.update(_jsonable(fields))
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
        self.emit("transcript", role="user", text=text, final=True)
        return True

    def finish_turn(self) -> None:
        with self._lock:
            if self.turn in self._turns_done:
                return
            self._turns_done.add(self.turn)
        self.emit("turn_done")

    def metric(self, name: str, value_ms: float | None, *, turn: int | None = None) -> None:
        if value_ms is None or not math.isfinite(value_ms) or value_ms < 0:
            return
        self.emit("metric", name=name, value=round(float(value_ms), 2), turn=turn)

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
        self._buffer: collections.deque[dict[str, Any]] = collections.deque(maxlen=maxlen)
        self._total = 0
        self._cond = threading.Condition()

    def publish(self, event: dict[str, Any]) -> None:
        with self._cond:
            self._buffer.append(event)
            self._total += 1
            self._cond.notify_all()

    @property
    def cursor(self) -> int:
        with self._cond:
            return self._total

    def since(self, cursor: int = 0) -> tuple[list[dict[str, Any]], int]:
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
        self._queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._task: asyncio.Task | None = None
        self.failures = 0

    def publish(self, event: dict[str, Any]) -> None:
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
        if self._task is not None:
            self._queue.put_nowait(None)
            try:
                await asyncio.wait_for(self._task, timeout=5)
            except (asyncio.TimeoutError, Exception):
                self._task.cancel()


def encode_event(event: dict[str, Any]) -> str:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"))


def decode_event(payload: str | bytes) -> dict[str, Any]:
    """Parse one event (e.g. from the room text stream); ValueError if it is not one."""
    if isinstance(payload, bytes):
        payload = payload.decode("utf-8")
    try:
        event = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not an event: {exc.msg}") from None
    if not isinstance(event, dict) or event.get("type") not in EVENT_TYPES:
        raise ValueError("not an event: missing or unknown 'type'")
    missing = [key for key in ("ts", "session_id", "turn", *_REQUIRED[event["type"]]) if key not in event]
    if missing:
        raise ValueError(f"{event['type']} event is missing {', '.join(missing)}")
    return event


def events_for_turn(events: Iterable[dict[str, Any]], turn: int) -> list[dict[str, Any]]:
    return [event for event in events if event.get("turn") == turn]


def wait_for_event(source, predicate, *, cursor: int = 0, timeout: float = 60.0,
                   poll_seconds: float = 0.02) -> dict[str, Any]:
    """Poll `source.events_since(cursor)` (a chat session or a voice call) until an event
    matches `predicate`; raises TimeoutError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events, _ = source.events_since(cursor)
        for event in events:
            if predicate(event):
                return event
        time.sleep(poll_seconds)
    raise TimeoutError("no matching event")
