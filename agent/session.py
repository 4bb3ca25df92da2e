"""One conversation: an ``AgentSession`` running a :class:`PlaygroundAgent`,
with its events published and its report saved when it ends.

Used by the in-process runtime (text chat), the local voice pipeline and the
LiveKit worker, so all three publish the same events and write the same
report. Create it *on the event loop that will run it* (livekit binds the
session to the running loop)::

    ps = PlaygroundSession(user_id, mode="voice", stt=..., tts=..., vad=..., sinks=[queue_sink])
    ps.session.input.audio = my_audio_input      # optional custom I/O, before start()
    ps.session.output.audio = my_audio_output
    greeting = await ps.start()                  # preload, start, greet (returns the greeting text)
    ...
    report = await ps.finish()                   # close, extract facts, save the report (ps.kept: the user
                                                 # said something; else nothing of it is kept)
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from livekit.agents import AgentSession
from livekit.agents import llm as lk_llm

from agent import events, llm_failures, reports
from agent.brain.llm import OfflineBrain
from agent.event_bus import EventBus, EventSink
from agent.events import Event
from agent.extraction import extract_facts
from agent.forgetting import Forgetting
from agent.model_factory import build_llm, describe_models, session_connect_options
from agent.playground_agent import PlaygroundAgent, load_preload
from agent.sensitive import withheld
from agent.session_events import publish_session_events
from agent.turn_log import TurnLogSink, report_without_withheld, user_said
from core import memories
from core.db import parse_user_id
from core.errors import PlaygroundError
from core.profiles import Preload
from core.retrieval import RrfParams
from core.sessions import DELETED_TEXT
from core.turn_indexer import get_indexer

log = logging.getLogger(__name__)


class TurnFailed(PlaygroundError):
    """A turn the model (or a tool around it) failed; ``str()`` is the sentence to show."""


TURNS_FLUSH_SECONDS = 10.0
STOPPED_MESSAGE = "You stopped this answer."
# What the model reads in place of the answer it was stopped in: without it the stopped message and the
# next one are two user turns in a row, which agent/chat_format.py merges into one question
STOPPED_NOTE = "(The user stopped this answer before it was finished.)"


def new_session_id(mode: str) -> str:
    return f"{mode}-{uuid.uuid4().hex[:16]}"


class PlaygroundSession:
    def __init__(
        self,
        user_id: uuid.UUID | str,
        *,
        mode: str = "text",
        session_id: str | None = None,
        llm: lk_llm.LLM | None = None,
        stt=None,
        tts=None,
        vad=None,
        rrf: RrfParams | None = None,
        greet: bool = True,
        sinks: Iterable[EventSink] = (),
        room_name: str | None = None,
        session_options: dict[str, Any] | None = None,
        agent_options: dict[str, Any] | None = None,
        agent_class: type[PlaygroundAgent] = PlaygroundAgent,
        log_turns: bool = True,
    ) -> None:
        self.user_id = parse_user_id(user_id)
        self.mode = mode
        self.session_id = session_id or new_session_id(mode)
        self.room_name = room_name
        # every final user and agent transcript also goes to the conversation tier (stored off the loop)
        self.bus = EventBus(
            self.session_id, [*sinks, *([TurnLogSink(self.user_id, self.session_id)] if log_turns else [])]
        )
        self.llm = llm if llm is not None else build_llm()
        self.rrf = rrf
        self.greet = greet
        self.agent_options = dict(agent_options or {})
        self.agent_class = agent_class
        options: dict[str, Any] = {"llm": self.llm, "conn_options": session_connect_options()}
        if mode == "text":
            # typed turns only: no audio, no turn detector, nobody "away"
            options.update(vad=None, turn_handling={"turn_detection": "manual"}, user_away_timeout=None)
        else:
            options.update(stt=stt, tts=tts, vad=vad)
        options.update(session_options or {})
        self.session: AgentSession = AgentSession(**options)
        self.agent: PlaygroundAgent | None = None
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.report: dict[str, Any] | None = None
        self.record = None
        self._finish_task: asyncio.Task | None = None
        # a memory the user deletes meanwhile leaves this conversation too (agent/forgetting.py)
        self.forgetting = Forgetting(self)
        publish_session_events(self.session, self.bus)

    @property
    def events(self) -> list[Event]:
        return self.bus.events

    @property
    def kept(self) -> bool:
        """Whether the session is kept: from the user's first words (said or typed) on. One they never said
        anything in stores no turn (agent/turn_log.py), is never listed on the Sessions page, and leaves no
        report when it ends."""
        return any(user_said(event) and not event.get("origin") for event in self.bus.events)

    # ------------------------------------------------------------------ lifecycle

    async def start(self, *, preload: Preload | None = None, room=None, room_options=None) -> str | None:
        """Preload, start the agent session and (if greeting) wait for the greeting; returns its text."""
        # the memories as this conversation first knows them, read before the preload its greeting says: a
        # memory deleted right after the greeting ("Welcome back, Thibault!") was missed when the first reading
        # came later, under load (a fresh-clone CI run), and the greeting was stored with the user's first words
        self.forgetting.start(asyncio.get_running_loop())
        await self.forgetting.first_read()
        if preload is None:
            preload = await asyncio.to_thread(load_preload, self.user_id)
        self.agent = self.agent_class(
            self.user_id,
            preload=preload,
            bus=self.bus,
            session_id=self.session_id,
            rrf=self.rrf,
            greet=self.greet,
            **self.agent_options,
        )
        if self.rrf is not None:  # set_rrf from another thread may have come while the agent was made
            self.agent.set_rrf(self.rrf)
        self.agent.memories_deleted = self.forgetting.check_logged
        self.started_at = time.time()
        kwargs: dict[str, Any] = {}
        if room is not None:
            kwargs["room"] = room
            if room_options is not None:
                kwargs["room_options"] = room_options
        if not self.greet:
            await self.session.start(self.agent, **kwargs)
            return None
        try:
            greeting = await self.session.start(self.agent, capture_run=True, **kwargs)
        except Exception as exc:
            if self.session.agent_state == "initializing":
                raise  # the session itself did not start (room, audio): the caller reports it
            # the model failed on the greeting: the conversation goes on without one
            self._note_failure(exc, turn=0)
            return None
        texts = [ev.item.text_content for ev in greeting.events if ev.type == "message"]
        return " ".join(t for t in texts if t) or None

    def _note_failure(self, exc: BaseException, *, turn: int | None = None) -> str:
        """Make sure a failed turn carries an error event (livekit's error event usually made it
        already, see publish_session_events); returns the sentence to show."""
        message = str(exc) if isinstance(exc, PlaygroundError) else llm_failures.describe(exc)
        turn = self.bus.turn if turn is None else turn
        existing = [e for e in self.bus.events if e["type"] == "error" and e["turn"] == turn]
        if existing:
            message = existing[-1]["message"]
        else:
            where = "agent" if isinstance(exc, PlaygroundError) else "llm"
            self.bus.emit(events.error(message, where=where, kind=llm_failures.kind(exc), recoverable=False), turn=turn)
        log.warning("session %s, turn %s failed: %s", self.session_id, turn, message)
        return message

    async def run_text(self, text: str):
        """One typed turn; returns livekit's RunResult (its events are this turn's chat items).

        A failed turn raises :class:`TurnFailed` with the sentence to show (also published as an
        ``error`` event for the turn); the session stays open for the next turn."""
        try:
            return await self.session.run(user_input=text)
        except Exception as exc:
            raise TurnFailed(self._note_failure(exc)) from exc

    async def interrupt_answer(self) -> bool:
        """Stop the answer being prepared (a slow model, a long tool call): the turn's run returns at once,
        with no answer. False when nothing was being answered (it finished meanwhile)."""
        speech = self.session.current_speech
        if speech is None or speech.done():
            return False
        await self.session.interrupt(force=True)
        return True

    async def note_stopped(self) -> None:
        """After :meth:`interrupt_answer`, before the next turn: the turn says it was stopped (an ``error``
        event of kind ``stopped``) and the model's context gets STOPPED_NOTE in place of the answer."""
        if self.agent is not None:
            chat_ctx = self.agent.chat_ctx.copy()
            chat_ctx.add_message(role="assistant", content=STOPPED_NOTE)
            await self.agent.update_chat_ctx(chat_ctx)
        self.bus.emit(events.error(STOPPED_MESSAGE, where="agent", kind="stopped", recoverable=True))
        log.info("session %s, turn %s: stopped by the user", self.session_id, self.bus.turn)

    def set_rrf(self, params: RrfParams) -> RrfParams:
        self.rrf = params.validated()
        if self.agent is not None:
            self.agent.set_rrf(self.rrf)
        return self.rrf

    async def finish(
        self,
        *,
        base_report: dict[str, Any] | Callable[[], dict[str, Any]] | None = None,
        extract: bool = True,
        close_session: bool = True,
        ended_by: str | None = None,
    ) -> dict[str, Any]:
        """Close the session, extract facts, build and save the report (once; later calls return it).

        `base_report` is the livekit part of the report, or a function making it once the
        session is closed (the worker passes ``lambda: ctx.make_session_report(session).to_dict()``);
        by default it is built from the session the same way. `ended_by`: why it was closed
        (Conversation.close_reason, such as agent.conversation.APP_STOPPED), for the report.
        """
        if self._finish_task is None:
            self._finish_task = asyncio.ensure_future(self._finish(base_report, extract, close_session, ended_by))
        return await asyncio.shield(self._finish_task)

    async def _finish(self, base_report, extract: bool, close_session: bool, ended_by: str | None) -> dict[str, Any]:
        if close_session:
            try:
                await self.session.aclose()
            except Exception:
                log.exception("closing the agent session failed; writing the report anyway")
        self.ended_at = time.time()
        agent = self.agent
        await self.forgetting.settled()  # nothing said of a memory deleted meanwhile is extracted or reported
        extraction = None
        if extract and agent is not None:
            extraction = await self._extract(agent)
        section = reports.playground_section(
            session_id=self.session_id,
            user_id=self.user_id,
            mode=self.mode,
            events=self.bus.events,
            started_at=self.started_at or self.ended_at,
            ended_at=self.ended_at,
            memories_written=agent.memories_written if agent else [],
            profile_updates=agent.profile_updates if agent else [],
            extraction=extraction,
            models=describe_models().as_dict(),
            ended_by=ended_by,
        )
        # what a withheld turn said (a secret the agent does not keep) is left out of it, like a deleted memory
        report = report_without_withheld({**self._livekit_part(base_report), "playground": section}, self.bus.events)
        self.report = self.forgetting.report_without_them(report)
        if not self.kept:  # the user said nothing: no report, and its greeting was never stored (turn_log.py)
            log.info("session %s ended before the user said anything; nothing of it is kept", self.session_id)
            return self.report
        # the session's turns are in the conversation tier before its report is (the Sessions page shows
        # both); a database outage only delays this, the indexer keeps the turns and retries
        if not await asyncio.to_thread(get_indexer().flush, TURNS_FLUSH_SECONDS, embed_pending=False):
            log.warning("session %s: some conversation turns are still queued; they are stored later", self.session_id)
        self.record = await asyncio.to_thread(
            reports.save,
            self.user_id,
            self.session_id,
            self.report,
            room_name=self.room_name,
            started_at=self.started_at,
            ended_at=self.ended_at,
        )
        return self.report

    def _livekit_part(self, base_report: dict[str, Any] | Callable[[], dict[str, Any]] | None) -> dict[str, Any]:
        """livekit's SessionReport part of the report; a failure costs only that part."""
        if callable(base_report):
            try:
                return base_report()
            except Exception:
                log.exception("building the livekit session report failed")
        elif base_report is not None:
            return base_report
        try:
            return reports.livekit_report(self.session, session_id=self.session_id, room_name=self.room_name)
        except Exception:
            log.exception("building the livekit part of the report failed")
            return {}

    async def _extract(self, agent: PlaygroundAgent) -> dict[str, Any] | None:
        said = [
            e
            for e in events.of_type(self.bus.events, "transcript")
            if e["role"] == "user" and e.get("final") and e["text"] != DELETED_TEXT and not withheld(e["text"])
        ]
        user_turns = [e["text"] for e in said]
        if not user_turns:
            return None
        try:
            existing = {m.memory_type: m.content for m in await asyncio.to_thread(memories.list_memories, agent.scope)}
            # each slot a tool wrote or forgot, with the last of those messages whose turn did: what the user
            # said of it later is theirs to keep
            touched = {
                w["memory_type"]: max((i for i, e in enumerate(said) if e["turn"] <= w["turn"]), default=-1)
                for w in agent.memories_written
            }
            model = None if isinstance(self.llm, OfflineBrain) else self.llm
            extraction = await extract_facts(user_turns, touched_slots=touched, existing=existing, llm_model=model)
            for fact in extraction.facts:
                result = await asyncio.to_thread(
                    memories.remember, agent.scope, fact.memory_type, fact.content, session_id=self.session_id
                )
                if result.unchanged:
                    continue
                agent.note_write(
                    "remembered" if result.created else "updated",
                    result.memory.memory_type,
                    result.memory.content,
                    result.previous_content,
                    source="extraction",
                )
            return extraction.as_dict()
        except PlaygroundError as exc:
            log.warning("fact extraction after session %s failed: %s", self.session_id, exc)
            return {"method": None, "facts": [], "dropped": [], "error": str(exc)}
