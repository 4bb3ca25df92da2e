"""LiveKit mode for the Voice page: the page's server side joins the room as
the verified user and relays audio between the browser (streamlit-webrtc) and
the room, where the agent worker (dispatched by the token) does the talking.

    browser mic --WebRTC--> push_av_frame() --> rtc.AudioSource --> room --> agent worker
    browser speaker <--WebRTC-- read_samples() <-- PlaybackBuffer <-- agent's audio track
    lk.transcription text streams --> transcript events (interim + final)
    the worker's events topic (agent.events.EVENTS_TOPIC) --> retrieval / tool / metric events (origin "worker")
    agent participant attribute lk.agent.state --> state events

The token comes from `core.livekit_tokens.mint_user_token(verified)`: its
identity is the verified user id and its room configuration dispatches the
agent with `{"user_id": <verified id>}`. Nothing from the browser chooses it.

The pure parts (transcription decoding, agent state, audio conversion) are
separate so they can be tested without a LiveKit server.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import AsyncIterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from livekit import rtc

from agent import events
from agent.event_bus import QueueSink
from agent.events import EVENTS_TOPIC, ORIGIN_TRANSCRIPTION, ORIGIN_WORKER, Event, EventFields, decode_event
from agent.forgetting import ForgettingOnScreen
from agent.turn_log import user_said
from agent.voice.audio import SILENCE_DBFS, WEBRTC_FRAME_SAMPLES, WEBRTC_SAMPLE_RATE
from agent.voice.mic import WebRTCAudioInput
from agent.voice.speaker import PlaybackBuffer
from core.db import parse_user_id
from core.identity import VerifiedUser
from core.livekit_tokens import LiveKitToken, mint_user_token

log = logging.getLogger(__name__)

TOPIC_TRANSCRIPTION = ORIGIN_TRANSCRIPTION
TOPIC_CHAT = "lk.chat"
ATTR_SEGMENT_ID = "lk.segment_id"
ATTR_TRACK_ID = "lk.transcribed_track_id"
ATTR_FINAL = "lk.transcription_final"
ATTR_AGENT_STATE = "lk.agent.state"
AGENT_STATES = ("initializing", "idle", "listening", "thinking", "speaking")
CONNECT_TIMEOUT = 15.0


class _StreamReader(Protocol):
    """What `rtc.TextStreamReader` offers that the decoder needs."""

    info: Any

    def __aiter__(self) -> AsyncIterable[str]: ...


@dataclass
class _Segment:
    role: str
    text: str = ""
    final: bool = False


@dataclass
class TranscriptionDecoder:
    """Turns `lk.transcription` text streams into transcript events.

    The agent publishes the user's speech with the user as sender (each
    interim result and the final one as a whole-text stream) and its own
    speech as one delta stream per segment, closed with
    `lk.transcription_final: true`. Either way a segment id ties the pieces
    together; the decoder emits the segment's full text so far each time.
    """

    local_identity: str
    local_track_sids: set[str] = field(default_factory=set)
    segments: dict[str, _Segment] = field(default_factory=dict)

    def role_of(self, sender_identity: str, attributes: dict[str, str]) -> str:
        track = attributes.get(ATTR_TRACK_ID)
        if sender_identity == self.local_identity or (track and track in self.local_track_sids):
            return "user"
        return "assistant"

    def event(self, segment_id: str, segment: _Segment) -> EventFields:
        fields = events.transcript(segment.role, segment.text.strip(), final=segment.final, segment_id=segment_id)
        return {**fields, "origin": ORIGIN_TRANSCRIPTION}

    async def consume(self, reader: _StreamReader, sender_identity: str):
        """Yield a transcript event per received chunk, and one when the stream ends."""
        attributes = dict(reader.info.attributes or {})
        segment_id = attributes.get(ATTR_SEGMENT_ID) or reader.info.stream_id
        segment = self.segments.get(segment_id)
        if segment is None:
            segment = self.segments[segment_id] = _Segment(role=self.role_of(sender_identity, attributes))
        whole_text = segment.role == "user"  # the user's segments are re-sent whole, the agent's as deltas
        received = ""
        async for chunk in reader:
            received += chunk
            # user streams carry the whole text each time; agent streams carry deltas
            segment.text = received if whole_text else segment.text + chunk
            yield self.event(segment_id, segment)
        attributes.update(reader.info.attributes or {})  # the closing header carries `final`
        segment.final = attributes.get(ATTR_FINAL) == "true"
        if segment.final or not received:
            yield self.event(segment_id, segment)
        if segment.final:
            self.segments.pop(segment_id, None)


def agent_state_event(attributes: dict[str, str]) -> EventFields | None:
    state = attributes.get(ATTR_AGENT_STATE)
    if state not in AGENT_STATES:
        return None
    return events.state("agent", state)


def is_agent(participant: Any) -> bool:
    return getattr(participant, "kind", None) == rtc.ParticipantKind.PARTICIPANT_KIND_AGENT


class LiveKitVoiceBridge:
    """One browser call relayed into a LiveKit room as the verified user (a :class:`VoiceCall`).

    Thread-safety: `push_av_frame`, `read_samples`, `submit_text`, `stop` and
    the properties may be called from any thread; everything else runs on
    `loop` (the app's agent loop).
    """

    pipeline = "livekit"

    def __init__(self, token: LiveKitToken, *, loop: asyncio.AbstractEventLoop, sink: QueueSink | None = None) -> None:
        self.token = token
        self.loop = loop
        self.sink = sink or QueueSink()
        self.session_id = token.room_name
        self.user_id = token.identity
        self.mic = WebRTCAudioInput(loop, label="LiveKit microphone", output_rate=WEBRTC_SAMPLE_RATE)
        self.playback = PlaybackBuffer()
        self.decoder = TranscriptionDecoder(local_identity=token.identity)
        self.agent_state = "initializing"
        self.agent_identity: str | None = None
        self.error: str | None = None
        self.started_at = time.time()
        self.ended_at: float | None = None
        self._room: rtc.Room | None = None
        self._source: rtc.AudioSource | None = None
        self._tasks: set[asyncio.Task] = set()
        self._turn = 0
        self._seq = 0
        self._typed: list[tuple[str, int]] = []  # (text, event cursor when sent) until the worker's transcript of it
        self._closed = False
        self.ready: concurrent.futures.Future | None = None  # set by whoever schedules start()
        # a memory deleted during the call leaves the transcript and panel shown here too (the worker's
        # own session forgets it in the model's context and its report: agent/forgetting.py)
        self.forgetting = ForgettingOnScreen(parse_user_id(token.identity), f"call {token.room_name}", self._shown)
        self.forgetting.start(loop)

    @classmethod
    def for_user(
        cls, verified: VerifiedUser, *, loop: asyncio.AbstractEventLoop, sink: QueueSink | None = None, settings=None
    ) -> LiveKitVoiceBridge:
        """Mint the token for `verified` and build the bridge."""
        return cls(mint_user_token(verified, settings=settings), loop=loop, sink=sink)

    # --- events --------------------------------------------------------------
    def _emit(self, fields: EventFields) -> None:
        """Publish an event this bridge observed (the worker's own events come with their stamps)."""
        event = events.stamped(fields, ts=time.time(), session_id=self.session_id, turn=self._turn, seq=self._seq)
        self._seq += 1
        self.sink.publish(event)

    def handle_worker_event(self, payload: str) -> Event | None:
        """One message from the worker's events topic -> the page's queue."""
        try:
            event = decode_event(payload)
        except ValueError as exc:
            log.warning("ignoring a malformed event from the agent: %s", exc)
            return None
        self._turn = max(self._turn, int(event.get("turn") or 0))
        if event["type"] == "state" and event.get("who") == "agent":
            self.agent_state = event["state"]
        event["origin"] = ORIGIN_WORKER
        self.sink.publish(event)
        return event

    def handle_attributes(self, attributes: dict[str, str]) -> None:
        event = agent_state_event(attributes)
        if event and event["state"] != self.agent_state:
            self.agent_state = event["state"]
            self._emit(event)

    # --- lifecycle (on the loop) -----------------------------------------------
    async def start(self) -> None:
        room = rtc.Room(loop=self.loop)
        self._room = room
        room.on("track_subscribed", self._on_track_subscribed)
        room.on("participant_attributes_changed", self._on_attributes_changed)
        room.on("participant_connected", self._on_participant_connected)
        room.on("disconnected", self._on_disconnected)
        room.register_text_stream_handler(TOPIC_TRANSCRIPTION, self._on_transcription)
        room.register_text_stream_handler(EVENTS_TOPIC, self._on_worker_event)
        try:
            await asyncio.wait_for(
                room.connect(self.token.server_url, self.token.token, rtc.RoomOptions(auto_subscribe=True)),
                CONNECT_TIMEOUT,
            )
        except Exception as exc:
            self.error = (
                f"Could not join the LiveKit room at {self.token.server_url}: {str(exc) or type(exc).__name__}. "
                "Check LIVEKIT_URL and that the LiveKit server (or Cloud project) is up; "
                "`make doctor` checks it."
            )
            self._emit(events.error(self.error, where="livekit"))
            raise
        self._source = rtc.AudioSource(WEBRTC_SAMPLE_RATE, 1)
        track = rtc.LocalAudioTrack.create_audio_track("microphone", self._source)
        publication = await room.local_participant.publish_track(
            track, rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE)
        )
        self.decoder.local_track_sids.add(publication.sid)
        self._spawn(self._forward_mic())
        for participant in room.remote_participants.values():
            self._on_participant_connected(participant)
        self._emit(events.state("user", "listening"))

    async def _forward_mic(self) -> None:
        async for frame in self.mic:
            if self._source is None:
                return
            await self._source.capture_frame(frame)

    async def _play_agent_track(self, track: rtc.Track) -> None:
        stream = rtc.AudioStream(track, sample_rate=WEBRTC_SAMPLE_RATE, num_channels=1)
        try:
            async for event in stream:
                self.playback.push(event.frame)
        finally:
            await stream.aclose()

    def _on_track_subscribed(self, track, publication, participant) -> None:
        if track.kind == rtc.TrackKind.KIND_AUDIO and is_agent(participant):
            self.agent_identity = participant.identity
            self._spawn(self._play_agent_track(track))

    def _on_participant_connected(self, participant) -> None:
        if is_agent(participant):
            self.agent_identity = participant.identity
            self.handle_attributes(dict(participant.attributes))

    def _on_attributes_changed(self, changed: dict[str, str], participant) -> None:
        if is_agent(participant):
            self.handle_attributes(dict(participant.attributes))

    def _on_disconnected(self, reason=None) -> None:
        if not self._closed:
            self.error = f"Disconnected from the LiveKit room ({reason})."
            self._emit(events.error(self.error, where="livekit"))

    def _on_transcription(self, reader: rtc.TextStreamReader, participant_identity: str) -> None:
        async def read() -> None:
            async for event in self.decoder.consume(reader, participant_identity):
                self._emit(event)

        self._spawn(read())

    def _on_worker_event(self, reader: rtc.TextStreamReader, participant_identity: str) -> None:
        async def read() -> None:
            self.handle_worker_event(await reader.read_all())

        self._spawn(read())

    def _spawn(self, coro) -> None:
        task = self.loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def send_text(self, text: str) -> None:
        if self._room is None or not self._room.isconnected():
            raise RuntimeError("The LiveKit room is not connected.")
        await self._room.local_participant.send_text(text, topic=TOPIC_CHAT)

    def _shown(self) -> list[Event]:
        return self.sink.since(0)[0]

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.forgetting.stop()
        self.ended_at = time.time()
        self.mic.close()
        for task in list(self._tasks):
            task.cancel()
        if self._room is not None:
            try:
                await self._room.disconnect()
            except Exception:
                log.debug("room disconnect failed", exc_info=True)
        if self._source is not None:
            await self._source.aclose()
        self._emit(events.state("agent", "idle"))

    # --- thread-safe surface for the page -------------------------------------
    def push_av_frame(self, frame) -> None:
        self.mic.push_av_frame(frame)

    def read_samples(self, count: int = WEBRTC_FRAME_SAMPLES) -> np.ndarray:
        return self.playback.read_samples(count)

    def submit_text(self, text: str) -> concurrent.futures.Future:
        """A typed message: sent on lk.chat, which the worker's session takes as user input."""
        sent = (text, self.sink.cursor)
        self._typed.append(sent)
        future = asyncio.run_coroutine_threadsafe(self.send_text(text), self.loop)
        future.add_done_callback(lambda done: self._forget_unsent(sent, done))
        return future

    def _forget_unsent(self, sent: tuple[str, int], future: concurrent.futures.Future) -> None:
        if future.cancelled() or future.exception() is not None:
            self._typed.remove(sent)  # not sent: the page shows the error, not a message that never arrives

    def waiting_messages(self, upto: int | None = None) -> list[str]:
        """Typed messages sent whose user transcript has not come back from the worker by cursor `upto`."""
        upto = self.sink.cursor if upto is None else upto
        waiting = []
        for text, cursor in list(self._typed):
            seen = self.sink.since(cursor)[0][: max(upto - cursor, 0)]
            if not any(e["type"] == "transcript" and e["role"] == "user" and e["final"] for e in seen):
                waiting.append(text)
        return waiting

    def events_since(self, cursor: int = 0) -> tuple[list[Event], int]:
        return self.sink.since(cursor)

    def stop(self) -> concurrent.futures.Future:
        """Leave the room (the worker saves the session report when the room empties)."""
        return asyncio.run_coroutine_threadsafe(self.aclose(), self.loop)

    @property
    def user_state(self) -> str:
        return "listening"

    @property
    def mic_frames_received(self) -> int:
        return self.mic.frames_received

    @property
    def mic_seconds_received(self) -> float:
        return self.mic.seconds_received

    @property
    def agent_audio_seconds_sent(self) -> float:
        return self.playback.samples_sent / self.playback.sample_rate

    @property
    def mic_level_dbfs(self) -> float:
        return self.mic.level_dbfs

    @property
    def speaker_level_dbfs(self) -> float:
        return self.playback.level_dbfs if self.playback.buffered_seconds else SILENCE_DBFS

    @property
    def active(self) -> bool:
        return not self._closed and self.error is None

    @property
    def ended_because(self) -> str | None:
        return None  # the worker ends its own job (a deleted session included); the room says no more

    @property
    def kept(self) -> bool:  # the worker keeps its session by the same rule, from the user's words it heard
        return any(user_said(event) for event in self.sink.since(0)[0])
