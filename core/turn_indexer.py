"""Storing conversation turns off the turn's critical path.

`TurnIndexer` is a queue and one background thread per process: the agent
hands it each user and agent turn as it happens (`submit` only enqueues, so a
reply never waits for an embedding or an insert), and the thread stores them
with core.conversations.store_turns, a batch at a time.

Nothing is lost on the way:

* the embedding model fails: store_turns stores the turns without an
  embedding (the text branch finds them meanwhile) and the indexer remembers
  the user; its retry pass (`embed_pending`, every `retry_seconds` and on
  `flush`) embeds them once the model works again;
* the insert fails (database unreachable): the batch stays queued and is
  tried again with a growing pause, until it is stored;
* a turn the database refuses (InvalidInput: another user's session id) is
  the only thing dropped, with an error in the log: retrying cannot fix it.

The thread waits until no turn has arrived for `settle_seconds` (1 s) before it
embeds: a user's turn arrives just as the agent embeds the same words for its
recall, and the embedding model runs one text at a time (core.embeddings), so
indexing at once would make the reply wait (about 25 ms a turn in a voice call).
`flush` and `close` do not wait.

Turns still queued when the process exits are written by `close` (called at
exit); the session report keeps the transcript too.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from core import conversations, embeddings
from core.conversations import MAX_TURN_LENGTH, WITHHELD_TEXT, TurnInput
from core.db import Scope
from core.errors import DatabaseUnavailable, EmbeddingUnavailable, InvalidInput

log = logging.getLogger(__name__)

BATCH = 32
MAX_PAUSE_SECONDS = 30.0
SETTLE_SECONDS = 1.0


@dataclass(frozen=True)
class QueuedTurn:
    user_id: uuid.UUID
    turn: TurnInput


class TurnIndexer:
    """See the module docstring. Thread-safe; `submit` never blocks on the database or the model."""

    def __init__(
        self,
        *,
        embed: Callable[[Sequence[str]], np.ndarray] = embeddings.embed,
        retry_seconds: float = 30.0,
        first_pause_seconds: float = 0.5,
        settle_seconds: float = SETTLE_SECONDS,
    ) -> None:
        self._embed = embed
        self.retry_seconds = retry_seconds
        self._first_pause = first_pause_seconds
        self._settle = settle_seconds
        self._last_submit = 0.0  # monotonic time of the newest submit
        self._hurry = 0  # callers of flush waiting: store now, do not settle
        self._queue: deque[QueuedTurn] = deque()
        self._pending_users: set[uuid.UUID] = set()  # users with turns stored without an embedding
        self._cond = threading.Condition()
        self._busy = False
        self._closed = False
        self._stored = 0
        self._dropped = 0
        self._thread = threading.Thread(target=self._run, name="turn-indexer", daemon=True)
        self._thread.start()

    # --- any thread ---------------------------------------------------------------------------

    def submit(
        self,
        user_id: uuid.UUID,
        session_id: str,
        turn_index: int,
        speaker: str,
        content: str,
        *,
        created_at: datetime | None = None,
        opening: bool = False,
        withheld: bool = False,
    ) -> bool:
        """Queue one turn; returns False (and queues nothing) for a turn with no words. `opening`: see
        core.conversations.TurnInput. A `withheld` turn is queued without its words: it is stored as
        core.conversations.WITHHELD_TEXT."""
        content = (content or "").strip()[:MAX_TURN_LENGTH]
        if not content:
            return False
        if withheld:
            content = WITHHELD_TEXT  # what was said is not held here either, not even while it waits
        turn = TurnInput(session_id, turn_index, speaker, content, created_at or datetime.now(UTC), opening, withheld)
        with self._cond:
            if self._closed:
                log.error("turn %s of session %s arrived after shutdown; not stored", turn_index, session_id)
                return False
            self._queue.append(QueuedTurn(user_id, turn))
            self._last_submit = time.monotonic()
            self._cond.notify_all()
        return True

    @property
    def queued(self) -> int:
        with self._cond:
            return len(self._queue) + (1 if self._busy else 0)

    @property
    def stats(self) -> dict[str, int]:
        with self._cond:
            return {
                "queued": len(self._queue),
                "stored": self._stored,
                "dropped": self._dropped,
                "users_awaiting_embeddings": len(self._pending_users),
            }

    def flush(self, timeout: float = 30.0, *, embed_pending: bool = True) -> bool:
        """Wait until every queued turn is stored (and, with `embed_pending`, try the retry pass once);
        True when nothing is left queued."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._hurry += 1
            self._cond.notify_all()
            try:
                while self._queue or self._busy:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._cond.wait(min(left, 0.2))
            finally:
                self._hurry -= 1
        if embed_pending:
            self.embed_pending()
        return True

    def embed_pending(self) -> int:
        """The retry pass: embed the turns stored without an embedding, for the users this indexer wrote
        them for; returns how many were embedded. Users whose turns still fail stay pending."""
        with self._cond:
            users = list(self._pending_users)
        done = 0
        for user_id in users:
            scope = Scope.service(user_id)
            try:
                while True:
                    count = conversations.embed_pending(scope, embed=self._embed)
                    done += count
                    if count == 0:
                        break
            except (EmbeddingUnavailable, DatabaseUnavailable) as exc:
                log.warning("embedding stored turns failed again, will retry: %s", exc)
                continue
            with self._cond:
                self._pending_users.discard(user_id)
        return done

    def close(self, timeout: float = 10.0) -> None:
        """Store what is queued (within `timeout`) and stop the thread."""
        self.flush(timeout, embed_pending=False)
        with self._cond:
            self._closed = True
            left = len(self._queue)
            self._cond.notify_all()
        if left:
            log.error("%d conversation turn(s) could not be stored before exit (the reports keep them)", left)
        self._thread.join(timeout=2)

    # --- the background thread --------------------------------------------------------------------

    def _run(self) -> None:
        pause = self._first_pause
        last_retry = time.monotonic()
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    waited = self._cond.wait(timeout=max(0.1, self.retry_seconds - (time.monotonic() - last_retry)))
                    if not waited and time.monotonic() - last_retry >= self.retry_seconds:
                        if self._pending_users:
                            break  # time for the retry pass
                        last_retry = time.monotonic()
                if self._closed and not self._queue:
                    return
                self._settle_locked()
                batch = self._take_batch()
                self._busy = bool(batch)
            try:
                if batch and not self._store(batch):
                    with self._cond:  # not stored: back to the front, in order, and wait a little longer
                        self._queue.extendleft(reversed(batch))
                        self._busy = False
                        self._cond.wait(timeout=pause)
                    pause = min(pause * 2, MAX_PAUSE_SECONDS)
                    continue
                pause = self._first_pause
                if time.monotonic() - last_retry >= self.retry_seconds:
                    last_retry = time.monotonic()
                    self.embed_pending()
            except Exception:  # the thread must survive anything, or every later turn would be lost
                log.exception("the turn indexer failed on a batch; retrying")
                with self._cond:
                    if batch:
                        self._queue.extendleft(reversed(batch))
                    self._cond.wait(timeout=pause)
                pause = min(pause * 2, MAX_PAUSE_SECONDS)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _settle_locked(self) -> None:
        """Wait (holding the condition) until no turn has arrived for `settle_seconds`, unless a caller
        is flushing, the indexer is closing or a full batch is waiting."""
        while self._queue and not (self._hurry or self._closed or len(self._queue) >= BATCH):
            left = self._last_submit + self._settle - time.monotonic()
            if left <= 0:
                return
            self._cond.wait(timeout=left)

    def _take_batch(self) -> list[QueuedTurn]:
        """Up to BATCH turns of the first queued user (one store_turns call per user)."""
        if not self._queue:
            return []
        user_id = self._queue[0].user_id
        batch: list[QueuedTurn] = []
        while self._queue and self._queue[0].user_id == user_id and len(batch) < BATCH:
            batch.append(self._queue.popleft())
        return batch

    def _store(self, batch: list[QueuedTurn]) -> bool:
        """Store one user's batch; False when the database is unreachable (the caller requeues it)."""
        user_id = batch[0].user_id
        scope = Scope.service(user_id)
        try:
            stored = conversations.store_turns(scope, [q.turn for q in batch], embed=self._embed)
        except DatabaseUnavailable as exc:
            log.warning("storing %d conversation turn(s) failed, will retry: %s", len(batch), exc)
            return False
        except InvalidInput:
            stored = self._store_one_by_one(scope, batch)
        with self._cond:
            self._stored += len(stored)
            if any(not turn.embedded and not turn.opening and not turn.withheld for turn in stored):
                self._pending_users.add(user_id)
        return True

    def _store_one_by_one(self, scope: Scope, batch: list[QueuedTurn]) -> list[conversations.ConversationTurn]:
        """A batch the database refused: store what it accepts, drop (and log) only what it refuses."""
        stored = []
        for queued in batch:
            try:
                stored += conversations.store_turns(scope, [queued.turn], embed=self._embed)
            except InvalidInput as exc:
                log.error(
                    "conversation turn %s of session %s refused, not stored: %s",
                    queued.turn.turn_index,
                    queued.turn.session_id,
                    exc,
                )
                with self._cond:
                    self._dropped += 1
        return stored


_indexer: TurnIndexer | None = None
_indexer_lock = threading.Lock()


def flush_queued(timeout: float = 10.0) -> bool:
    """Store what this process's indexer still holds, now; True when nothing is left (or there is none)."""
    indexer = _indexer
    return True if indexer is None else indexer.flush(timeout, embed_pending=False)


def get_indexer() -> TurnIndexer:
    """The process's indexer (started on first use, flushed at exit)."""
    global _indexer
    with _indexer_lock:
        if _indexer is None:
            _indexer = TurnIndexer()
            atexit.register(_indexer.close)
        return _indexer
