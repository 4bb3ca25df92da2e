"""A running call's Whisper follows the user's words: what the Memories page deletes is no longer
written into transcripts, and another user's changes do not touch it."""

from __future__ import annotations

import asyncio

from agent.voice.local_stt import STYLE_PROMPT, LocalWhisperSTT
from agent.voice.speech_vocabulary import SpeechVocabulary
from core import memories, memory_changes


async def _until(condition) -> bool:
    for _ in range(200):
        if condition():
            return True
        await asyncio.sleep(0.02)
    return False


async def test_a_memory_deleted_on_the_memories_page_leaves_the_calls_vocabulary(new_user):
    user, other = new_user(), new_user()
    stored = memories.remember(user.scope, "partner", "Thibault").memory
    stt = LocalWhisperSTT()
    words = SpeechVocabulary(stt, user.user_id, asyncio.get_running_loop())
    try:
        await words.refresh()  # the call starts
        assert stt.prompt.startswith(STYLE_PROMPT) and stt.prompt.endswith("Thibault.")
        assert stt.respell("Fibault called.") == "Thibault called."

        # another user's change is not this call's business
        prompt = stt.prompt
        await asyncio.to_thread(memories.remember, other.scope, "partner", "Reinholt")
        await asyncio.sleep(0.3)
        assert stt.prompt == prompt

        # the Memories page deletes it (as the user, on the page's own thread)
        await asyncio.to_thread(memories.delete_memory, user.scope, stored.id)
        assert await _until(lambda: "Thibault" not in stt.prompt), stt.prompt
        assert stt.respell("Fibault called.") == "Fibault called."
    finally:
        words.close()
    # an ended call no longer listens
    await asyncio.to_thread(memories.remember, user.scope, "partner", "Thibault")
    await asyncio.sleep(0.3)
    assert "Thibault" not in stt.prompt


def test_a_hosted_stt_is_not_told_anything(new_user):
    loop = asyncio.new_event_loop()
    try:
        words = SpeechVocabulary(object(), new_user().user_id, loop)
        assert words.stt is None and words not in memory_changes._listeners
    finally:
        loop.close()


async def test_a_change_heard_twice_is_read_once(new_user):
    """A worker hears its own changes twice (in this process and from the database): while a refresh
    waits to start, another notice adds nothing; once it has read, the next change is read again."""
    # no listener on the database in this process (a call in an earlier test may have started one): its notice
    # of the change below could come after the first read and count as a second change
    memory_changes.stop_following()
    user = new_user()
    stt = LocalWhisperSTT()
    words = SpeechVocabulary(stt, user.user_id, asyncio.get_running_loop())
    reads: list[list[str]] = []
    set_vocabulary = stt.set_vocabulary

    def counting(terms):
        reads.append(list(terms))
        set_vocabulary(terms)

    stt.set_vocabulary = counting
    try:
        memories.remember(user.scope, "partner", "Thibault")  # told in this process (the loop has not run since)
        words.memories_changed(user.user_id)  # the same change, heard from the database
        words.memories_changed(None)  # "anyone's may have changed" (the feed reconnected)
        assert await _until(lambda: reads)
        await asyncio.sleep(0.3)
        assert len(reads) == 1 and reads[0][-1] == "Thibault"
        words.memories_changed(None)
        assert await _until(lambda: len(reads) == 2)
    finally:
        words.close()
