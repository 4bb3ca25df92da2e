"""The LiveKit Agents worker: ``python -m agent dev|start|console|download-files``.

A job is dispatched to agent name ``AGENT_NAME`` (default ``memory-playground``)
by the room configuration in the token the app mints for a *verified* user;
the dispatch metadata is ``{"user_id": "<uuid>"}``. That id is the only user
the agent acts for (``Scope.service(user_id)``). Console runs and jobs without
usable metadata fall back to the demo user, with a warning.

Per job: the preload (profile + memories) starts before ``ctx.connect()`` so
the two overlap; the session publishes every event on the room text stream
topic ``memory-playground.events``; at shutdown the report from
``ctx.make_session_report()`` plus our events is saved to ``sessions``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
import warnings
from dataclasses import dataclass

from livekit.agents import AgentServer, JobContext, JobProcess, cli

from agent import plugins
from agent.event_bus import RoomTextStreamSink
from agent.model_factory import build_llm, build_stt, build_tts, build_vad
from agent.playground_agent import load_preload
from agent.session import PlaygroundSession
from core import embeddings
from core.config import get_settings, speech_backend
from core.db import parse_user_id
from core.errors import InvalidInput
from core.profiles import Preload
from core.seed import demo_user_id

log = logging.getLogger("agent.worker")


def resolve_user_id(metadata: str | None) -> tuple[uuid.UUID, str]:
    """The user a job acts for, and where the id came from ("metadata" or "demo").

    Only the dispatch metadata written by the token minting code counts; anything
    missing or malformed logs a warning and falls back to the demo user.
    """
    if not metadata or not metadata.strip():
        log.warning("job has no dispatch metadata; acting for the demo user")
        return demo_user_id(), "demo"
    try:
        data = json.loads(metadata)
        if not isinstance(data, dict) or "user_id" not in data:
            raise InvalidInput("the metadata has no user_id")
        return parse_user_id(data["user_id"]), "metadata"
    except (ValueError, InvalidInput) as exc:  # JSONDecodeError is a ValueError
        log.warning("job dispatch metadata is unusable (%s); acting for the demo user", exc)
        return demo_user_id(), "demo"


@dataclass
class JobStart:
    user_id: uuid.UUID
    source: str
    preload: asyncio.Task[Preload]


async def begin_job(ctx: JobContext) -> JobStart:
    """Resolve the user, start the preload and connect; the preload overlaps the connection."""
    user_id, source = resolve_user_id(ctx.job.metadata)
    preload = asyncio.create_task(asyncio.to_thread(load_preload, user_id), name="preload")
    await ctx.connect()
    return JobStart(user_id=user_id, source=source, preload=preload)


def prewarm(proc: JobProcess) -> None:
    """Once per worker process: the plugins (already preloaded by livekit's forkserver), the VAD
    and the embedding model."""
    plugins.register()
    proc.userdata["vad"] = build_vad()
    embeddings.get_model()


async def entrypoint(ctx: JobContext) -> None:
    start = await begin_job(ctx)
    preload = await start.preload
    sink = RoomTextStreamSink(ctx.room)
    vad = ctx.proc.userdata.get("vad") or build_vad()
    # LiveKit Inference brings its end-of-turn model; anywhere else VAD endpointing keeps it offline
    options = {} if speech_backend(kind="stt") == "livekit" else {"turn_handling": {"turn_detection": "vad"}}
    ps = PlaygroundSession(
        start.user_id,
        mode="worker",
        session_id=f"lk-{ctx.job.id}",
        llm=build_llm(),
        stt=build_stt(),
        tts=build_tts(),
        vad=vad,
        sinks=[sink],
        room_name=ctx.room.name,
        session_options=options,
    )
    log.info("session %s for user %s (%s)", ps.session_id, start.user_id, start.source)

    async def save_report() -> None:
        try:
            await ps.finish(base_report=lambda: ctx.make_session_report(ps.session).to_dict())
        finally:
            await sink.aclose()

    ctx.add_shutdown_callback(save_report)
    await ps.start(preload=preload, room=ctx.room)


def build_server() -> AgentServer:
    server = AgentServer(setup_fnc=prewarm)
    server.rtc_session(entrypoint, agent_name=get_settings().agent_name)
    return server


def run_cli() -> None:
    """livekit-agents' own CLI (dev, start, console, connect, download-files)."""
    with warnings.catch_warnings():
        # livekit warns that its Python CLI is deprecated; it is the CLI this project documents
        warnings.simplefilter("ignore", DeprecationWarning)
        cli.run_app(build_server())
