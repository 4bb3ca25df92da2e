"""The in-process agent runtime: the agent inside the Streamlit process (and `python -m agent chat`).

Streamlit reruns a page script on every interaction, in a thread of its own.
The agent needs one long-lived asyncio loop, so this module owns exactly one
loop per process, running in a background daemon thread. Each browser
session gets its own :class:`~agent.conversation.Conversation` on that loop,
found again by a key the page keeps in ``st.session_state``: a rerun never
builds a second conversation and never blocks on the loop. Every method here
is thread-safe and returns immediately (work comes back as a
``concurrent.futures.Future``).

Usage from a page::

    import uuid
    import streamlit as st
    from agent import get_runtime
    from core.retrieval import RrfParams

    runtime = get_runtime()                                  # starts the loop thread once per process
    key = st.session_state.setdefault("chat_key", uuid.uuid4().hex)
    chat = runtime.open_conversation(key, verified.user_id)  # same key -> same Conversation
    chat.ready.result(timeout=60)                            # optional: wait for preload + greeting
    st.write(chat.greeting)

    turn = chat.send("my favorite color is teal").result(timeout=60)   # -> TurnResult
    turn.reply; turn.tool_calls; turn.retrievals; turn.timings; turn.error

    events, cursor = chat.events_since(cursor)               # live panel, e.g. in st.fragment(run_every=1)
    chat.set_rrf(RrfParams(vector_weight=0.5, text_weight=0.5, k=60))  # sliders; next search uses it
    chat.history                                             # [{"turn", "role", "text", "ts"}]
    record = chat.close().result(timeout=60)                 # writes the session report (idempotent)
    runtime.close_conversation(key)                          # same, by key

Conversations idle for longer than ``idle_timeout`` (30 min) are closed and
their reports saved; so are all open ones when the process exits.
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
from collections.abc import Awaitable
from typing import Any

from agent import reports
from agent.conversation import APP_STOPPED, SESSION_DELETED, Conversation, SessionFactory
from core import db, embeddings, memory_changes, session_deletions, sessions
from core.db import Scope, parse_user_id
from core.errors import PlaygroundError
from core.retrieval import RrfParams

log = logging.getLogger(__name__)


class AgentRuntime:
    """One asyncio loop in a daemon thread, and the conversations running on it."""

    def __init__(self, *, idle_timeout: float = 30 * 60, reap_interval: float = 60.0) -> None:
        self.idle_timeout = idle_timeout
        self.reap_interval = reap_interval
        self._conversations: dict[str, Conversation] = {}
        self._lock = threading.Lock()
        self._stopped = False
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run_loop, name="agent-runtime", daemon=True)
        self._thread.start()
        self.warm = self.submit(self._warm_up())  # done once the embedding model is loaded
        self._reaper = self.submit(self._reap_forever())
        # a session deleted in another app process (behind a load balancer) ends here too: see session_deleted
        session_deletions.subscribe(self)
        self.following = self.submit(self._follow_database())

    @property
    def stopped(self) -> bool:
        return self._stopped

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Awaitable[Any]) -> concurrent.futures.Future:
        """Run a coroutine on the agent loop from any thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    # ---- conversations -------------------------------------------------------------

    def open_conversation(
        self, key: str, user_id: uuid.UUID | str, *, rrf: RrfParams | None = None, factory: SessionFactory | None = None
    ) -> Conversation:
        """The conversation for `key`, created on first use (idempotent per key).

        By default a text conversation; `factory(sink) -> started PlaygroundSession` builds another kind
        (a local voice call uses it to get the same send/events/close API). If the key's conversation
        belongs to another user (the visitor switched identity), it is closed (report saved) and a new
        one starts.
        """
        user_id = parse_user_id(user_id)
        with self._lock:
            if self._stopped:
                raise RuntimeError("the agent runtime has shut down")
            existing = self._conversations.get(key)
            if existing is not None and not existing.closed and existing.user_id == user_id:
                existing.last_active = time.monotonic()
                return existing
            if existing is not None:
                self._conversations.pop(key, None)
        if existing is not None and not existing.closed:
            existing.close()
        with self._lock:
            current = self._conversations.get(key)  # another thread may have won the race
            if current is not None and not current.closed and current.user_id == user_id:
                return current
            conversation = Conversation(self, key, user_id, rrf=rrf, factory=factory)
            self._conversations[key] = conversation
            return conversation

    def get_conversation(self, key: str) -> Conversation | None:
        with self._lock:
            return self._conversations.get(key)

    def close_conversation(self, key: str) -> concurrent.futures.Future | None:
        with self._lock:
            conversation = self._conversations.get(key)
        return conversation.close() if conversation else None

    def close_session(
        self, user_id: uuid.UUID | str, session_id: str, *, reason: str = SESSION_DELETED
    ) -> list[concurrent.futures.Future]:
        """Close the user's conversations that are session `session_id` (in any browser session of this
        process): a session deleted while still open is ended first, so nothing of it is written after the
        deletion. Each future is done once that conversation's report is saved."""
        user_id = parse_user_id(user_id)
        with self._lock:
            matching = [c for c in self._conversations.values() if c.user_id == user_id and c.session_id == session_id]
        return [conversation.close(reason=reason) for conversation in matching]

    def session_deleted(self, user_id: uuid.UUID | None, session_id: str | None) -> None:
        """core.session_deletions: the owner deleted a session, maybe in another process; a conversation of it
        running here ends (its tab says why). None, None: deletions may have been missed; each open
        conversation asks the database."""
        if user_id is not None and session_id is not None:
            if self.close_session(user_id, session_id):
                log.info("session %s was deleted by its owner; its conversation here ends", session_id)
            return
        with self._lock:
            running = [(c.user_id, c.session_id) for c in self._conversations.values() if c.session_id]
        for owner, running_id in running:
            try:
                if sessions.was_deleted(Scope.service(owner), running_id):
                    self.close_session(owner, running_id)
            except PlaygroundError as exc:  # the database went away again: the next reconnect asks again
                log.warning("could not check whether session %s was deleted: %s", running_id, exc)

    def release(self, conversation: Conversation) -> None:
        """Forget a conversation that is closing (Conversation.close calls it)."""
        with self._lock:
            if self._conversations.get(conversation.key) is conversation:
                del self._conversations[conversation.key]

    @property
    def conversation_count(self) -> int:
        with self._lock:
            return len(self._conversations)

    def close_idle(self, max_idle: float | None = None) -> list[str]:
        """Close conversations idle longer than `max_idle` seconds (default: idle_timeout); returns their keys."""
        limit = self.idle_timeout if max_idle is None else max_idle
        now = time.monotonic()
        with self._lock:
            idle = [c for c in self._conversations.values() if now - c.last_active > limit]
        for conversation in idle:
            log.info("closing idle conversation %s", conversation.key)
            conversation.close()
        return [conversation.key for conversation in idle]

    def shutdown(self, timeout: float = 20.0) -> None:
        """Close every conversation (reports saved), then stop the loop. Idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            conversations = list(self._conversations.values())
        session_deletions.unsubscribe(self)
        futures = [conversation.close(reason=APP_STOPPED) for conversation in conversations]
        concurrent.futures.wait(futures, timeout=timeout)
        self._reaper.cancel()
        self.following.cancel()
        self.warm.cancel()
        try:
            self.submit(_cancel_everything_on(self.loop)).result(timeout=5)
        except Exception as exc:  # best effort at exit: the loop stops below either way
            log.warning("stopping the agent loop's tasks failed: %s", exc or type(exc).__name__)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)

    async def _warm_up(self) -> None:
        try:
            # load the embedding model now, so the first turn's recall fits its time budget
            await asyncio.to_thread(embeddings.get_model)
            await asyncio.to_thread(reports.flush_pending)
        except PlaygroundError as exc:
            log.warning("runtime warm-up: %s", exc)

    async def _follow_database(self) -> None:
        try:  # waits until it listens, at most 3 s (it keeps trying in the background); never fails the runtime
            await asyncio.to_thread(memory_changes.follow_database, db.service_url(), 3.0)
        except Exception as exc:
            log.warning("not following the database's deleted sessions and memory changes: %s", exc)

    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(self.reap_interval)
            try:
                self.close_idle()
            except Exception:
                log.exception("closing idle conversations failed")


async def _cancel_everything_on(loop: asyncio.AbstractEventLoop) -> None:
    tasks = [task for task in asyncio.all_tasks(loop) if task is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await loop.shutdown_default_executor()


_runtime: AgentRuntime | None = None
_runtime_lock = threading.Lock()


def get_runtime() -> AgentRuntime:
    """The process's runtime (created, with its loop thread, on first use)."""
    global _runtime
    with _runtime_lock:
        if _runtime is None or _runtime.stopped:
            if _runtime is None:
                atexit.register(shutdown_runtime)
            _runtime = AgentRuntime()
        return _runtime


def shutdown_runtime() -> None:
    """Close the process's conversations (their reports are saved) and stop its loop, if it has one.

    Runs at exit; a host that ends the process without running atexit handlers calls it itself."""
    runtime = _runtime
    if runtime is not None:
        try:
            runtime.shutdown(timeout=15)
        except Exception:
            log.exception("runtime shutdown failed")
