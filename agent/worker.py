"""The LiveKit Agents worker: ``python -m agent dev|start|console|download-files``.

A job is dispatched to agent name ``AGENT_NAME`` (default ``memory-playground``)
by the room configuration in the token the app mints for a *verified* user;
the dispatch metadata is ``{"user_id": "<uuid>"}``. That id is the only user
the agent acts for (``Scope.service(user_id)``). A job whose metadata is not a
valid, existing user id is refused (logged with an escaped excerpt); only
``console`` (a terminal session, no dispatch) acts for the demo user.

Per job: the preload (profile + memories) starts before ``ctx.connect()`` so
the two overlap; the session publishes every event on the room text stream
topic ``memory-playground.events``; at shutdown the report from
``ctx.make_session_report()`` plus our events is saved to ``sessions``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import sys
import urllib.parse
import uuid
import warnings
from dataclasses import dataclass

from livekit.agents import AgentServer, JobContext, JobProcess, cli

from agent import events, plugins
from agent.event_bus import RoomTextStreamSink
from agent.model_factory import build_llm, build_stt, build_tts, build_vad
from agent.playground_agent import load_preload
from agent.session import PlaygroundSession
from agent.voice.speech_vocabulary import SpeechVocabulary
from core import db, embeddings, memory_changes, session_deletions, sessions
from core.config import get_settings, speech_backend
from core.db import Scope, parse_user_id
from core.errors import InvalidInput, NotFound, PlaygroundError
from core.profiles import Preload, get_profile
from core.seed import demo_user_id

log = logging.getLogger("agent.worker")


# Set by run_cli for `console`, the only worker command that may act for the demo user (a
# terminal session on the operator's machine, with no dispatch). An environment variable, so
# livekit's job processes inherit it.
DEMO_MODE_ENV = "MEMORY_PLAYGROUND_WORKER_DEMO_MODE"
MAX_METADATA_CHARS = 4096


class JobRefused(PlaygroundError):
    """The job's dispatch metadata names no valid, existing user; the worker will not act."""


def demo_mode() -> bool:
    return os.environ.get(DEMO_MODE_ENV) == "1"


def _excerpt(value, limit: int = 120) -> str:
    """A log-safe excerpt: escaped (no control characters or newlines reach the log), truncated."""
    text = ascii(value)
    if len(text) <= limit:
        return text
    size = f"{len(value):,} characters" if isinstance(value, str) else type(value).__name__
    return f"{text[:limit]}… ({size})"


def _user_from_metadata(metadata) -> uuid.UUID:
    if metadata is None or (isinstance(metadata, str) and not metadata.strip()):
        raise JobRefused("the job has no dispatch metadata")
    if not isinstance(metadata, str):
        raise JobRefused("the dispatch metadata is not text")
    if len(metadata) > MAX_METADATA_CHARS:
        raise JobRefused(f"the dispatch metadata is too long ({len(metadata):,} characters)")
    try:
        data = json.loads(metadata)
    except (ValueError, RecursionError):
        raise JobRefused("the dispatch metadata is not JSON") from None
    if not isinstance(data, dict) or "user_id" not in data:
        raise JobRefused("the dispatch metadata has no user_id")
    try:
        user_id = parse_user_id(data["user_id"])
    except InvalidInput:
        raise JobRefused("the dispatch metadata's user_id is not a user id") from None
    try:
        get_profile(Scope.service(user_id))  # every user has a profile (a trigger makes it)
    except NotFound:
        raise JobRefused(f"no user {user_id} exists in this database") from None
    return user_id


def resolve_user_id(metadata: str | None, *, allow_demo: bool | None = None) -> tuple[uuid.UUID, str]:
    """The user a job acts for, and where the id came from ("metadata" or "demo").

    Only the dispatch metadata written by the token minting code counts, and only for a user
    that exists. Anything else refuses the job (JobRefused), except in console mode
    (`allow_demo`, default: the worker was started with `console`), where the demo user applies.
    """
    allow_demo = demo_mode() if allow_demo is None else allow_demo
    try:
        return _user_from_metadata(metadata), "metadata"
    except JobRefused as exc:
        if allow_demo:
            log.warning("%s; console mode: acting for the demo user", exc)
            return demo_user_id(), "demo"
        log.error("refusing the job: %s (metadata: %s)", exc, _excerpt(metadata))
        raise


