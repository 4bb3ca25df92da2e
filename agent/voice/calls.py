"""Voice calls by browser session: what the Voice page talks to, and the registry that keeps one call per key.

A call is either a :class:`~agent.voice.local_call.LocalVoiceCall` (the offline
pipeline inside this process, the default) or a
:class:`~agent.voice.livekit_bridge.LiveKitVoiceBridge` (when LiveKit is
configured: the page's server side joins a room where the agent worker talks).
Both offer the page the same thread-safe surface, :class:`VoiceCall`.

Identity: :func:`open_call` takes a `core.identity.VerifiedUser`; the call is
scoped by its user id and nothing else.
"""

from __future__ import annotations

import concurrent.futures
import threading
from typing import Any, Protocol, runtime_checkable

import numpy as np

from agent.events import Event
from agent.runtime import get_runtime
from agent.voice.livekit_bridge import LiveKitVoiceBridge
from agent.voice.local_call import LocalVoiceCall
from core.config import Settings, get_settings
from core.errors import InvalidInput
from core.identity import VerifiedUser


@runtime_checkable
class VoiceCall(Protocol):
    """What the Voice page may use of a call, whichever pipeline runs it. Every member is safe from any thread."""

    pipeline: str  # "local" | "livekit"
    ready: concurrent.futures.Future | None  # done once the call is connected (its exception: why it is not)

    @property
    def session_id(self) -> str | None: ...

    @property
    def user_id(self) -> Any: ...

    @property
    def active(self) -> bool: ...

    @property
    def ended_because(self) -> str | None:
        """Why the call ended without the page ending it (SESSION_DELETED: its session was deleted
        elsewhere); None while it runs or when nothing says."""

    @property
    def kept(self) -> bool:
        """Whether the call is kept (listed on the Sessions page, its report saved when it ends): once the
        user has said or typed something in it (agent.session.PlaygroundSession.kept)."""

    @property
    def error(self) -> str | None: ...

    @property
    def agent_state(self) -> str: ...

    @property
    def user_state(self) -> str: ...

    @property
    def mic_level_dbfs(self) -> float: ...

    @property
    def speaker_level_dbfs(self) -> float: ...

    @property
    def mic_frames_received(self) -> int: ...

    @property
    def mic_seconds_received(self) -> float: ...

    @property
    def agent_audio_seconds_sent(self) -> float: ...

    def push_av_frame(self, frame: Any) -> None:
        """One microphone frame as aiortc decodes it."""

    def read_samples(self, count: int) -> np.ndarray:
        """The next `count` samples of the agent's voice (48 kHz mono int16; silence when it is quiet)."""

    def events_since(self, cursor: int = 0) -> tuple[list[Event], int]: ...

    def submit_text(self, text: str) -> concurrent.futures.Future:
        """A typed message during the call (answered aloud too)."""

    def waiting_messages(self, upto: int | None = None) -> list[str]:
        """Typed messages submitted whose user turn is not among the events up to cursor `upto` yet."""

    def stop(self) -> concurrent.futures.Future:
        """End the call (idempotent); the future is done once its report is saved (or handed to the worker)."""


_calls: dict[str, VoiceCall] = {}
_calls_lock = threading.Lock()


def open_call(key: str, verified: VerifiedUser, *, settings: Settings | None = None, **local_options) -> VoiceCall:
    """The live call for `key` (a per-browser-session key), started if there is none.

    LiveKit mode when LiveKit is configured, else the local pipeline (`local_options` go to
    :class:`LocalVoiceCall`). A call of another user under the same key is ended first.
    """
    if not isinstance(verified, VerifiedUser):
        raise InvalidInput("A voice call can only be started for a verified user.")
    settings = settings or get_settings()
    with _calls_lock:
        call = _calls.get(key)
        if call is not None and call.active and str(call.user_id) == str(verified.user_id):
            return call
    if call is not None:
        call.stop()
    runtime = get_runtime()
    if settings.livekit_configured:
        bridge = LiveKitVoiceBridge.for_user(verified, loop=runtime.loop, settings=settings)
        bridge.ready = runtime.submit(bridge.start())
        call = bridge
    else:
        call = LocalVoiceCall(runtime, f"voice:{key}", verified.user_id, **local_options)
    with _calls_lock:
        _calls[key] = call
    return call


def get_call(key: str) -> VoiceCall | None:
    with _calls_lock:
        call = _calls.get(key)
    return call if call is not None and call.active else None


def end_call(key: str) -> concurrent.futures.Future | None:
    """Stop the call for `key` (report saved); None if there is none."""
    with _calls_lock:
        call = _calls.pop(key, None)
    return None if call is None else call.stop()


def end_calls_of(user_id: Any, *, session_id: str | None = None) -> list[concurrent.futures.Future]:
    """Stop every call of `user_id` (only the one that is session `session_id`, if given), in whichever
    browser session it runs ("delete everything about me", or deleting that session, ends them first, so no
    report is written after); each future is done once that call's report is saved."""
    with _calls_lock:
        keys = [
            key
            for key, call in _calls.items()
            if str(call.user_id) == str(user_id) and (session_id is None or call.session_id == session_id)
        ]
        ended = [_calls.pop(key) for key in keys]
    return [call.stop() for call in ended]
