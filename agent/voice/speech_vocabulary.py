"""Keep a local Whisper's vocabulary (its prompt and its respelling) in step with one user's memories.

An event sink for a session: `refresh` reads the words of the user and the deployment
(`core.vocabulary.speech_terms`, the verified user's service scope) and gives them to the STT; after a
tool that writes memories it refreshes again, so a name the user just gave is recognised in their
next sentence. Used by the browser's local call and by a LiveKit worker that runs the local Whisper;
with any other STT it does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid

from agent.events import Event
from agent.voice.local_stt import LocalWhisperSTT
from core import vocabulary
from core.db import Scope

log = logging.getLogger(__name__)

# tools after which the user's remembered words may have changed
MEMORY_WRITING_TOOLS = frozenset({"remember_detail", "forget_detail", "update_profile"})


class SpeechVocabulary:
    def __init__(self, stt, user_id: uuid.UUID, loop: asyncio.AbstractEventLoop) -> None:
        self.stt = stt if isinstance(stt, LocalWhisperSTT) else None
        self.user_id = user_id
        self.loop = loop
        self._background: set[asyncio.Future] = set()

    async def refresh(self) -> None:
        if self.stt is None:
            return
        try:
            terms = await asyncio.to_thread(vocabulary.speech_terms, Scope.service(self.user_id))
        except Exception as exc:  # recognition still works without the user's words
            log.warning("could not read the speech vocabulary for %s: %s", self.user_id, exc)
            return
        self.stt.set_vocabulary(terms)

    def publish(self, event: Event) -> None:
        if self.stt is None or event["type"] != "tool_call" or event.get("name") not in MEMORY_WRITING_TOOLS:
            return

        def schedule() -> None:
            task = asyncio.ensure_future(self.refresh())
            self._background.add(task)
            task.add_done_callback(self._background.discard)

        with contextlib.suppress(RuntimeError):  # the loop is closed: the session is over
            self.loop.call_soon_threadsafe(schedule)