@dataclass
class JobStart:
    user_id: uuid.UUID
    source: str
    preload: asyncio.Task[Preload]


async def begin_job(ctx: JobContext) -> JobStart:
    """Resolve the user, start the preload and connect; the preload overlaps the connection.
    Raises JobRefused (before connecting) when the metadata names no valid, existing user."""
    user_id, source = await asyncio.to_thread(resolve_user_id, ctx.job.metadata)
    preload = asyncio.create_task(asyncio.to_thread(load_preload, user_id), name="preload")
    await ctx.connect()
    return JobStart(user_id=user_id, source=source, preload=preload)


def prewarm(proc: JobProcess) -> None:
    """Once per worker process: the plugins (already preloaded by livekit's forkserver), the VAD
    and the embedding model."""
    plugins.register()
    proc.userdata["vad"] = build_vad()
    embeddings.get_model()


class EndWhenDeleted:
    """core.session_deletions listener: the job ends when its owner deletes its session (on the app's Sessions
    page, in another process), instead of talking on into a session that keeps nothing."""

    REASON = "its session was deleted by its owner"
    # what the caller's page shows (the LiveKit bridge forwards the job's events) before the agent leaves
    MESSAGE = (
        "This call's session was deleted (Delete this session or Delete everything), so the agent ended the call; "
        "nothing of it is kept."
    )

    def __init__(self, ctx: JobContext, ps: PlaygroundSession) -> None:
        self.ctx, self.bus, self.user_id, self.session_id = ctx, ps.bus, ps.user_id, ps.session_id
        self.loop = asyncio.get_running_loop()

    def session_deleted(self, user_id: uuid.UUID | None, session_id: str | None) -> None:  # the feed's thread
        if session_id is None:  # deletions may have been missed while the database was away: ask it
            try:
                deleted = sessions.was_deleted(Scope.service(self.user_id), self.session_id)
            except PlaygroundError as exc:
                log.warning("could not check whether session %s was deleted: %s", self.session_id, exc)
                return
        else:
            deleted = user_id == self.user_id and session_id == self.session_id
        if deleted:
            log.info("session %s was deleted by its owner; the job ends", self.session_id)
            self.loop.call_soon_threadsafe(self._end)

    def _end(self) -> None:  # on the job's loop
        self.bus.emit(events.error(self.MESSAGE, where="session", kind="session_deleted", recoverable=False))
        self.ctx.shutdown(reason=self.REASON)


async def entrypoint(ctx: JobContext) -> None:
    try:
        start = await begin_job(ctx)
    except JobRefused as exc:
        ctx.shutdown(reason=f"refused: {exc}")  # never joins the room, never acts for anyone
        return
    preload = await start.preload
    sink = RoomTextStreamSink(ctx.room)
    vad = ctx.proc.userdata.get("vad") or build_vad()
    # LiveKit Inference brings its end-of-turn model; anywhere else VAD endpointing keeps it offline
    options = {} if speech_backend(kind="stt") == "livekit" else {"turn_handling": {"turn_detection": "vad"}}
    stt = build_stt()
    # a local Whisper is told this user's words (again after every change to them); hosted STTs are not
    speech_words = SpeechVocabulary(stt, start.user_id, asyncio.get_running_loop())
    ps = PlaygroundSession(
        start.user_id,
        mode="worker",
        session_id=f"lk-{ctx.job.id}",
        llm=build_llm(),
        stt=stt,
        tts=build_tts(),
        vad=vad,
        sinks=[sink],
        room_name=ctx.room.name,
        session_options=options,
    )
    log.info("session %s for user %s (%s)", ps.session_id, start.user_id, start.source)

    ends_when_deleted = EndWhenDeleted(ctx, ps)
    session_deletions.subscribe(ends_when_deleted)  # held weakly there: save_report below keeps it alive

    async def save_report() -> None:
        session_deletions.unsubscribe(ends_when_deleted)
        speech_words.close()
        try:
            await ps.finish(base_report=lambda: ctx.make_session_report(ps.session).to_dict())
        finally:
            await sink.aclose()

    ctx.add_shutdown_callback(save_report)
    # hear what other processes change (the app's Memories and Sessions pages), from now on; waits until it
    # listens, but never holds the job's start up long (it keeps trying in the background)
    await asyncio.to_thread(memory_changes.follow_database, db.service_url(), timeout=3.0)
    await speech_words.refresh()
    await ps.start(preload=preload, room=ctx.room)


