"""The WebRTC <-> AgentSession audio adapters with synthetic frames: format
conversion, the mic level, and the playback contract AgentSession relies on
(started / finished / interrupted, pause)."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest
from livekit import rtc

from agent.voice.audio import SESSION_INPUT_RATE, SILENCE_DBFS
from agent.voice.mic import WebRTCAudioInput
from agent.voice.speaker import WebRTCAudioOutput


def tone(freq: float, rate: int, seconds: float, amplitude: int = 10_000) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (np.sin(2 * np.pi * freq * t) * amplitude).astype(np.int16)


def peak_hz(samples: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(samples.astype(np.float64)))
    return float(np.argmax(spectrum) * rate / len(samples))


async def _collect(audio_input: WebRTCAudioInput, seconds: float) -> list[rtc.AudioFrame]:
    frames, total = [], 0.0
    while total < seconds - 0.021:
        frame = await asyncio.wait_for(audio_input.__anext__(), 5)
        frames.append(frame)
        total += frame.duration
    return frames


async def test_input_turns_48k_stereo_from_another_thread_into_16k_mono():
    loop = asyncio.get_running_loop()
    audio_input = WebRTCAudioInput(loop)
    signal = tone(300, 48_000, 1.0)
    stereo = np.repeat(signal, 2)  # interleaved L R L R

    def webrtc_thread():
        for start in range(0, len(stereo), 1920):  # 20 ms
            audio_input.push_frame(stereo[start : start + 1920].tobytes(), sample_rate=48_000, num_channels=2)

    thread = threading.Thread(target=webrtc_thread)
    thread.start()
    frames = await _collect(audio_input, 0.98)
    thread.join()
    assert all(f.sample_rate == SESSION_INPUT_RATE and f.num_channels == 1 for f in frames)
    mono = np.concatenate([np.frombuffer(f.data, dtype=np.int16) for f in frames])
    assert abs(peak_hz(mono, SESSION_INPUT_RATE) - 300) < 3
    assert 9_000 < np.abs(mono).max() < 11_000  # downmix averages, does not sum
    assert audio_input.frames_received == 50
    assert audio_input.seconds_received == pytest.approx(1.0)  # what the Voice page says it heard
    assert audio_input.level_dbfs > -20  # a loud tone moves the meter


async def test_input_level_falls_on_silence_and_detach_drops_frames():
    loop = asyncio.get_running_loop()
    audio_input = WebRTCAudioInput(loop)
    for _ in range(10):
        audio_input.push_frame(tone(440, 48_000, 0.02).tobytes(), sample_rate=48_000)
    loud = audio_input.level_dbfs
    for _ in range(100):
        audio_input.push_frame(np.zeros(960, np.int16).tobytes(), sample_rate=48_000)
    assert loud > -20 and audio_input.level_dbfs < -60

    audio_input.on_detached()
    audio_input.push_frame(tone(440, 48_000, 1.0).tobytes(), sample_rate=48_000)  # a whole second
    audio_input.on_attached()
    await asyncio.sleep(0.05)
    queued = audio_input._queue.qsize()
    audio_input.close()
    frames = []
    with pytest.raises(StopAsyncIteration):
        while True:
            frames.append(await audio_input.__anext__())
    assert len(frames) == queued  # the frame pushed while detached was never queued
    assert sum(f.duration for f in frames) == pytest.approx(110 * 0.02, abs=0.1)


async def test_input_accepts_planar_av_frames():
    import av

    loop = asyncio.get_running_loop()
    audio_input = WebRTCAudioInput(loop)
    signal = tone(500, 48_000, 0.2)
    frame = av.AudioFrame.from_ndarray(np.stack([signal, signal]), format="s16p", layout="stereo")
    frame.sample_rate = 48_000
    audio_input.push_av_frame(frame)
    packed = av.AudioFrame.from_ndarray(np.repeat(signal, 2).reshape(1, -1), format="s16", layout="stereo")
    packed.sample_rate = 48_000
    audio_input.push_av_frame(packed)
    frames = await _collect(audio_input, 0.38)
    mono = np.concatenate([np.frombuffer(f.data, dtype=np.int16) for f in frames])
    assert abs(peak_hz(mono, SESSION_INPUT_RATE) - 500) < 5


class Reader:
    """Plays an output the way the WebRTC track does, on its own thread."""

    def __init__(self, output: WebRTCAudioOutput, speed: float = 4.0):
        self.output, self.period = output, 0.02 / speed
        self.read: list[np.ndarray] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.wait(self.period):
            self.read.append(self.output.read_samples())

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    @property
    def audio(self) -> np.ndarray:
        return np.concatenate(self.read) if self.read else np.zeros(0, np.int16)


def agent_frames(seconds: float, rate: int = 22_050, freq: float = 600) -> list[rtc.AudioFrame]:
    signal = tone(freq, rate, seconds)
    step = rate // 10
    return [
        rtc.AudioFrame(signal[i : i + step].tobytes(), rate, 1, len(signal[i : i + step]))
        for i in range(0, len(signal), step)
    ]


def record_events(output: WebRTCAudioOutput):
    events = {"started": [], "finished": []}
    output.on("playback_started", events["started"].append)
    output.on("playback_finished", events["finished"].append)
    return events


async def test_output_plays_a_segment_and_reports_it_finished():
    output = WebRTCAudioOutput(asyncio.get_running_loop())
    events = record_events(output)
    with Reader(output) as reader:
        for frame in agent_frames(0.6):
            await output.capture_frame(frame)
        output.flush()
        finished = await asyncio.wait_for(output.wait_for_playout(), 5)
    assert not finished.interrupted
    assert finished.playback_position == pytest.approx(0.6, abs=0.02)
    assert len(events["started"]) == 1 and len(events["finished"]) == 1
    played = np.trim_zeros(reader.audio)
    assert abs(len(played) / 48_000 - 0.6) < 0.02  # resampled 22.05 kHz -> 48 kHz, nothing lost
    assert abs(peak_hz(played, 48_000) - 600) < 5


async def test_output_waits_for_late_audio_after_an_underrun():
    # TTS slower than real time: the reader drains the buffer between sentences
    output = WebRTCAudioOutput(asyncio.get_running_loop())
    events = record_events(output)
    with Reader(output, speed=8.0):
        for frame in agent_frames(0.2):
            await output.capture_frame(frame)
        await asyncio.sleep(0.15)  # buffer runs dry
        assert output.buffered_seconds == 0
        for frame in agent_frames(0.3):
            await output.capture_frame(frame)
        output.flush()
        finished = await asyncio.wait_for(output.wait_for_playout(), 5)
    assert not finished.interrupted and finished.playback_position == pytest.approx(0.5, abs=0.02)
    assert len(events["started"]) == 1  # one segment, one start, despite the gap


async def test_barge_in_clears_audio_and_reports_interruption():
    output = WebRTCAudioOutput(asyncio.get_running_loop())
    events = record_events(output)
    with Reader(output, speed=1.0) as reader:
        for frame in agent_frames(3.0):
            await output.capture_frame(frame)
        output.flush()
        await asyncio.sleep(0.4)
        output.clear_buffer()
        finished = await asyncio.wait_for(output.wait_for_playout(), 2)
        await asyncio.sleep(0.1)
        tail = reader.read[-3:]
    assert finished.interrupted
    assert 0.2 < finished.playback_position < 1.0
    assert all(not chunk.any() for chunk in tail)  # silence after the barge-in
    assert output.buffered_seconds == 0
    assert len(events["finished"]) == 1


async def test_clear_before_flush_is_reported_as_interrupted():
    # the session's cancel path: clear_buffer() while still capturing, then flush()
    output = WebRTCAudioOutput(asyncio.get_running_loop())
    for frame in agent_frames(1.0):
        await output.capture_frame(frame)
    output.clear_buffer()
    output.flush()
    finished = await asyncio.wait_for(output.wait_for_playout(), 2)
    assert finished.interrupted and finished.playback_position == 0


async def test_pause_holds_audio_until_resume():
    output = WebRTCAudioOutput(asyncio.get_running_loop())
    for frame in agent_frames(0.3):
        await output.capture_frame(frame)
    output.flush()
    output.pause()
    assert not output.read_samples().any()
    assert output.buffered_seconds == pytest.approx(0.3, abs=0.02)
    output.resume()
    assert output.read_samples().any()
    while output.buffered_seconds:
        output.read_samples()
    finished = await asyncio.wait_for(output.wait_for_playout(), 2)
    assert not finished.interrupted
    assert output.level_dbfs == SILENCE_DBFS or output.level_dbfs < 0


async def test_next_segment_starts_after_the_previous_played_out():
    output = WebRTCAudioOutput(asyncio.get_running_loop())
    events = record_events(output)
    with Reader(output, speed=8.0):
        for _ in range(2):
            for frame in agent_frames(0.2):
                await output.capture_frame(frame)
            output.flush()
        finished = await asyncio.wait_for(output.wait_for_playout(), 5)
    assert not finished.interrupted
    assert len(events["started"]) == 2 and len(events["finished"]) == 2
