"""Helpers for the agent tests: an AgentSession running the real PlaygroundAgent
with the offline brain against the real embedded database (the style of
livekit's agent-starter-python: `session.run(...)` then `result.expect`)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

from livekit.agents import AgentSession

from agent.brain.llm import OfflineBrain
from agent.event_bus import EventBus, QueueSink
from agent.playground_agent import PlaygroundAgent, load_preload
from agent.session_events import publish_session_events


@dataclass
class AgentRun:
    session: AgentSession
    agent: PlaygroundAgent
    brain: OfflineBrain
    bus: EventBus
    sink: QueueSink

    def events(self, type_: str | None = None, turn: int | None = None) -> list[dict]:
        events, _ = self.sink.since(0)
        return [e for e in events if (type_ is None or e["type"] == type_) and (turn is None or e["turn"] == turn)]

    async def finished_turn(self, turn: int, timeout: float = 10.0) -> list[dict]:
        """The events of `turn` once its turn_done is among them: it is emitted from the speech handle's
        callback, which can trail `session.run` (a fixed short sleep was not always enough under load)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not self.events("turn_done", turn=turn):
            assert asyncio.get_running_loop().time() < deadline, f"turn {turn} never emitted turn_done"
            await asyncio.sleep(0.01)
        return self.events(turn=turn)


@contextlib.asynccontextmanager
async def agent_session(user_id: uuid.UUID, *, greet: bool = False, **agent_options) -> AsyncIterator[AgentRun]:
    """A started text-mode session for `user_id` (preloaded, no greeting unless asked)."""
    sink = QueueSink()
    bus = EventBus(f"test-{uuid.uuid4().hex[:12]}", [sink])
    brain = OfflineBrain()
    agent = PlaygroundAgent(
        user_id, preload=load_preload(user_id), bus=bus, session_id=bus.session_id, greet=greet, **agent_options
    )
    async with (
        brain,
        AgentSession(
            llm=brain, vad=None, turn_handling={"turn_detection": "manual"}, user_away_timeout=None
        ) as session,
    ):
        publish_session_events(session, bus)
        await session.start(agent)
        yield AgentRun(session=session, agent=agent, brain=brain, bus=bus, sink=sink)


def reply_text(result) -> str:
    """The assistant's text in a RunResult (all its messages joined)."""
    return " ".join(
        ev.item.text_content or "" for ev in result.events if ev.type == "message" and ev.item.role == "assistant"
    )
