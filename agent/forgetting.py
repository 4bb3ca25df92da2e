"""A memory the user deletes while a conversation is open leaves that conversation too.

Deleting a memory (the Memories page, Delete everything, "forget my ...") deletes the stored turns that
mention it and blanks it in the saved session reports (core.memories). A conversation still open holds it
in more places: the events its page shows, the model's context (the preload, each turn's recall block, the
messages and tool results), and the report it saves at its end, whose facts are then extracted from the
user's messages again. Each session follows its user's memory changes (core.memory_changes: this process's
and, through the database feed, another's) and does to all of those what the deletion did to the stored
turns: every string that mentions a deleted memory's text, by the same rule (core.conversations.Mentions),
becomes core.sessions.DELETED_TEXT. The deleted texts are kept only in this process's memory, for as long
as the conversation runs.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from livekit.agents import llm

from agent.events import of_type
from agent.prompts import FORGOTTEN_NOTE
from core import conversations, memories, memory_changes, turn_indexer
from core.conversations import Mentions
from core.db import Scope
from core.sessions import DELETED_TEXT
from core.sessions import blanked as blanked_report

log = logging.getLogger(__name__)
# how soon a check a turn spared runs once the turn is over. Polled, not a hook on EventBus.finish_turn: the
# answer's chat-history item can land after turn_done, and a check run at turn_done left the deleted text in
# the model's context (tried 2026-12-07; tests/agent/test_forgetting.py failed under load)
AFTER_TURN_POLL_SECONDS = 0.2

# Event keys that name things rather than say them (event kinds, roles, tiers, tool names...): never blanked,
# so that a memory whose text is "assistant" or "conversations" leaves every event readable
STRUCTURAL_KEYS = frozenset(
    {
        "type",
        "session_id",
        "role",
        "source",
        "tier",
        "trigger",
        "mode",
        "who",
        "state",
        "name",
        "where",
        "kind",
        "origin",
        "speaker",
        "memory_type",
        "id",
        "skip_reason",
        "degraded_reason",
    }
)


class KnownMemories:
    """The user's memories as the conversation last read them: what a change took away."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self._known: dict[uuid.UUID, memories.Memory] | None = None

    def _read(self) -> dict[uuid.UUID, memories.Memory]:
        return {m.id: m for m in memories.list_memories(self.scope)}

    def read(self) -> None:
        """The first reading (blocking), when the conversation starts."""
        self._known = self._read()

    def changes(self) -> tuple[list[str], list[tuple[str, str]], set[str]]:
        """Read again (blocking): the texts of the memories deleted since the last reading (each one's text and
        the texts it held before, which its deletion took out of the past turns too), the memories edited since
        (slot, new text; an edited memory keeps its id), and the slots there are now."""
        now = self._read()
        before, self._known = self._known, now
        slots = {memory.memory_type for memory in now.values()}
        if before is None:  # the first reading failed: nothing to compare yet
            return [], [], slots
        gone = [text for key, memory in before.items() if key not in now for text in memory.every_content]
        edited = [
            (now[key].memory_type, now[key].content)
            for key, memory in before.items()
            if key in now and (now[key].memory_type, now[key].content) != (memory.memory_type, memory.content)
        ]
        return gone, edited, slots

    def live(self) -> set[str]:
        """The texts the user's memories hold as last read (their current ones): a text said again after it
        was deleted is a memory again, and no longer forgotten."""
        return {" ".join(memory.content.split()) for memory in (self._known or {}).values()}


def blank_mentions(doc: Any, says: Mentions) -> int:
    """Every string in `doc` (an event: dicts and lists, nested) that says one of the texts becomes
    DELETED_TEXT, in place, but for STRUCTURAL_KEYS; returns how many."""
    if isinstance(doc, dict):
        places = [(key, value) for key, value in doc.items() if key not in STRUCTURAL_KEYS]
    elif isinstance(doc, list):
        places = list(enumerate(doc))
    else:
        return 0
    count = 0
    for place, value in places:
        if isinstance(value, str):
            if value != DELETED_TEXT and says(value):
                doc[place] = DELETED_TEXT
                count += 1
        else:
            count += blank_mentions(value, says)
    return count


def scrub_chat_items(items: list[llm.ChatItem], says: Mentions, *, keep: str | None = None) -> int:
    """The model's context, in place: a message or tool result that says one of the texts becomes
    FORGOTTEN_NOTE, a tool call's arguments that say one become {}; returns how many items changed. `keep`:
    the id of the user message whose turn starts, which the model reads as said."""
    count = 0
    for item in items:
        if item.id == keep:
            continue
        if item.type == "message":
            text = item.text_content or ""
            if text and text != FORGOTTEN_NOTE and says(text):
                item.content = [FORGOTTEN_NOTE]
                count += 1
        elif item.type == "function_call" and item.arguments and says(item.arguments):
            item.arguments = json.dumps({})
            count += 1
        elif item.type == "function_call_output" and item.output not in ("", FORGOTTEN_NOTE) and says(item.output):
            item.output = FORGOTTEN_NOTE
            count += 1
    return count


