"""LiveKit mode at its boundaries (no LiveKit server can run here): the token
the bridge joins with, the decoding of what the room sends (lk.transcription
streams, the worker's events, the agent's state attribute), and the audio
adapters with synthetic frames."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

import numpy as np
import pytest
from livekit import api, rtc

from agent import events
from agent.event_bus import QueueSink
from agent.events import EVENTS_TOPIC, encode_event
from agent.voice.livekit_bridge import (
    ATTR_FINAL,
    ATTR_SEGMENT_ID,
    ATTR_TRACK_ID,
    LiveKitVoiceBridge,
    TranscriptionDecoder,
    agent_state_event,
)
from core import memories, memory_changes
from core.config import Settings
from core.errors import ConfigurationError, InvalidInput
from tests.support.waiting import until

LK_KEY, LK_SECRET = "devkey", "secret-that-is-long-enough-for-hs256-signing"


def livekit_settings(**overrides) -> Settings:
    values = {
        "livekit_url": "ws://127.0.0.1:7880",
        "livekit_api_key": LK_KEY,
        "livekit_api_secret": LK_SECRET,
        "agent_name": "memory-playground",
    }
    values.update(overrides)
    return Settings(**values)


# --- token and dispatch -------------------------------------------------------------


async def test_bridge_joins_as_the_verified_user_and_dispatches_the_agent_with_its_id(new_user):
    user = new_user()
    bridge = LiveKitVoiceBridge.for_user(user.verified, loop=asyncio.get_running_loop(), settings=livekit_settings())
    claims = api.TokenVerifier(LK_KEY, LK_SECRET).verify(bridge.token.token)
    assert claims.identity == str(user.user_id) == bridge.user_id
    assert claims.video.room_join and claims.video.room == bridge.session_id
    assert claims.video.can_publish and claims.video.can_subscribe
    dispatch = claims.room_config.agents
    assert [d.agent_name for d in dispatch] == ["memory-playground"]
    assert json.loads(dispatch[0].metadata) == {"user_id": str(user.user_id)}
    assert bridge.token.server_url == "ws://127.0.0.1:7880"


async def test_bridge_refuses_an_unverified_user_id_and_missing_credentials(new_user):
    loop = asyncio.get_running_loop()
    user = new_user()
    with pytest.raises(InvalidInput):
        LiveKitVoiceBridge.for_user({"user_id": str(user.user_id)}, loop=loop, settings=livekit_settings())
    with pytest.raises(ConfigurationError, match="LIVEKIT_URL"):
        LiveKitVoiceBridge.for_user(user.verified, loop=loop, settings=livekit_settings(livekit_url=None))


# --- what the room sends -------------------------------------------------------------


@dataclass
class FakeInfo:
    stream_id: str
    attributes: dict
    topic: str = "lk.transcription"


@dataclass
class FakeReader:
    """Stands in for rtc.TextStreamReader: chunks, then the closing header's attributes."""

    chunks: list[str]
    attributes: dict
    closing: dict = field(default_factory=dict)
    stream_id: str = "stream"

    def __post_init__(self):
        self.info = FakeInfo(self.stream_id, dict(self.attributes))

    def __aiter__(self):
        return self._iterate()

    async def _iterate(self):
        for chunk in self.chunks:
            yield chunk
        self.info.attributes.update(self.closing)

    async def read_all(self):
        return "".join([c async for c in self])


async def _decode(decoder, reader, sender):
    return [event async for event in decoder.consume(reader, sender)]


async def test_user_transcription_streams_become_interim_then_final_events():
    decoder = TranscriptionDecoder(local_identity="user-1", local_track_sids={"TR_mic"})
    interim = await _decode(
        decoder,
        FakeReader(["my favorite"], {ATTR_SEGMENT_ID: "SG_1", ATTR_FINAL: "false", ATTR_TRACK_ID: "TR_mic"}),
        "user-1",
    )
    interim2 = await _decode(
        decoder, FakeReader(["my favorite color is"], {ATTR_SEGMENT_ID: "SG_1", ATTR_FINAL: "false"}), "user-1"
    )
    final = await _decode(
        decoder, FakeReader(["My favorite color is teal."], {ATTR_SEGMENT_ID: "SG_1", ATTR_FINAL: "true"}), "user-1"
    )
    assert [(e["role"], e["text"], e["final"]) for e in interim + interim2] == [
        ("user", "my favorite", False),
        ("user", "my favorite color is", False),
    ]
    assert final[-1] == {
        "type": "transcript",
        "role": "user",
        "text": "My favorite color is teal.",
        "final": True,
        "segment_id": "SG_1",
        "origin": "lk.transcription",
    }
    assert "SG_1" not in decoder.segments  # finished segments are forgotten


