"""The in-process agent runtime: the agent inside the Streamlit process (and `python -m agent chat`).

Streamlit reruns a page script on every interaction, in a thread of its own.
The agent needs one long-lived asyncio loop, so this module owns exactly one
loop per process, running in a background daemon thread. Each browser
session gets its own conversation (a :class:`ChatSession`) on that loop,
found again by a key the page keeps in ``st.session_state``: a rerun never
builds a second session and never blocks on the loop. Every method here is
thread-safe and returns immediately (work comes back as a
``concurrent.futures.Future``).

Usage from a page::

    import uuid
    import streamlit as st
    from agent.runtime import get_runtime
    from core.retrieval import RrfParams

    runtime = get_runtime()                                 # starts the loop thread once per process
    key = st.session_state.setdefault("chat_key", uuid.uuid4().hex)
    chat = runtime.open_text_session(key, verified.user_id)  # same key -> same ChatSession
    chat.ready.result(timeout=60)                           # optional: wait for preload + greeting
    st.write(chat.greeting)

    turn = chat.send("my favorite color is teal").result(timeout=60)   # -> TurnResult
    turn.reply; turn.tool_calls; turn.retrievals; turn.timings; turn.error

    events, cursor = chat.events_since(cursor)              # live panel, e.g. in st.fragment(run_every=1)
    chat.set_rrf(RrfParams(vector_weight=0.5, text_weight=0.5, k=60))  # sliders; next search uses it
    chat.history                                            # [{"turn", "role", "text", "ts"}]
    record = chat.close().result(timeout=60)                # writes the session report (idempotent)
    runtime.close_session(key)                              # same, by key

Sessions idle for longer than ``idle_timeout`` (30 min) are closed and their
reports saved; so are all open sessions when the process exits.
``user_id`` must be a *verified* id (from ``core.identity.verify``), never a
value from a form or a query string.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agent.events import QueueSink
from agent.session import PlaygroundSession
from core.db import parse_user_id
from core.errors import InvalidInput, PlaygroundError
from core.retrieval import RrfParams
from core.text import clean_text

log = logging.getLogger(__name__)

MAX_MESSAGE_LENGTH = 2000
SessionFactory = Callable[[QueueSink], Awaitable[PlaygroundSession]]


@dataclass(frozen=True)
class TurnResult:
    """One user turn: what was said back and everything the agent did for it."""

    turn: int
    user_text: str
    reply: str  # the agent's answer (its last message this turn)
    messages: list[str]  # every assistant message this turn, fillers included
    events: list[dict[str, Any]]  # this turn's events (schema: agent/events.py)
    timings: dict[str, float]  # total_ms, recall_ms, llm_ttft_ms, tools_ms, ...
    error: str | None = None  # why the turn failed (one sentence to show); `reply` is then "" or partial

    @property
    def problems(self) -> list[str]:
        """Every error published for this turn (a failed model call, a tool call the model got wrong)."""
        return [e["message"] for e in self.events if e["type"] == "error"]

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == "tool_call"]

    @property
    def retrievals(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == "retrieval"]


@dataclass
class _Closing:
    future: concurrent.futures.Future | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class ChatSession:
    """One conversation on the runtime's loop. Create through :meth:`AgentRuntime.open_text_session`."""

    def __init__(self, runtime: AgentRuntime, key: str, user_id: uuid.UUID, *, rrf: RrfParams | None,
                 factory: SessionFactory | None = None) -> None:
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

    def events_since(self, cursor: int = 0) -> tuple[list[dict[str, Any]], int]:
        """Events after `cursor` and the new cursor (start with 0)."""
        return self.sink.since(cursor)

    @property
    def history(self) -> list[dict[str, Any]]:
        """The conversation so far: final user and assistant transcripts, in order."""
        events = self._ps.bus.events if self._ps else self.sink.since(0)[0]
        return [{"turn": e["turn"], "role": e["role"], "text": e["text"], "ts": e["ts"]}
                for e in events if e["type"] == "transcript" and e.get("final")]

    # ---- write side ------------------------------------------------------------

    def set_rrf(self, params: RrfParams) -> RrfParams:
        """Change the fusion weights and k for every later search of this session."""
        self._rrf = params.validated()
        if self._ps is not None:
            self._ps.set_rrf(self._rrf)
        return self._rrf

    def send(self, text: str) -> concurrent.futures.Future[TurnResult]:
        """Run one typed turn. Bad input fails the future with InvalidInput (a user-safe message)."""
        self.last_active = time.monotonic()
        try:
            text = clean_text(text, what="message", max_length=MAX_MESSAGE_LENGTH)
            if self.closed:
                raise InvalidInput("This conversation has ended; start a new one.")
        except InvalidInput as exc:
            failed: concurrent.futures.Future[TurnResult] = concurrent.futures.Future()
            failed.set_exception(exc)
            return failed
        return self.runtime.submit(self._send(text))

    def close(self) -> concurrent.futures.Future[dict[str, Any] | None]:
        """End the conversation and save its report (idempotent: later calls get the same future)."""
        with self._closing.lock:
            if self._closing.future is None:
                self._closing.future = self.runtime.submit(self._close())
                self.runtime._forget(self)
            return self._closing.future

    # ---- on the loop ---------------------------------------------------------

    async def _start(self) -> str | None:
        self._turn_lock = asyncio.Lock()
        try:
            await asyncio.wrap_future(self.runtime.warm)
        except Exception:  # noqa: BLE001 - a failed warm-up only costs the first turn's recall
            pass
        if self._factory is not None:
            self._ps = await self._factory(self.sink)
            self._ps.set_rrf(self._rrf)
            self.greeting = next((e["text"] for e in self._ps.bus.events if e["type"] == "transcript"
                                  and e["role"] == "assistant" and e["turn"] == 0), None)
            return self.greeting
        ps = PlaygroundSession(self.user_id, mode="text", rrf=self._rrf, sinks=[self.sink])
        self._ps = ps
        self.greeting = await ps.start()
        return self.greeting

    async def _send(self, text: str) -> TurnResult:
        await asyncio.wrap_future(self.ready)
        assert self._ps is not None and self._turn_lock is not None
        async with self._turn_lock:
            ps = self._ps
            cursor = self.sink.cursor
            started = time.perf_counter()
            error = None
            messages: list[str] = []
            try:
                result = await ps.run_text(text)
                messages = [ev.item.text_content for ev in result.events
                            if ev.type == "message" and ev.item.role == "assistant" and ev.item.text_content]
            except PlaygroundError as exc:  # the model failed (TurnFailed: the sentence); the conversation goes on
                error = str(exc)
            except Exception as exc:  # anything else around the model: same, with a generic sentence
                log.exception("turn failed in session %s", ps.session_id)
                error = f"The agent failed to answer ({type(exc).__name__}); the server log has the details."
            total_ms = (time.perf_counter() - started) * 1000
            turn = ps.bus.turn
            ps.bus.metric("turn_total_ms", total_ms)
            # turn_done fires from the speech handle's callback, which can trail the run by a tick
            for _ in range(50):
                if any(e["type"] == "turn_done" and e["turn"] == turn for e in self.sink.since(cursor)[0]):
                    break
                await asyncio.sleep(0.01)
            events = [e for e in self.sink.since(cursor)[0] if e["turn"] == turn]
            self.last_active = time.monotonic()
        timings: dict[str, float] = {"total_ms": round(total_ms, 2)}
        for event in events:
            if event["type"] == "metric" and event["name"] not in timings:
                timings[event["name"]] = event["value"]
        tools = [e["duration_ms"] for e in events if e["type"] == "tool_call"]
        if tools:
            timings["tools_ms"] = round(sum(tools), 2)
        problems = [e["message"] for e in events if e["type"] == "error"]
        if error is None and problems and not messages:
            error = problems[-1]  # e.g. only unknown tools were called: nothing was said
        reply = messages[-1] if messages else ""
        return TurnResult(turn=turn, user_text=text, reply=reply, messages=messages, events=events,
                          timings=timings, error=error)

    async def _close(self) -> dict[str, Any] | None:
        try:
            await asyncio.wrap_future(self.ready)
        except Exception:
            log.warning("session %s never started; nothing to report", self.key)
            return None
        assert self._ps is not None and self._turn_lock is not None
        async with self._turn_lock:  # let a turn in flight finish first
            return await self._ps.finish()


