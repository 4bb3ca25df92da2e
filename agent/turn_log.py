"""Every user and agent turn of a session, handed to the conversation tier as it happens.

:class:`TurnLogSink` is an event sink (agent/event_bus.py): it watches a
session's final transcripts and queues each one on the process's
:class:`core.turn_indexer.TurnIndexer`, which stores and embeds it on its own
thread. Queuing is all that happens on the agent's loop, so a reply never
waits for an embedding or an insert.
"""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime

from agent.events import Event
from agent.prompts import FILLER_TEXT
from core.turn_indexer import TurnIndexer, get_indexer


class TurnLogSink:
    """Queues the final user and assistant transcripts of one session, numbered 0, 1, 2, ... in order.

    Fillers ("One moment, let me look that up.") are left out: they say nothing worth finding later.
    Events forwarded from elsewhere (``origin``) are left out too: the process that made them stores them.
    What the agent says before the user's first message (the greeting) is stored as an *opening*: kept in
    the transcript, never searched (core.conversations.TurnInput), since it holds nothing the user said.
    """

    def __init__(self, user_id: uuid.UUID, session_id: str, *, indexer: TurnIndexer | None = None) -> None:
        self.user_id = user_id
        self.session_id = session_id
        self._indexer = indexer
        self._next_index = 0
        self.user_spoke = False  # the user said (or typed) something in this session
        self._lock = threading.Lock()

    @property
    def indexer(self) -> TurnIndexer:
        return self._indexer or get_indexer()

    def publish(self, event: Event) -> None:
        if event["type"] != "transcript" or not event.get("final") or event.get("origin"):
            return
        text = (event.get("text") or "").strip()
        if not text or (event["role"] == "assistant" and text == FILLER_TEXT):
            return
        with self._lock:
            self.user_spoke = self.user_spoke or event["role"] == "user"
            queued = self.indexer.submit(
                self.user_id,
                self.session_id,
                self._next_index,
                event["role"],
                text,
                created_at=datetime.fromtimestamp(event["ts"], UTC),
                opening=not self.user_spoke,
            )
            if queued:
                self._next_index += 1
