"""One conversation on the in-process runtime's loop: typed turns, its events, and closing it with a report.

A :class:`Conversation` is what the chat page, ``python -m agent chat`` and a
local voice call hold: a started :class:`~agent.session.PlaygroundSession` (a
text session by default; a voice call passes a factory that builds a voice
one), an event queue any thread can read with a cursor, and thread-safe
``send`` / ``close`` that return ``concurrent.futures.Future`` at once. Create
one through :meth:`agent.runtime.AgentRuntime.open_conversation`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent.event_bus import QueueSink
from agent.events import Event, ToolCallEvent, of_type
from agent.session import PlaygroundSession
from agent.timings import keep_metric
from core.errors import InvalidInput, PlaygroundError, SessionDeleted
from core.retrieval import RrfParams
from core.text import clean_text

log = logging.getLogger(__name__)

MAX_MESSAGE_LENGTH = 2000
SESSION_DELETED = "its session was deleted"  # Conversation.close_reason when its owner deleted the session
APP_STOPPED = "the app stopped"  # ... when the process ended (agent.runtime.shutdown_runtime): the report says so
SessionFactory = Callable[[QueueSink], Awaitable[PlaygroundSession]]


class Runtime(Protocol):
    """What a conversation needs of the runtime that owns it (agent.runtime.AgentRuntime)."""

    warm: concurrent.futures.Future  # done once the runtime has loaded what the first turn needs

    def submit(self, coro: Awaitable[Any]) -> concurrent.futures.Future: ...

    def release(self, conversation: Conversation) -> None: ...


@dataclass(frozen=True)
class TurnResult:
    """One user turn: what was said back and everything the agent did for it."""

    turn: int
    user_text: str
    reply: str  # the agent's answer (its last message this turn)
    messages: list[str]  # every assistant message this turn, fillers included
    events: list[Event]  # this turn's events (agent/events.py)
    timings: dict[str, float]  # total_ms, recall_ms, llm_ttft_ms, tools_ms, ...
    error: str | None = None  # why the turn failed (one sentence to show); `reply` is then "" or partial

    @property
    def problems(self) -> list[str]:
        """Every error published for this turn (a failed model call, a tool call the model got wrong)."""
        return [e["message"] for e in of_type(self.events, "error") if e.get("kind") != "stopped"]

    @property
    def stopped(self) -> bool:
        """The visitor stopped this turn's answer (Conversation.stop)."""
        return any(e.get("kind") == "stopped" for e in of_type(self.events, "error"))

    @property
    def tool_calls(self) -> list[ToolCallEvent]:
        return of_type(self.events, "tool_call")

    @property
    def retrievals(self) -> list[Any]:
        return of_type(self.events, "retrieval")


@dataclass
class _Sent:
    """A typed message sent and not answered yet; `cursor` is the event cursor when its turn started."""

    text: str
    cursor: int | None = None