def build_server() -> AgentServer:
    server = AgentServer(setup_fnc=prewarm)
    server.rtc_session(entrypoint, agent_name=get_settings().agent_name)
    return server


# The LiveKit settings a worker command needs, with the livekit CLI option that can give each instead.
_SERVER_SETTINGS = (
    ("LIVEKIT_URL", "livekit_url", "--url"),
    ("LIVEKIT_API_KEY", "livekit_api_key", "--api-key"),
    ("LIVEKIT_API_SECRET", "livekit_api_secret", "--api-secret"),
)
_SERVER_COMMANDS = ("dev", "start", "connect")


def cli_setup_problem(args: list[str]) -> str | None:
    """Why the worker command in `args` cannot run here, in one line, or None. livekit's CLI reads only the
    environment, so the LiveKit settings from `.env` or secrets.toml are passed on to it first."""
    command = args[0] if args else ""
    if "--help" in args or "-h" in args:
        return None
    if command in _SERVER_COMMANDS:
        settings = get_settings()
        missing = []
        for env_name, field, option in _SERVER_SETTINGS:
            value = getattr(settings, field)
            if value:
                os.environ.setdefault(env_name, value)
            elif not any(a == option or a.startswith(option + "=") for a in args):
                missing.append(env_name)
        if missing:
            return (
                f"python -m agent {command} needs a LiveKit server: set {', '.join(missing)} (env, .env or "
                ".streamlit/secrets.toml; LiveKit Cloud or `livekit-server --dev`, docs/AGENT.md). "
                "Without LiveKit, use `python -m agent chat` or the app's Voice page."
            )
    if command in (*_SERVER_COMMANDS, "console"):
        try:
            db.require_migrated()  # every job would fail with "relation … does not exist"
        except PlaygroundError as exc:
            return f"python -m agent {command}: {exc}"
    if command == "console":
        try:
            import sounddevice  # noqa: F401 - livekit's console plays and records through it
        except OSError as exc:
            return (
                f"python -m agent console needs a microphone and speakers through PortAudio, which is "
                f"missing here ({exc}): install it (apt-get install libportaudio2), or use "
                "`python -m agent chat` or the app's Voice page."
            )
    return None


def server_unreachable(url: str, timeout: float = 3.0) -> str | None:
    """Why nothing answers at the LiveKit server's address, or None when something does."""
    parsed = urllib.parse.urlsplit(url)
    port = parsed.port or (443 if parsed.scheme in ("wss", "https") else 80)
    try:
        socket.create_connection((parsed.hostname or "", port), timeout=timeout).close()
    except OSError as exc:
        return str(exc) or type(exc).__name__
    return None


def run_cli() -> None:
    """livekit-agents' own CLI (dev, start, console, connect, download-files)."""
    problem = cli_setup_problem(sys.argv[1:])
    if problem:
        print(problem, file=sys.stderr)
        raise SystemExit(2)
    url = os.environ.get("LIVEKIT_URL")
    if sys.argv[1:2] and sys.argv[1] in _SERVER_COMMANDS and url and "--help" not in sys.argv:
        # livekit's own retries say only "Cannot connect to host"; say which setting to check, and go on
        # (the server may be starting)
        why = server_unreachable(url)
        if why:
            print(
                f"The LiveKit server at LIVEKIT_URL={url} does not answer ({why}): check LIVEKIT_URL and that "
                "the server (or Cloud project) is up. The worker keeps retrying.",
                file=sys.stderr,
            )
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "console":
        os.environ[DEMO_MODE_ENV] = "1"
    else:
        os.environ.pop(DEMO_MODE_ENV, None)  # dev/start/connect act only for dispatched, existing users
    with warnings.catch_warnings():
        # livekit warns that its Python CLI is deprecated; it is the CLI this project documents
        warnings.simplefilter("ignore", DeprecationWarning)
        cli.run_app(build_server())
