"""Voice calls for the Voice page: the local offline pipeline, or the LiveKit bridge.

Local pipeline (default)::

    browser mic --WebRTC--> WebRTCAudioInput --> AgentSession [Silero VAD -> Whisper tiny.en (StreamAdapter)
      -> PlaygroundAgent + the agent's LLM (offline brain by default) -> Piper] --> WebRTCAudioOutput --> browser

It runs on the in-process runtime's loop (`agent.runtime.get_runtime().loop`)
as a runtime session, so it publishes the same events (agent/events.py) as
the text chat, typed text during a call goes into the same AgentSession, and
closing it saves the same report, plus a `voice` section with per-turn
latencies. Turn detection is VAD endpointing (no turn-detector model, which
cannot be downloaded here); barge-in is VAD-based.

LiveKit mode (when LIVEKIT_URL/_API_KEY/_API_SECRET are set) relays the
browser through `agent.livekit_bridge.LiveKitVoiceBridge` to the agent worker.

Both kinds of call offer the page the same thread-safe surface:
`pipeline`, `push_av_frame`, `read_samples`, `events_since`, `submit_text`,
`mic_level_dbfs`, `speaker_level_dbfs`, `agent_state`, `stop()`.

Identity: `open_call(key, verified)` takes a `core.identity.VerifiedUser`; the
session is scoped by its user id and nothing else.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import statistics
import threading
import time
from typing import Any

import numpy as np
from livekit.agents.voice import io

from agent.events import QueueSink
from agent.plugins import plugin
from agent.voice_io import SILENCE_DBFS, WEBRTC_FRAME_SAMPLES, WebRTCAudioInput, WebRTCAudioOutput
from core.errors import InvalidInput

log = logging.getLogger(__name__)

# VAD endpointing: how much silence ends the user's turn. Shorter answers sooner but cuts
# people off at pauses; 0.4 s suits short commands to a demo agent.
VAD_MIN_SILENCE = 0.4
VAD_MIN_SPEECH = 0.1
VAD_ACTIVATION = 0.5
TURN_HANDLING: dict[str, Any] = {
    "turn_detection": "vad",
    # with VAD turn detection the turn ends when the transcript arrives (Whisper takes longer
    # than this); keep the floor low so it never adds to the wait
    "endpointing": {"min_delay": 0.2, "max_delay": 3.0},
    # VAD barge-in: "adaptive" needs a model served by LiveKit Cloud
    "interruption": {"mode": "vad", "min_duration": 0.4},
    # a preemptive reply would run recall and the model twice per turn on two cores
    "preemptive_generation": {"enabled": False},
}
LATENCY_METRICS = ("eou_delay_ms", "transcription_delay_ms", "stt_ms", "recall_ms", "llm_ttft_ms",
                   "tts_ttfb_ms", "e2e_ms")

_vad = None
_vad_lock = threading.Lock()


def shared_vad():
    """Silero VAD, loaded once per process (its ONNX session is shared by every call's streams)."""
    global _vad
    with _vad_lock:
        if _vad is None:
            silero = plugin("silero")  # registered at process start (agent.plugins)
            _vad = silero.VAD.load(min_silence_duration=VAD_MIN_SILENCE, min_speech_duration=VAD_MIN_SPEECH,
                                   activation_threshold=VAD_ACTIVATION)
        return _vad


def prewarm() -> None:
    """Load VAD, Whisper and Piper now (blocking), so the first call does not wait for them."""
    from agent.local_stt import load_model
    from agent.local_tts import load_voice

    shared_vad()
    load_model()
    load_voice()


def per_turn_latency(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per user turn with the latency metrics recorded for it (ms).

    Speech-to-text finishes before the user's message starts its turn; the
    session stamps it with that upcoming turn, and it is matched here to the
    first user message committed after it (so events stamped the old way, with
    the previous turn's number, still land on the right turn).
    """
    user_messages = [(e["ts"], e["turn"]) for e in events
                     if e.get("type") == "transcript" and e.get("role") == "user" and e.get("final")]
    rows: dict[int, dict[str, Any]] = {}
    for event in events:
        if event.get("type") != "metric" or event.get("name") not in LATENCY_METRICS:
            continue
        turn = event.get("turn")
        if event["name"] == "stt_ms":
            turn = next((t for ts, t in user_messages if ts >= event["ts"] and ts - event["ts"] < 10), None)
        if not turn:
            continue
        row = rows.setdefault(turn, {"turn": turn})
        row.setdefault(event["name"], event["value"])  # the first reply of the turn
    return [rows[turn] for turn in sorted(rows)]


def latency_summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    summary = {}
    for name in LATENCY_METRICS:
        values = sorted(row[name] for row in rows if name in row)
        if values:
            summary[name] = {"count": len(values), "p50": round(statistics.median(values), 1),
                             "max": round(values[-1], 1)}
    return summary


class AgentTranscriptOutput(io.TextOutput):
    """The agent's words as they are spoken (livekit synchronizes them with the
    audio playout): published as interim assistant transcripts; the final one
    comes from the chat history when the reply is done."""

    def __init__(self, call: LocalVoiceCall) -> None:
        super().__init__(label="Voice page transcript", next_in_chain=None)
        self._call = call
        self._text = ""

    async def capture_text(self, text: str) -> None:
        self._text += text
        bus = self._call.bus
        if bus is not None and self._text.strip():
            bus.emit("transcript", role="assistant", text=self._text.strip(), final=False)

    def flush(self) -> None:
        self._text = ""


class _CallObserver:
    """An event sink that keeps the call's live state for the page."""

    def __init__(self) -> None:
        self.agent_state = "initializing"
        self.user_state = "listening"
        self.error: str | None = None

    def publish(self, event: dict[str, Any]) -> None:
        if event["type"] == "state":
            if event.get("who") == "agent":
                self.agent_state = event["state"]
            else:
                self.user_state = event["state"]
        elif event["type"] == "error":
            self.error = event.get("message")


class LocalVoiceCall:
    """One browser call through the offline pipeline, as a runtime session."""

    pipeline = "local"

    def __init__(self, runtime, key: str, user_id, *, llm=None, stt=None, tts=None, vad=None,
                 greet: bool = True, session_options: dict[str, Any] | None = None) -> None:
        self.runtime = runtime
        self.key = key
        self.loop: asyncio.AbstractEventLoop = runtime.loop
        self.mic = WebRTCAudioInput(self.loop, attached=False)
        self.speaker = WebRTCAudioOutput(self.loop)
        self.observer = _CallObserver()
        self.started_at = time.time()
        self.ended_at: float | None = None
        self.report: dict[str, Any] | None = None
        self._models = {"llm": llm, "stt": stt, "tts": tts, "vad": vad}
        self._greet = greet
        self._session_options = session_options
        self._ps = None
        self._stop_future: concurrent.futures.Future | None = None
        self._stop_lock = threading.Lock()
        self.chat = runtime.open_session(key, user_id, factory=self._factory)
        self.user_id = self.chat.user_id
        self.ready: concurrent.futures.Future = self.chat.ready

    # --- on the loop -------------------------------------------------------------
    async def _factory(self, sink: QueueSink):
        from agent import models
        from agent.session import PlaygroundSession

        stt = self._models["stt"] or models.build_stt()
        tts = self._models["tts"] or models.build_tts()
        vad = self._models["vad"] or await asyncio.to_thread(shared_vad)
        # the browser cancels the echo (getUserMedia echoCancellation), so the agent need not
        # ignore the user for its first seconds of speech (livekit's default AEC warm-up replaces
        # the user's audio with silence then, losing the start of a barge-in)
        options = {"turn_handling": TURN_HANDLING, "aec_warmup_duration": None, **(self._session_options or {})}
        ps = PlaygroundSession(self.chat.user_id, mode="voice", llm=self._models["llm"], stt=stt, tts=tts,
                               vad=vad, greet=self._greet, sinks=[sink, self.observer],
                               session_options=options)
        self._ps = ps
        ps.session.input.audio = self.mic
        ps.session.output.audio = self.speaker
        ps.session.output.transcription = AgentTranscriptOutput(self)
        self.greeting = await ps.start()
        return ps

    def _voice_report(self) -> dict[str, Any]:
        from agent import reports

        ps = self._ps
        base = reports.livekit_report(ps.session, session_id=ps.session_id, room_name=ps.room_name)
        rows = per_turn_latency(ps.bus.events)
        base["voice"] = {
            "pipeline": self.pipeline,
            "turn_latency_ms": rows,
            "latency_summary": latency_summary(rows),
            "mic_frames_received": self.mic.frames_received,
            "mic_frames_dropped": self.mic.frames_dropped,
            "agent_audio_frames": self.speaker.frames_captured,
            "agent_audio_seconds_sent": round(self.speaker.samples_sent / self.speaker.sample_rate, 3),
        }
        return base

    async def _stop(self) -> dict[str, Any] | None:
        self.mic.close()
        self.speaker.close()
        try:
            await asyncio.wrap_future(self.ready)
        except Exception as exc:
            log.warning("voice call %s never started (%s); nothing to report", self.key, exc)
            self.chat.close()
            return None
        # the report (with the voice section) is written here; chat.close() then finds it done
        self.report = await self._ps.finish(base_report=self._voice_report)
        await asyncio.wrap_future(self.chat.close())
        self.ended_at = time.time()
        return self.report

    # --- the page's surface (any thread) ------------------------------------------
    @property
    def bus(self):
        return self._ps.bus if self._ps is not None else None

    @property
    def session_id(self) -> str | None:
        return self.chat.session_id

    @property
    def playground_session(self):
        return self._ps

    def push_av_frame(self, frame) -> None:
        self.mic.push_av_frame(frame)

    def read_samples(self, count: int = WEBRTC_FRAME_SAMPLES) -> np.ndarray:
        return self.speaker.read_samples(count)

    def events_since(self, cursor: int = 0):
        return self.chat.events_since(cursor)

    def submit_text(self, text: str) -> concurrent.futures.Future:
        """A typed message during the call: same session, answered by voice too."""
        return self.chat.send(text)

    @property
    def mic_level_dbfs(self) -> float:
        return self.mic.level_dbfs

    @property
    def speaker_level_dbfs(self) -> float:
        return self.speaker.level_dbfs if self.speaker.playing else SILENCE_DBFS

    @property
    def agent_state(self) -> str:
        return self.observer.agent_state

    @property
    def user_state(self) -> str:
        return self.observer.user_state

    @property
    def error(self) -> str | None:
        if self.ready.done() and self.ready.exception() is not None:
            return f"The voice agent could not start: {self.ready.exception()}"
        return self.observer.error

    @property
    def active(self) -> bool:
        return self._stop_future is None

    def stop(self) -> concurrent.futures.Future:
        """End the call and save its report (idempotent)."""
        with self._stop_lock:
            if self._stop_future is None:
                self._stop_future = self.runtime.submit(self._stop())
            return self._stop_future


# --- calls by browser session ------------------------------------------------------

_calls: dict[str, Any] = {}
_calls_lock = threading.Lock()


def open_call(key: str, verified, *, settings=None, **local_options):
    """The live call for `key` (a per-browser-session key), started if there is none.

    `verified` must be a core.identity.VerifiedUser. LiveKit mode when LiveKit is
    configured, else the local pipeline. A call of another user under the same key
    is ended first.
    """
    from agent.runtime import get_runtime
    from core.config import get_settings
    from core.identity import VerifiedUser

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
        from agent.livekit_bridge import LiveKitVoiceBridge

        call = LiveKitVoiceBridge.for_user(verified, loop=runtime.loop, settings=settings)
        call.ready = runtime.submit(call.start())
    else:
        call = LocalVoiceCall(runtime, f"voice:{key}", verified.user_id, **local_options)
    with _calls_lock:
        _calls[key] = call
    return call


def get_call(key: str):
    with _calls_lock:
        call = _calls.get(key)
    return call if call is not None and call.active else None


def end_call(key: str) -> concurrent.futures.Future | None:
    """Stop the call for `key` (report saved); None if there is none."""
    with _calls_lock:
        call = _calls.pop(key, None)
    if call is None:
        return None
    result = call.stop()
    if isinstance(result, concurrent.futures.Future):
        return result
    done: concurrent.futures.Future = concurrent.futures.Future()
    done.set_result(None)
    return done


# --- helpers for the page (pure) ------------------------------------------------------

ICE_SERVERS_ENV = "VOICE_ICE_SERVERS"


def ice_servers(settings=None) -> list[dict[str, Any]]:
    """STUN/TURN servers for the browser <-> app WebRTC connection.

    Empty by default: browser and app on one machine (or LAN) connect directly.
    For remote use set VOICE_ICE_SERVERS (env or the `voice_ice_servers` setting) to a
    JSON list of RTCIceServer objects, e.g.
    `[{"urls": ["stun:stun.l.google.com:19302"]},
      {"urls": ["turn:turn.example.com:3478"], "username": "u", "credential": "p"}]`.
    """
    import json
    import os

    raw = getattr(settings, "voice_ice_servers", None) if settings is not None else None
    if raw is None:
        raw = os.environ.get(ICE_SERVERS_ENV, "")
    if isinstance(raw, list):
        servers = raw
    else:
        raw = str(raw).strip()
        if not raw:
            return []
        try:
            servers = json.loads(raw)
        except json.JSONDecodeError as exc:
            log.warning("%s is not valid JSON (%s); using no ICE servers", ICE_SERVERS_ENV, exc.msg)
            return []
    if isinstance(servers, dict):
        servers = [servers]
    valid = [s for s in servers if isinstance(s, dict) and s.get("urls")]
    if len(valid) != len(servers):
        log.warning("%s: ignoring entries without 'urls'", ICE_SERVERS_ENV)
    return valid


def live_transcript(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Transcript lines for the page, interim text included, and errors (role "error") where they happened.

    Local calls: a non-final transcript opens (or updates) the role's open line and
    the final one replaces it. LiveKit calls: lines are the `lk.transcription`
    segments (the worker's own transcript events would repeat them).
    """
    from_room = any(e.get("source") == "lk.transcription" for e in events)
    lines: list[dict[str, Any]] = []
    open_line: dict[str, dict[str, Any]] = {}  # role -> its interim line
    by_segment: dict[str, dict[str, Any]] = {}
    for event in events:
        if event.get("type") == "error" and event.get("message"):
            # a failed model call (or a tool call the model got wrong): shown in the conversation
            lines.append({"role": "error", "turn": event.get("turn"), "text": event["message"], "final": True})
            continue
        if event.get("type") != "transcript" or not (event.get("text") or "").strip():
            continue
        if from_room:
            if event.get("source") != "lk.transcription":
                continue
            line = by_segment.get(event.get("segment_id"))
            if line is None:
                line = by_segment[event.get("segment_id")] = {"role": event["role"], "turn": event.get("turn")}
                lines.append(line)
            line.update(text=event["text"], final=bool(event.get("final")))
            continue
        role, final = event["role"], bool(event.get("final", True))
        line = open_line.get(role)
        if line is None:
            line = {"role": role, "turn": event.get("turn")}
            lines.append(line)
        line.update(text=event["text"], final=final, turn=event.get("turn"))
        if final:
            open_line.pop(role, None)
        else:
            open_line[role] = line
    return lines


def level_fraction(level_dbfs: float, floor: float = -60.0) -> float:
    """dBFS -> 0..1 for a meter (the floor and below show as empty)."""
    if level_dbfs <= floor:
        return 0.0
    return min(1.0, (level_dbfs - floor) / -floor)