class AgentRuntime:
    """One asyncio loop in a daemon thread, and the conversations running on it."""

    def __init__(self, *, idle_timeout: float = 30 * 60, reap_interval: float = 60.0) -> None:
        self.idle_timeout = idle_timeout
        self.reap_interval = reap_interval
        self._sessions: dict[str, ChatSession] = {}
        self._lock = threading.Lock()
        self._stopped = False
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run_loop, name="agent-runtime", daemon=True)
        self._thread.start()
        self.warm = self.submit(self._warm_up())  # done once the embedding model is loaded
        self._reaper = self.submit(self._reap_forever())

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Awaitable[Any]) -> concurrent.futures.Future:
        """Run a coroutine on the agent loop from any thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    # ---- sessions ----------------------------------------------------------------

    def open_text_session(self, key: str, user_id: uuid.UUID | str, rrf: RrfParams | None = None) -> ChatSession:
        """The text conversation for `key`, created on first use (idempotent per key).

        If the key's session belongs to another user (the visitor switched
        identity), that session is closed (report saved) and a new one starts.
        """
        return self.open_session(key, user_id, rrf=rrf)

    def open_session(self, key: str, user_id: uuid.UUID | str, *, rrf: RrfParams | None = None,
                     factory: SessionFactory | None = None) -> ChatSession:
        """Like open_text_session, with a custom `factory(sink) -> started PlaygroundSession`
        (the voice pipeline uses it to get the same send/events/close API)."""
        user_id = parse_user_id(user_id)
        with self._lock:
            if self._stopped:
                raise RuntimeError("the agent runtime has shut down")
            existing = self._sessions.get(key)
            if existing is not None and not existing.closed and existing.user_id == user_id:
                existing.last_active = time.monotonic()
                return existing
            if existing is not None:
                self._sessions.pop(key, None)
        if existing is not None and not existing.closed:
            existing.close()
        with self._lock:
            current = self._sessions.get(key)  # another thread may have won the race
            if current is not None and not current.closed and current.user_id == user_id:
                return current
            chat = ChatSession(self, key, user_id, rrf=rrf, factory=factory)
            self._sessions[key] = chat
            return chat

    def get_session(self, key: str) -> ChatSession | None:
        with self._lock:
            return self._sessions.get(key)

    def close_session(self, key: str) -> concurrent.futures.Future | None:
        with self._lock:
            chat = self._sessions.get(key)
        return chat.close() if chat else None

    def _forget(self, chat: ChatSession) -> None:
        with self._lock:
            if self._sessions.get(chat.key) is chat:
                del self._sessions[chat.key]

    @property
    def session_count(self) -> int:
        with self._lock:
            return len(self._sessions)

    def close_idle(self, max_idle: float | None = None) -> list[str]:
        """Close sessions idle longer than `max_idle` seconds (default: idle_timeout); returns their keys."""
        limit = self.idle_timeout if max_idle is None else max_idle
        now = time.monotonic()
        with self._lock:
            idle = [chat for chat in self._sessions.values() if now - chat.last_active > limit]
        for chat in idle:
            log.info("closing idle session %s", chat.key)
            chat.close()
        return [chat.key for chat in idle]

    def shutdown(self, timeout: float = 20.0) -> None:
        """Close every session (reports saved), then stop the loop. Idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            sessions = list(self._sessions.values())
        futures = [chat.close() for chat in sessions]
        concurrent.futures.wait(futures, timeout=timeout)
        self._reaper.cancel()
        self.warm.cancel()

        async def _stop() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.loop.shutdown_default_executor()

        try:
            self.submit(_stop()).result(timeout=5)
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)

    async def _warm_up(self) -> None:
        from agent import reports
        from core import embeddings

        try:
            # load the embedding model now, so the first turn's recall fits its time budget
            await asyncio.to_thread(embeddings.get_model)
            await asyncio.to_thread(reports.flush_pending)
        except PlaygroundError as exc:
            log.warning("runtime warm-up: %s", exc)

    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(self.reap_interval)
            try:
                self.close_idle()
            except Exception:
                log.exception("closing idle sessions failed")


_runtime: AgentRuntime | None = None
_runtime_lock = threading.Lock()


def get_runtime() -> AgentRuntime:
    """The process's runtime (created, with its loop thread, on first use)."""
    global _runtime
    with _runtime_lock:
        if _runtime is None or _runtime._stopped:
            if _runtime is None:
                atexit.register(_shutdown_at_exit)
            _runtime = AgentRuntime()
        return _runtime


def _shutdown_at_exit() -> None:
    runtime = _runtime
    if runtime is not None:
        try:
            runtime.shutdown(timeout=15)
        except Exception:
            log.exception("runtime shutdown failed")
