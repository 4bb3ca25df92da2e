"""Keep a local Whisper's vocabulary (its prompt and its respelling) in step with one user's memories.

`refresh` reads the words of the user and the deployment (`core.vocabulary.speech_terms`, the verified
user's service scope) and gives them to the STT. It runs when a session starts and again whenever
this process changes the user's memories or name (`core.memory_changes`): the agent's tools and the
Memories page alike, so a name the user just gave is recognised in their next sentence and a deleted
one is no longer written into transcripts. Used by the browser's local call and by a LiveKit worker
that runs the local Whisper; with any other STT it does nothing. A worker also hears the changes other
processes make (the app's Memories page) from the database (`core.memory_changes.follow_database`), so
its own changes arrive twice; a refresh asked for while one is still waiting to start is not repeated.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid

from agent.voice.local_stt import LocalWhisperSTT
from core import memory_changes, vocabulary
from core.db import Scope

log = logging.getLogger(__name__)


class SpeechVocabulary:
    def __init__(self, stt, user_id: uuid.UUID, loop: asyncio.AbstractEventLoop) -> None:
        self.stt = stt if isinstance(stt, LocalWhisperSTT) else None
        self.user_id = user_id
        self.loop = loop
        self._background: set[asyncio.Future] = set()
        self._waiting = threading.Event()  # a refresh is scheduled and has not read the words yet
        if self.stt is not None:
            memory_changes.subscribe(self)

    async def refresh(self) -> None:
        if self.stt is None:
            return
        try:
            # off the loop: the read, and building the prompt and the respelling (the word table's first read)
            await asyncio.to_thread(self._read_and_set)
        except Exception as exc:  # recognition still works without the user's words
            log.warning("could not read the speech vocabulary for %s: %s", self.user_id, exc)

    def _read_and_set(self) -> None:
        self._waiting.clear()  # a change from now on needs another read
        self.stt.set_vocabulary(vocabulary.speech_terms(Scope.service(self.user_id)))

    def memories_changed(self, user_id: uuid.UUID | None) -> None:
        """Called on whichever thread made the change (None: anyone's may have changed)."""
        if user_id is not None and str(user_id) != str(self.user_id):
            return
        if self._waiting.is_set():  # the scheduled refresh has not read yet: it will see this change too
            return
        self._waiting.set()

        def schedule() -> None:
            task = asyncio.ensure_future(self.refresh())
            self._background.add(task)
            task.add_done_callback(self._background.discard)

        with contextlib.suppress(RuntimeError):  # the loop is closed: the session is over
            self.loop.call_soon_threadsafe(schedule)

    def close(self) -> None:
        memory_changes.unsubscribe(self)