@dataclass
class _Closing:
    future: concurrent.futures.Future | None = None
    reason: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class Conversation:
    """One conversation on the runtime's loop (see the module docstring)."""

    def __init__(
        self,
        runtime: Runtime,
        key: str,
        user_id: uuid.UUID,
        *,
        rrf: RrfParams | None,
        factory: SessionFactory | None = None,
    ) -> None:
        self.runtime = runtime
        self.key = key
        self.user_id = user_id
        self.sink = QueueSink()
        self.created_at = time.time()
        self.last_active = time.monotonic()
        self.greeting: str | None = None
        self._rrf = (rrf or RrfParams.from_settings()).validated()
        self._factory = factory
        self._ps: PlaygroundSession | None = None
        self._turn_lock: asyncio.Lock | None = None
        self._closing = _Closing()
        self._unanswered: list[_Sent] = []  # in the order sent; guarded by _unanswered_lock
        self._unanswered_lock = threading.Lock()
        self._stopping = False  # stop() interrupted the turn in progress; on the loop only
        self.ready: concurrent.futures.Future[str | None] = runtime.submit(self._start())

    # ---- read side (any thread) ---------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self._ps.session_id if self._ps else None

    @property
    def closed(self) -> bool:
        return self._closing.future is not None

    @property
    def rrf(self) -> RrfParams:
        return self._rrf

    @property
    def playground_session(self) -> PlaygroundSession | None:
        return self._ps

    @property
    def kept(self) -> bool:
        """Whether the conversation is kept (listed on the Sessions page, its report saved when it ends): once
        the user has said something in it (PlaygroundSession.kept)."""
        return self._ps is not None and self._ps.kept

    def events_since(self, cursor: int = 0) -> tuple[list[Event], int]:
        """Events after `cursor` and the new cursor (start with 0)."""
        return self.sink.since(cursor)

    @property
    def busy(self) -> bool:
        """A message was sent and its turn has not finished yet."""
        with self._unanswered_lock:
            return bool(self._unanswered)

    def waiting_messages(self, upto: int | None = None) -> list[str]:
        """Messages sent whose user turn is not among the events up to cursor `upto` (default: all so far).

        They wait for the start or for the turn before them. A page draws them after the events it
        read with that cursor, so every message shows exactly once, from the moment it was sent.
        """
        upto = self.sink.cursor if upto is None else upto
        with self._unanswered_lock:
            unanswered = [(sent.text, sent.cursor) for sent in self._unanswered]
        waiting = []
        for text, cursor in unanswered:
            if cursor is not None and cursor < upto:
                seen = self.sink.since(cursor)[0][: upto - cursor]
                if any(e["type"] == "transcript" and e["role"] == "user" and e["final"] for e in seen):
                    continue  # its turn started and its user message is among the events
            waiting.append(text)
        return waiting

    @property
    def forgotten_messages(self) -> int:
        """Its messages blanked so far because they mentioned a memory the user deleted (agent/forgetting.py)."""
        return self._ps.forgetting.messages if self._ps else 0

    @property
    def history(self) -> list[dict[str, Any]]:
        """The conversation so far: final user and assistant transcripts, in order."""
        events = self._ps.bus.events if self._ps else self.sink.since(0)[0]
        return [
            {"turn": e["turn"], "role": e["role"], "text": e["text"], "ts": e["ts"]}
            for e in of_type(events, "transcript")
            if e.get("final")
        ]

    # ---- write side ------------------------------------------------------------

    def set_rrf(self, params: RrfParams) -> RrfParams:
        """Change the fusion weights and k for every later search of this conversation."""
        self._rrf = params.validated()
        if self._ps is not None:
            self._ps.set_rrf(self._rrf)
        return self._rrf

    def send(self, text: str) -> concurrent.futures.Future[TurnResult]:
        """Run one typed turn. Bad input fails the future with InvalidInput (a user-safe message).

        May be called before the conversation is ready and while another turn runs: turns run
        one after another, in the order sent, once the start is done (:meth:`waiting_messages`)."""
        self.last_active = time.monotonic()
        try:
            text = clean_text(text, what="message", max_length=MAX_MESSAGE_LENGTH)
            if self.closed:
                raise InvalidInput("This conversation has ended; start a new one.")
        except InvalidInput as exc:
            failed: concurrent.futures.Future[TurnResult] = concurrent.futures.Future()
            failed.set_exception(exc)
            return failed
        sent = _Sent(text)
        with self._unanswered_lock:
            self._unanswered.append(sent)
        return self.runtime.submit(self._send(sent))

    def stop(self) -> concurrent.futures.Future[bool]:
        """Stop the answer being prepared now (messages sent after it are still answered, in order); the
        future says whether one was (False: none was running, or it finished first)."""
        self.last_active = time.monotonic()
        return self.runtime.submit(self._stop())

    @property
    def close_reason(self) -> str | None:
        """Why it was closed (the first close's `reason`; SESSION_DELETED: its owner deleted it); None while open."""
        return self._closing.reason

    def close(self, *, reason: str = "ended") -> concurrent.futures.Future[dict[str, Any] | None]:
        """End the conversation and save its report (idempotent: later calls get the same future).

        `reason` SESSION_DELETED (its owner deleted the session): the answer in flight is stopped, messages
        waiting for their turn are not answered, and no facts are extracted from it."""
        with self._closing.lock:
            if self._closing.future is None:
                self._closing.reason = reason
                self._closing.future = self.runtime.submit(self._close())
                self.runtime.release(self)
            return self._closing.future

    # ---- on the loop ---------------------------------------------------------

    async def _start(self) -> str | None:
        self._turn_lock = asyncio.Lock()
        try:
            await asyncio.wrap_future(self.runtime.warm)
        except Exception as exc:  # a failed warm-up only costs the first turn's recall its time budget
            log.warning("the runtime's warm-up failed (%s); starting anyway", exc)
        if self._factory is not None:
            self._ps = await self._factory(self.sink)
            self._ps.set_rrf(self._rrf)
            self.greeting = next(
                (e["text"] for e in of_type(self._ps.bus.events, "transcript", turn=0) if e["role"] == "assistant"),
                None,
            )
            return self.greeting
        ps = PlaygroundSession(self.user_id, mode="text", rrf=self._rrf, sinks=[self.sink])
        self._ps = ps
        # set_rrf (another thread) may have run while the session was being made, before _ps was set
        ps.set_rrf(self._rrf)
        self.greeting = await ps.start()
        return self.greeting

    async def _send(self, sent: _Sent) -> TurnResult:
        try:
            return await self._run_turn(sent)
        finally:
            with self._unanswered_lock:
                self._unanswered.remove(sent)

    async def _run_turn(self, sent: _Sent) -> TurnResult:
        text = sent.text
        await asyncio.wrap_future(self.ready)
        assert self._ps is not None and self._turn_lock is not None
        async with self._turn_lock:
            if self.close_reason == SESSION_DELETED:  # sent before the deletion, not answered yet: never asked
                raise SessionDeleted("This conversation's session was deleted, so the message was not answered.")
            ps = self._ps
            cursor = sent.cursor = self.sink.cursor
            started = time.perf_counter()
            error = None
            messages: list[str] = []
            try:
                result = await ps.run_text(text)
                messages = [
                    ev.item.text_content
                    for ev in result.events
                    if ev.type == "message" and ev.item.role == "assistant" and ev.item.text_content
                ]
            except PlaygroundError as exc:  # the model failed (TurnFailed: the sentence); the conversation goes on
                error = str(exc)
            except Exception as exc:  # anything else around the model: same, with a generic sentence
                log.exception("turn failed in session %s", ps.session_id)
                error = f"The agent failed to answer ({type(exc).__name__}); the server log has the details."
            if self._stopping:  # the visitor stopped it (stop()): say so, and let the model know
                self._stopping, error = False, None
                await ps.note_stopped()
            total_ms = (time.perf_counter() - started) * 1000
            turn = ps.bus.turn
            ps.bus.metric("turn_total_ms", total_ms)
            events = await self._events_of_turn(turn, cursor)
            self.last_active = time.monotonic()
        return _turn_result(turn, text, messages, events, total_ms=total_ms, error=error)

    async def _events_of_turn(self, turn: int, cursor: int) -> list[Event]:
        # turn_done fires from the speech handle's callback, which can trail the run by a tick
        for _ in range(50):
            if of_type(self.sink.since(cursor)[0], "turn_done", turn=turn):
                break
            await asyncio.sleep(0.01)
        return [e for e in self.sink.since(cursor)[0] if e["turn"] == turn]

    async def _stop(self) -> bool:
        if self._ps is None or self._turn_lock is None or not self._turn_lock.locked() or self.closed:
            return False
        self._stopping = True  # the turn notes it (_run_turn), before the next one can start
        stopped = await self._ps.interrupt_answer()
        self._stopping = self._stopping and stopped
        return stopped

    async def _close(self) -> dict[str, Any] | None:
        try:
            await asyncio.wrap_future(self.ready)
        except Exception:
            log.warning("session %s never started; nothing to report", self.key)
            return None
        assert self._ps is not None and self._turn_lock is not None
        deleted = self.close_reason == SESSION_DELETED
        if deleted:  # its owner deleted it: the answer in flight stops now, and writes nothing more
            await self._stop_answers()
        async with self._turn_lock:  # let a turn in flight finish first
            # no facts are extracted from a conversation its owner is deleting (they would outlive it)
            return await self._ps.finish(extract=not deleted, ended_by=self.close_reason)

    async def _stop_answers(self) -> None:
        """Interrupt the answer in flight until its turn ends (before the model is asked there is no answer
        to interrupt yet: tried again); the turns waiting after it are not run (_run_turn)."""
        assert self._ps is not None and self._turn_lock is not None
        while self._turn_lock.locked():
            try:
                await self._ps.interrupt_answer()
            except Exception as exc:  # the turn is waited out instead
                log.warning("stopping the answer of deleted session %s failed: %s", self._ps.session_id, exc)
                return
            await asyncio.sleep(0.05)


def _turn_result(
    turn: int, text: str, messages: list[str], events: list[Event], *, total_ms: float, error: str | None
) -> TurnResult:
    timings: dict[str, float] = {"total_ms": round(total_ms, 2)}
    for event in of_type(events, "metric"):
        keep_metric(timings, event["name"], event["value"])
    tools = [e["duration_ms"] for e in of_type(events, "tool_call")]
    if tools:
        timings["tools_ms"] = round(sum(tools), 2)
    problems = [e["message"] for e in of_type(events, "error") if e.get("kind") != "stopped"]
    if error is None and problems and not messages:
        error = problems[-1]  # e.g. only unknown tools were called: nothing was said
    return TurnResult(
        turn=turn,
        user_text=text,
        reply=messages[-1] if messages else "",
        messages=messages,
        events=events,
        timings=timings,
        error=error,
    )