class MemoryFollower:
    """Follows one user's memory changes (a core.memory_changes listener, held weakly there: the owner
    holds this) and hands each check what was deleted since the last one. `start` reads the memories first
    (off the loop); checks run on `loop`, one at a time, and changes heard during one are checked once more
    after it."""

    def __init__(self, user_id: uuid.UUID, label: str) -> None:
        self.user_id = user_id
        self.label = label  # what the log names: the session or call
        self.known = KnownMemories(Scope.service(user_id))
        self.texts: list[str] = []  # the deleted memories' texts forgotten so far
        self.messages = 0  # the conversation's messages blanked so far (pages redraw when it changes)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._first_reading: asyncio.Future | None = None
        self._checking: asyncio.Task | None = None
        self._lock: asyncio.Lock | None = None
        self._again = False

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """From any thread: read the user's memories on `loop` (in a worker thread) and follow their changes."""
        self._loop = loop
        loop.call_soon_threadsafe(self._read_first)  # before any check: call_soon keeps the order
        memory_changes.subscribe(self)

    def stop(self) -> None:
        memory_changes.unsubscribe(self)

    @property
    def checking(self) -> bool:
        """A check runs or is due (a change was heard and not yet compared)."""
        return self._again or (self._checking is not None and not self._checking.done())

    async def first_read(self) -> None:
        """On `loop`, after `start`: wait for the first reading of the user's memories (done or failed). A
        memory deleted before it is done is not among them, so nothing it took away would be forgotten."""
        while self._first_reading is None:
            await asyncio.sleep(0)  # start() asked for it with call_soon
        await asyncio.wait({self._first_reading})

    def _read_first(self) -> None:
        self._lock = asyncio.Lock()
        self._first_reading = asyncio.ensure_future(asyncio.to_thread(self.known.read))
        self._first_reading.add_done_callback(self._first_reading_done)

    def _first_reading_done(self, reading: asyncio.Future) -> None:
        if not reading.cancelled() and reading.exception() is not None:  # the first check reads them instead
            log.warning("%s: memories not read at start: %s", self.label, reading.exception())

    def memories_changed(self, user_id: uuid.UUID | None) -> None:
        """core.memory_changes, on any thread: this user's memories changed (None: anyone's may have)."""
        loop = self._loop
        if (user_id is None or user_id == self.user_id) and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._check_soon)

    def _check_soon(self) -> None:
        self._again = True
        if self._checking is None or self._checking.done():
            self._checking = asyncio.ensure_future(self._check_while_changed())

    async def _check_while_changed(self) -> None:
        while self._again:
            self._again = False
            await self.check_logged()

    async def check_logged(self) -> None:
        """`check`, a failure logged instead of raised (the forget tool waits for it: its memory is deleted)."""
        try:
            await self.check()
        except RuntimeError as exc:  # the process is exiting: its thread pool takes no more work
            log.warning("%s: deleted memories not checked: %s", self.label, exc)
        except Exception:  # the database went away: the next change, or the end of the session, checks again
            log.exception("%s: checking for deleted memories failed", self.label)

    async def check(self) -> int:
        """Compare the user's memories with the last reading and forget what was deleted since; returns how
        many strings were blanked."""
        if self._first_reading is None or self._lock is None:
            return 0
        async with self._lock:
            await asyncio.wait({self._first_reading})  # done or failed: KnownMemories.changes reads what it lacks
            gone, edited, slots = await asyncio.to_thread(self.known.changes)
            live = self.known.live()
            self.texts = [text for text in self.texts if text not in live]
            return await self._changed(gone, edited, slots)

    async def _changed(self, gone: list[str], edited: list[tuple[str, str]], slots: set[str]) -> int:
        raise NotImplementedError

    def _blank_events(self, shown: list[Any], says: Mentions, *, spare_turn: int | None = None) -> int:
        """The events in place (the same dicts a page reads from its QueueSink), but those of `spare_turn`;
        returns strings blanked."""
        blanked = 0
        for event in shown:
            if spare_turn is not None and event.get("turn") == spare_turn:
                continue
            count = blank_mentions(event, says)
            blanked += count
            self.messages += 1 if count and event["type"] == "transcript" and event.get("final") else 0
        return blanked