async def test_agent_delta_stream_accumulates_and_ends_final():
    decoder = TranscriptionDecoder(local_identity="user-1")
    reader = FakeReader(
        ["Got it, ", "your favorite color ", "is teal."],
        {ATTR_SEGMENT_ID: "SG_9", ATTR_FINAL: "false", ATTR_TRACK_ID: "TR_agent"},
        closing={ATTR_FINAL: "true"},
    )
    events = await _decode(decoder, reader, "agent-xyz")
    assert [e["text"] for e in events[:3]] == [
        "Got it,",
        "Got it, your favorite color",
        "Got it, your favorite color is teal.",
    ]
    assert all(e["role"] == "assistant" and not e["final"] for e in events[:3])
    assert events[-1]["final"] and events[-1]["text"] == "Got it, your favorite color is teal."


async def test_worker_events_are_forwarded_and_malformed_ones_dropped(new_user):
    sink = QueueSink()
    bridge = LiveKitVoiceBridge.for_user(
        new_user().verified, loop=asyncio.get_running_loop(), sink=sink, settings=livekit_settings()
    )
    hit = {"id": "m1", "content": "teal", "vector_rank": 1, "text_rank": 1, "rrf_score": 0.0164}
    retrieval = events.stamped(
        events.retrieval(
            source="memories",
            trigger="per_turn_recall",
            query="favorite color",
            mode="hybrid",
            params=None,
            latency_ms=12.0,
            hits=[hit],
        ),
        ts=1.0,
        session_id="job-1",
        turn=2,
        seq=7,
    )
    forwarded = bridge.handle_worker_event(encode_event(retrieval))
    assert forwarded["hits"][0]["rrf_score"] == 0.0164
    assert forwarded["source"] == "memories" and forwarded["origin"] == "worker"  # what it searched, and whence
    assert bridge.handle_worker_event("not json") is None
    assert bridge.handle_worker_event(json.dumps({"type": "retrieval", "ts": 1})) is None  # missing keys
    state = events.stamped(events.state("agent", "thinking"), ts=2.0, session_id="job-1", turn=2, seq=8)
    bridge.handle_worker_event(encode_event(state))
    received, _ = sink.since(0)
    assert [e["type"] for e in received] == ["retrieval", "state"]
    assert bridge.agent_state == "thinking"
    assert EVENTS_TOPIC == "memory-playground.events"
    # transcript events the bridge makes itself carry the worker's current turn
    bridge._emit(events.transcript("user", "hi"))
    assert sink.since(0)[0][-1]["turn"] == 2


