"""A voice call through the local offline pipeline, inside this process.

    browser mic --WebRTC--> WebRTCAudioInput --> AgentSession [Silero VAD -> Whisper tiny.en (StreamAdapter)
      -> PlaygroundAgent + the agent's LLM (offline brain by default) -> Piper] --> WebRTCAudioOutput --> browser

It runs on the in-process runtime's loop as a runtime conversation, so it
publishes the same events (agent/events.py) as the text chat, typed text
during a call goes into the same AgentSession, and closing it saves the same
report, plus a `voice` section with per-turn latencies. Turn detection is VAD
endpointing (no turn-detector model, which cannot be downloaded here);
barge-in is VAD-based. Whisper streams over the same VAD: interim transcripts while
the user speaks, and a speculative decode at a short pause that becomes the final
transcript when the turn ends (agent/voice/local_stt.py). Whisper is prompted with
this user's remembered words and the deployment's product names and order ids,
refreshed whenever a tool changes what is remembered.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from typing import Any

import numpy as np
from livekit.agents.voice import io

from agent import events, reports
from agent.brain.replies import SPOKEN_OPENERS
from agent.conversation import SESSION_DELETED
from agent.event_bus import EventBus, QueueSink
from agent.events import Event
from agent.model_factory import build_stt, build_tts
from agent.plugins import plugin
from agent.runtime import AgentRuntime
from agent.session import PlaygroundSession
from agent.voice.audio import SILENCE_DBFS, WEBRTC_FRAME_SAMPLES
from agent.voice.latency import latency_summary, per_turn_latency
from agent.voice.local_stt import LocalWhisperSTT, load_model
from agent.voice.local_tts import keep_spoken, load_voice
from agent.voice.mic import WebRTCAudioInput
from agent.voice.speaker import WebRTCAudioOutput
from agent.voice.speech_vocabulary import SpeechVocabulary
from agent.voice.threads import apply_process_budget
from core import db, memory_changes
from core.db import parse_user_id

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
    # VAD barge-in: "adaptive" needs a model served by LiveKit Cloud. 0.2 s of speech stops the agent
    # within ~300 ms of the user starting (bench); shorter would let coughs and clicks cut it off
    "interruption": {"mode": "vad", "min_duration": 0.2},
    # a preemptive reply would run recall and the model twice per turn on two cores
    "preemptive_generation": {"enabled": False},
}

_vad = None
_vad_lock = threading.Lock()


def shared_vad():
    """Silero VAD, loaded once per process (its ONNX session is shared by every call's streams)."""
    global _vad
    with _vad_lock:
        if _vad is None:
            silero = plugin("silero")  # registered at process start (agent/plugins.py)
            _vad = silero.VAD.load(
                min_silence_duration=VAD_MIN_SILENCE,
                min_speech_duration=VAD_MIN_SPEECH,
                activation_threshold=VAD_ACTIVATION,
            )
        return _vad


def prewarm() -> None:
    """Load VAD, Whisper (turn-ending and interim) and Piper now (blocking), so the first call does not wait;
    Piper says the offline brain's openers once, so replies that begin with one start at once."""
    budget = apply_process_budget()
    shared_vad()
    load_model(budget.whisper)
    load_model(budget.whisper_interim, interim=True)
    load_voice()
    keep_spoken(SPOKEN_OPENERS)


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
            bus.emit(events.transcript("assistant", self._text.strip(), final=False))

    def flush(self) -> None:
        self._text = ""


class _CallObserver:
    """An event sink that keeps the call's live state for the page."""

    def __init__(self) -> None:
        self.agent_state = "initializing"
        self.user_state = "listening"
        self.error: str | None = None

    def publish(self, event: Event) -> None:
        if event["type"] == "state":
            if event.get("who") == "agent":
                self.agent_state = event["state"]
            else:
                self.user_state = event["state"]
        elif event["type"] == "error":
            self.error = event.get("message")
        elif event["type"] == "transcript" and event.get("role") == "user" and event.get("final"):
            self.error = None  # a new turn: the last failure is history (the transcript keeps it)


class LocalVoiceCall:
    """One browser call through the offline pipeline, as a runtime conversation (a :class:`VoiceCall`)."""

    pipeline = "local"

    def __init__(
        self,
        runtime: AgentRuntime,
        key: str,
        user_id,
        *,
        llm=None,
        stt=None,
        tts=None,
        vad=None,
        greet: bool = True,
        session_options: dict[str, Any] | None = None,
    ) -> None:
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
        self._ps: PlaygroundSession | None = None
        self.greeting: str | None = None
        self._stop_future: concurrent.futures.Future | None = None
        self._stop_lock = threading.Lock()
        self.stt = None
        self.vocabulary: SpeechVocabulary | None = None
        self.user_id = parse_user_id(user_id)  # before open_conversation: its factory may run at once, on the loop
        self.conversation = runtime.open_conversation(key, self.user_id, factory=self._factory)
        self.ready: concurrent.futures.Future = self.conversation.ready

    # --- on the loop -------------------------------------------------------------
    async def _factory(self, sink: QueueSink) -> PlaygroundSession:
        apply_process_budget()
        vad = self._models["vad"] or await asyncio.to_thread(shared_vad)
        stt = self._models["stt"] or build_stt(vad=vad)
        tts = self._models["tts"] or build_tts()
        self.stt = stt
        self.vocabulary = SpeechVocabulary(stt, self.user_id, self.loop)
        if self.vocabulary.stt is not None:
            # hear what other app processes change (a Memories page served by another process), as a LiveKit
            # worker does: waits until it listens, but never holds the call's start up long
            await asyncio.to_thread(memory_changes.follow_database, db.service_url(), timeout=3.0)
        # the browser cancels the echo (getUserMedia echoCancellation), so the agent need not
        # ignore the user for its first seconds of speech (livekit's default AEC warm-up replaces
        # the user's audio with silence then, losing the start of a barge-in)
        options = {"turn_handling": TURN_HANDLING, "aec_warmup_duration": None, **(self._session_options or {})}
        ps = PlaygroundSession(
            self.user_id,
            mode="voice",
            llm=self._models["llm"],
            stt=stt,
            tts=tts,
            vad=vad,
            greet=self._greet,
            sinks=[sink, self.observer],
            session_options=options,
        )
        self._ps = ps
        ps.session.input.audio = self.mic
        ps.session.output.audio = self.speaker
        ps.session.output.transcription = AgentTranscriptOutput(self)
        await self.vocabulary.refresh()
        self.greeting = await ps.start()
        if isinstance(stt, LocalWhisperSTT):  # a turn's recall starts with its speculative transcript
            stt.on_speculative_transcript = ps.agent.start_recall_early
        return ps

    def _voice_report(self) -> dict[str, Any]:
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
            "agent_audio_seconds_sent": round(self.agent_audio_seconds_sent, 3),
        }
        if isinstance(self.stt, LocalWhisperSTT):
            base["voice"]["speech_recognition"] = self.stt.speculation.as_dict()
        return base

    async def _stop(self) -> dict[str, Any] | None:
        self.mic.close()
        self.speaker.close()
        if self.vocabulary is not None:
            self.vocabulary.close()
        try:
            await asyncio.wrap_future(self.ready)
        except Exception as exc:
            log.warning("voice call %s never started (%s); nothing to report", self.key, exc)
            self.conversation.close()
            return None
        # the report (with the voice section) is written here; conversation.close() then finds it done. No facts
        # are extracted from a call whose session is being deleted (ui.erase closes its conversation first)
        extract = self.conversation.close_reason != SESSION_DELETED
        self.report = await self._ps.finish(base_report=self._voice_report, extract=extract)
        await asyncio.wrap_future(self.conversation.close())
        self.ended_at = time.time()
        return self.report

    # --- the page's surface (any thread) ------------------------------------------
    @property
    def bus(self) -> EventBus | None:
        return self._ps.bus if self._ps is not None else None

    @property
    def session_id(self) -> str | None:
        return self.conversation.session_id

    @property
    def playground_session(self) -> PlaygroundSession | None:
        return self._ps

    def push_av_frame(self, frame) -> None:
        self.mic.push_av_frame(frame)

    def read_samples(self, count: int = WEBRTC_FRAME_SAMPLES) -> np.ndarray:
        # the browser reads every 20 ms while it is connected: a call it still streams is not idle, spoken or
        # typed (the runtime closes conversations idle for 30 minutes)
        self.conversation.last_active = time.monotonic()
        return self.speaker.read_samples(count)

    def events_since(self, cursor: int = 0) -> tuple[list[Event], int]:
        return self.conversation.events_since(cursor)

    def submit_text(self, text: str) -> concurrent.futures.Future:
        """A typed message during the call: same session, answered by voice too."""
        return self.conversation.send(text)

    def waiting_messages(self, upto: int | None = None) -> list[str]:
        return self.conversation.waiting_messages(upto)

    @property
    def mic_level_dbfs(self) -> float:
        return self.mic.level_dbfs

    @property
    def speaker_level_dbfs(self) -> float:
        return self.speaker.level_dbfs if self.speaker.playing else SILENCE_DBFS

    @property
    def mic_frames_received(self) -> int:
        return self.mic.frames_received

    @property
    def mic_seconds_received(self) -> float:
        return self.mic.seconds_received

    @property
    def agent_audio_seconds_sent(self) -> float:
        return self.speaker.samples_sent / self.speaker.sample_rate

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
        # its conversation closed on its own: its session was deleted (another app process), or idle too long
        return self._stop_future is None and not self.conversation.closed

    @property
    def ended_because(self) -> str | None:
        return self.conversation.close_reason

    @property
    def kept(self) -> bool:
        return self.conversation.kept

    def stop(self) -> concurrent.futures.Future:
        """End the call and save its report (idempotent)."""
        with self._stop_lock:
            if self._stop_future is None:
                self._stop_future = self.runtime.submit(self._stop())
            return self._stop_future