class Forgetting(MemoryFollower):
    """A session's follower of its user's memory changes (the module docstring). Made with the session,
    started on its loop once the agent exists, `settled` before the report is built.

    What is blanked where: the events (what the pages show) and the model's context as soon as a deletion
    is heard of; the agent's own "forget" waits for that before the model reads its result, so the model
    can say what it forgot, and the model's context loses that too when the next user turn starts
    (PlaygroundAgent.forget_mentions); the report, and the stored turns said after the deletion, at the end."""

    def __init__(self, session: Any) -> None:  # an agent.session.PlaygroundSession
        super().__init__(session.user_id, f"session {session.session_id}")
        self.session = session
        self._after_turn: asyncio.Future | None = None  # a check once the turn a check spared is over

    async def settled(self) -> None:
        """Before the report: one more check (a change notice may have been missed while the database feed
        was away), then the turns stored since that mention what was forgotten are deleted as well (the
        agent's confirmation that it forgot something, say)."""
        self.stop()
        if self._checking is not None:
            await asyncio.shield(self._checking)
        await self.check_logged()
        if self.texts:
            await asyncio.to_thread(turn_indexer.flush_queued, 2.0)
            try:
                await asyncio.to_thread(conversations.forget_mentions, Scope.service(self.user_id), self.texts)
            except Exception:
                log.exception("%s: deleting late mentions of deleted memories failed", self.label)

    async def _changed(self, gone: list[str], edited: list[tuple[str, str]], slots: set[str]) -> int:
        agent = self.session.agent
        written = [
            (entry["memory_type"], entry["content"])
            for entry in (agent.memories_written if agent is not None else [])
            if entry["action"] in ("remembered", "updated") and entry["content"]
        ]
        gone += [text for slot, text in written if slot not in slots]  # came and went between two readings
        if agent is not None and (gone or set(edited) - set(written)):
            # the model reads the preload as it is now, but not again for what it wrote itself: its own
            # words are in the conversation already, and an unchanged preload keeps a server's prompt cache
            await agent.reload_preload()
        gone = [text for text in dict.fromkeys(gone) if text not in self.texts]
        if not (gone or self.texts):
            return 0
        # the turn in progress is spared, everywhere: the model reads its message as said, and a text it says
        # may be about to be a memory again ("my favorite color is teal" after teal was deleted); a check
        # in the middle of it blanked that message on the page and deleted it where it is stored. It is
        # checked once the turn is over.
        answering = self.session.bus.answering
        spared = self._spare_turn(answering)
        # the stored turns first (said just now included), then what the page shows and the model reads: a
        # message said since that mentions a text forgotten before ("do you remember Lisbon?") goes from both
        # at once; it was blanked here and still listed and found on the Sessions page until the session ended
        await asyncio.to_thread(turn_indexer.flush_queued, 2.0)
        self.texts, deleted_turns = await asyncio.to_thread(
            conversations.forget_mentions,
            Scope.service(self.user_id),
            [*self.texts, *gone],
            spare=None if spared is None else (self.session.session_id, spared[1]),
        )
        says = Mentions(self.texts)
        if agent is not None:
            agent.forgotten = says or None  # and again when each user turn starts
        if not says:
            return 0
        blanked = self._blank_events(self.session.bus.events, says, spare_turn=None if spared is None else spared[0])
        if agent is not None:
            blanked += agent.forget_mentions(says, keep=answering)
        blanked += scrub_chat_items(self.session.session.history.items, says, keep=answering)
        if gone or blanked or deleted_turns:
            log.info(
                "%s: %d deleted memories forgotten here (%d strings blanked, %d turns deleted)",
                self.label,
                len(self.texts),
                blanked,
                deleted_turns,
            )
        return blanked

    def _spare_turn(self, answering: str | None) -> tuple[int, datetime] | None:
        """The turn in progress (its number, and when its message was said: its stored turns are those of the
        session from then on), and a check once it is over; None when no turn is in progress."""
        bus = self.session.bus
        said = [e for e in of_type(bus.events, "transcript", turn=bus.turn) if e["role"] == "user"]
        if answering is None or not said:
            return None
        if self._after_turn is None or self._after_turn.done():
            self._after_turn = asyncio.ensure_future(self._check_after(answering))
        # a millisecond early: the stored time is this one, rounded to the microsecond
        return bus.turn, datetime.fromtimestamp(said[0]["ts"], UTC) - timedelta(milliseconds=1)

    async def _check_after(self, answering: str) -> None:
        while self.session.bus.answering == answering:
            await asyncio.sleep(AFTER_TURN_POLL_SECONDS)
        self._check_soon()

    def report_without_them(self, report: dict[str, Any]) -> dict[str, Any]:
        """The report with every string that says a forgotten text blanked (as core.sessions blanks the
        reports saved before a deletion)."""
        return blanked_report(report, Mentions(self.texts)) if self.texts else report


class ForgettingOnScreen(MemoryFollower):
    """For a page that shows a conversation another process runs (the LiveKit bridge: the worker's own
    Forgetting blanks its context, turns and report): the events this page holds are blanked the same way."""

    def __init__(self, user_id: uuid.UUID, label: str, shown: Callable[[], list[Any]]) -> None:
        super().__init__(user_id, label)
        self.shown = shown  # the events the page holds, as dicts it reads

    async def _changed(self, gone: list[str], edited: list[tuple[str, str]], slots: set[str]) -> int:
        gone = [text for text in dict.fromkeys(gone) if text not in self.texts]
        if not gone:
            return 0
        self.texts.extend(await asyncio.to_thread(conversations.forgettable_texts, Scope.service(self.user_id), gone))
        return self._blank_events(self.shown(), Mentions(self.texts)) if self.texts else 0