async def test_a_memory_deleted_during_the_call_leaves_the_transcript_and_panel_shown(new_user):
    """The worker forgets it in its own process (agent/forgetting.py); the page's copy of the call's events,
    the room's transcription and the worker's forwarded events, is blanked here."""
    user = new_user()
    memories.remember(user.scope, "dog_name", "Biscuitface")
    sink = QueueSink()
    bridge = LiveKitVoiceBridge.for_user(
        user.verified, loop=asyncio.get_running_loop(), sink=sink, settings=livekit_settings()
    )
    await asyncio.sleep(0.5)  # the memories are read before the call has anything to forget
    decoder = TranscriptionDecoder(local_identity=str(user.user_id))
    for event in await _decode(
        decoder, FakeReader(["your dog is Biscuitface."], {ATTR_SEGMENT_ID: "SG_2", ATTR_FINAL: "true"}), "agent-1"
    ):
        bridge._emit(event)
    hit = {"id": "m1", "memory_type": "dog_name", "content": "Biscuitface", "vector_rank": 1, "rrf_score": 0.3}
    recalled = events.retrieval(
        source="memories",
        trigger="per_turn_recall",
        query="my dog",
        mode="hybrid",
        params=None,
        latency_ms=9.0,
        hits=[hit],
    )
    bridge.handle_worker_event(encode_event(events.stamped(recalled, ts=1.0, session_id="job-2", turn=1, seq=3)))
    bridge._emit(events.transcript("user", "thanks, good night"))

    (dog,) = memories.list_memories(user.scope)
    await asyncio.to_thread(memories.delete_memory, user.scope, dog.id)  # the Memories page, mid-call
    assert await asyncio.to_thread(until, lambda: bridge.forgetting.messages > 0, 10.0)
    shown, _ = sink.since(0)
    assert "Biscuitface" not in json.dumps(shown)
    said = [(e["text"], e["final"]) for e in shown if e["type"] == "transcript"]
    assert said[-1] == ("thanks, good night", True) and said[:-1] and {t for t, _ in said[:-1]} == {"[deleted]"}
    (retrieval,) = [e for e in shown if e["type"] == "retrieval"]
    assert retrieval["hits"][0]["content"] == "[deleted]" and retrieval["hits"][0]["memory_type"] == "dog_name"
    await bridge.aclose()
    assert bridge.forgetting not in memory_changes._listeners  # it stops following with the call


async def test_agent_state_attribute_becomes_state_events_once(new_user):
    sink = QueueSink()
    bridge = LiveKitVoiceBridge.for_user(
        new_user().verified, loop=asyncio.get_running_loop(), sink=sink, settings=livekit_settings()
    )
    assert agent_state_event({"lk.agent.state": "bogus"}) is None
    for state in ("listening", "listening", "thinking", "speaking"):
        bridge.handle_attributes({"lk.agent.state": state, "lk.agent.name": "memory-playground"})
    states = [e["state"] for e in sink.since(0)[0] if e["type"] == "state"]
    assert states == ["listening", "thinking", "speaking"]


# --- audio ---------------------------------------------------------------------------


def _tone(freq, rate, seconds, amplitude=8000):
    t = np.arange(int(rate * seconds)) / rate
    return (np.sin(2 * np.pi * freq * t) * amplitude).astype(np.int16)


async def test_browser_mic_frames_reach_the_published_audio_source(new_user):
    import av

    bridge = LiveKitVoiceBridge.for_user(
        new_user().verified, loop=asyncio.get_running_loop(), settings=livekit_settings()
    )
    bridge._source = rtc.AudioSource(48_000, 1)  # what start() publishes
    forward = asyncio.create_task(bridge._forward_mic())
    tone = _tone(440, 48_000, 0.2)
    for start in range(0, len(tone), 960):
        chunk = np.repeat(tone[start : start + 960], 2).reshape(1, -1)  # packed stereo, as aiortc decodes
        frame = av.AudioFrame.from_ndarray(chunk, format="s16", layout="stereo")
        frame.sample_rate = 48_000
        bridge.push_av_frame(frame)
    for _ in range(50):
        await asyncio.sleep(0.01)
        if bridge._source.queued_duration > 0.15:
            break
    assert bridge._source.queued_duration > 0.15
    assert bridge.mic_level_dbfs > -30
    bridge.mic.close()
    await asyncio.wait_for(forward, 2)
    await bridge._source.aclose()


async def test_agent_audio_is_played_back_at_48k_mono(new_user):
    bridge = LiveKitVoiceBridge.for_user(
        new_user().verified, loop=asyncio.get_running_loop(), settings=livekit_settings()
    )
    tone = _tone(700, 24_000, 0.5)
    stereo = np.repeat(tone, 2)
    for start in range(0, len(stereo), 480):
        bridge.playback.push(rtc.AudioFrame(stereo[start : start + 480].tobytes(), 24_000, 2, 240))
    played = []
    while bridge.playback.buffered_seconds:
        played.append(bridge.read_samples(960))
    audio = np.trim_zeros(np.concatenate(played))
    assert abs(len(audio) / 48_000 - 0.5) < 0.04  # the live resampler holds back ~30 ms
    spectrum = np.abs(np.fft.rfft(audio.astype(float)))
    assert abs(np.argmax(spectrum) * 48_000 / len(audio) - 700) < 5
    assert not bridge.read_samples(960).any()  # nothing left: silence, not a repeat
