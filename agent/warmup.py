"""Load what the first reply needs before the first visitor asks for it.

The app's server calls :func:`start` once, when it starts (``ui/server.py``, the
lifespan of the ``st.App`` in ``streamlit_app.py``). It returns at once; a
background thread then

1. opens the database (starting the embedded server when there is no
   DATABASE_URL) and, at the same time, loads the embedding model and runs it
   once (its first call is the slowest);
2. starts the agent runtime's loop (which also saves reports an earlier run
   left on disk) and imports the agent session's modules;
3. when the Voice page runs the local pipeline (LiveKit not configured), loads
   Silero VAD, Whisper and Piper.

A visitor's first reply needs the first two steps, a call the third, so they
get the two cores first. Every step is idempotent with the lazy loads the parts
do themselves: a visitor who comes earlier waits only for the step in progress.
:meth:`Warmup.status` says what is still loading (the sidebar shows it); a step
that fails is logged and its part loads on first use, as without a warm-up.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from core.config import Settings, get_settings

log = logging.getLogger(__name__)

WAITING, LOADING, READY, FAILED = "waiting", "loading", "ready", "failed"
LABELS = {
    "database": "the database",
    "embeddings": "the embedding model",
    "agent": "the agent",
    "voice": "the voice models (VAD, Whisper, Piper)",
}


@dataclass(frozen=True)
class Part:
    """One thing the warm-up loads, and how far it got."""

    name: str
    label: str  # what the sidebar calls it
    state: str = WAITING
    seconds: float | None = None  # how long loading it took
    error: str | None = None

    @property
    def pending(self) -> bool:
        return self.state in (WAITING, LOADING)


class Warmup:
    """The warm-up of one process (see the module docstring). Create it with :func:`start`."""

    def __init__(self, settings: Settings) -> None:
        self.voice = not settings.livekit_configured  # the Voice page runs the local pipeline in this process
        names = ["database", "embeddings", "agent", *(["voice"] if self.voice else [])]
        self._parts = {name: Part(name, LABELS[name]) for name in names}
        self.started_at = time.time()
        self.finished_at: float | None = None
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="warm-up", daemon=True)

    # ---- read side (any thread) ----------------------------------------------------

    def status(self) -> list[Part]:
        with self._lock:
            return list(self._parts.values())

    def pending(self) -> list[Part]:
        """The parts still loading or waiting to, in the order they load."""
        return [part for part in self.status() if part.pending]

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    # ---- the work ----------------------------------------------------------------

    def _run(self) -> None:
        try:
            if self.voice:  # torch keeps a thread's count once it has run torch work: set the shares first
                _apply_voice_thread_budget()
            with ThreadPoolExecutor(max_workers=2, thread_name_prefix="warm-up") as pool:
                first = [
                    pool.submit(self._load, "database", _open_database),
                    pool.submit(self._load, "embeddings", _load_embeddings),
                ]
                for future in first:
                    future.result()
            self._load("agent", _start_agent_runtime)
            if self.voice:
                self._load("voice", _load_voice_models)
        finally:
            self.finished_at = time.time()
            self._done.set()
            log.info(
                "warm-up done in %.1f s: %s",
                self.finished_at - self.started_at,
                ", ".join(f"{p.name} {p.state} ({p.seconds or 0:.1f} s)" for p in self.status()),
            )

    def _load(self, name: str, load: Callable[[], None]) -> None:
        self._set(name, state=LOADING)
        started = time.perf_counter()
        try:
            load()
        except Exception as exc:  # the part loads on first use instead; the log says why it could not now
            log.warning("warm-up: %s could not be loaded: %s", LABELS[name], exc)
            self._set(name, state=FAILED, error=str(exc) or type(exc).__name__, seconds=time.perf_counter() - started)
            return
        self._set(name, state=READY, seconds=time.perf_counter() - started)

    def _set(self, name: str, **changes) -> None:
        with self._lock:
            self._parts[name] = replace(self._parts[name], **changes)


# The loaders import what they load on the warm-up thread: the server imports this module at
# start, and torch, the agent and the voice models would hold up its first response.
def _open_database() -> None:
    from core import db

    # starts the embedded server first when there is no DATABASE_URL; then the pools of both logins:
    # the visitor's scope (app) and sign-in with the agent's service scope (service)
    for conninfo in (db.app_url(), db.service_url()):
        db.get_pool(conninfo).wait(timeout=120)


def _load_embeddings() -> None:
    from core import embeddings

    embeddings.embed_one("warm up")  # loads the model; its first call (the slowest) happens now too


def _start_agent_runtime() -> None:
    from agent.runtime import get_runtime

    get_runtime().warm.result(timeout=120)
    importlib.import_module("agent.session")  # the session, the agent and its brain: what the first turn runs


def _apply_voice_thread_budget() -> None:
    from agent.voice.threads import apply_process_budget

    apply_process_budget()


def _load_voice_models() -> None:
    from agent.voice.local_call import prewarm

    prewarm()


_warmup: Warmup | None = None
_warmup_lock = threading.Lock()


def start(settings: Settings | None = None) -> Warmup:
    """Start this process's warm-up in the background (once; later calls return the same one)."""
    global _warmup
    with _warmup_lock:
        if _warmup is None:
            _warmup = Warmup(settings or get_settings())
            _warmup._thread.start()
        return _warmup


def current() -> Warmup | None:
    """This process's warm-up, or None when nothing started one (AppTest, a command line)."""
    return _warmup
