"""Audio I/O between a browser's WebRTC connection and an AgentSession.

The WebRTC side (aiortc, run by streamlit-webrtc on its own thread and loop)
delivers microphone frames as 48 kHz interleaved s16, usually stereo, and pulls
20 ms of playback audio every 20 ms. The AgentSession runs on another loop.

- `WebRTCAudioInput` (an `io.AudioInput`): `push_frame()` is called from the
  WebRTC thread; it downmixes to mono, resamples to 16 kHz (what Silero VAD and
  Whisper use, so neither resamples again) and hands the frame to the session
  loop. It also keeps a smoothed microphone level for the page's meter.
- `WebRTCAudioOutput` (an `io.AudioOutput`): the session captures agent audio
  into a thread-safe 48 kHz mono buffer; `read_samples()` is called by the
  WebRTC track at real-time pace. It follows livekit's console output contract:
  `playback_started` when the first sample of a segment is actually sent,
  `playback_finished` once a flushed segment has been fully read, or
  immediately with `interrupted=True` when `clear_buffer()` is called (barge-in),
  and `pause()`/`resume()` send silence without losing audio.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from typing import Any

import numpy as np
from livekit import rtc
from livekit.agents.voice import io

log = logging.getLogger(__name__)

WEBRTC_SAMPLE_RATE = 48_000
SESSION_INPUT_RATE = 16_000
WEBRTC_FRAME_SAMPLES = 960  # 20 ms at 48 kHz
SILENCE_DBFS = -90.0
# frames waiting for the session loop beyond this are stale (the loop is stuck); drop them
MAX_PENDING_INPUT_SECONDS = 10.0


def to_mono_int16(data: Any, num_channels: int) -> np.ndarray:
    """Interleaved s16 bytes / int16 array (or a planar (channels, n) array) -> mono int16."""
    samples = np.asarray(data) if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.int16)
    if samples.dtype != np.int16:
        if np.issubdtype(samples.dtype, np.floating):
            samples = np.clip(samples * 32767.0, -32768, 32767)
        samples = samples.astype(np.int16)
    if samples.ndim == 2:  # planar (channels, samples) or packed (1, samples * channels)
        if samples.shape[0] == num_channels and num_channels > 1:
            return samples.mean(axis=0).astype(np.int16)
        samples = samples.reshape(-1)
    if num_channels > 1:
        samples = samples[: len(samples) - len(samples) % num_channels]
        return samples.reshape(-1, num_channels).mean(axis=1).astype(np.int16)
    return samples


def dbfs(samples: np.ndarray) -> float:
    if samples.size == 0:
        return SILENCE_DBFS
    rms = math.sqrt(float(np.mean(samples.astype(np.float64) ** 2)))
    return max(SILENCE_DBFS, 20 * math.log10(rms / 32768.0)) if rms > 0 else SILENCE_DBFS


class WebRTCAudioInput(io.AudioInput):
    """Browser microphone -> AgentSession. Thread-safe `push_frame`."""

    def __init__(self, loop: asyncio.AbstractEventLoop, *, label: str = "WebRTC microphone",
                 output_rate: int = SESSION_INPUT_RATE, attached: bool = True) -> None:
        """`attached=False` drops audio (still metering it) until a session attaches the input."""
        super().__init__(label=label)
        self._loop = loop
        self._output_rate = output_rate
        self._queue: asyncio.Queue[rtc.AudioFrame | None] = asyncio.Queue()
        self._resampler: rtc.AudioResampler | None = None
        self._resampler_rate = 0
        self._push_lock = threading.Lock()
        self._attached = attached
        self._closed = False
        self._max_pending = int(MAX_PENDING_INPUT_SECONDS * 50)
        self.level_dbfs = SILENCE_DBFS  # smoothed, for the meter
        self.peak_dbfs = SILENCE_DBFS
        self.frames_received = 0
        self.frames_dropped = 0
        self.last_frame_at: float | None = None

    # --- producer side (any thread) -----------------------------------------
    def push_frame(self, data: Any, *, sample_rate: int = WEBRTC_SAMPLE_RATE, num_channels: int = 1) -> None:
        """One chunk of microphone audio: interleaved s16 (bytes or int16 array)."""
        if self._closed:
            return
        mono = to_mono_int16(data, num_channels)
        with self._push_lock:
            self._update_level(mono)
            self.frames_received += 1
            self.last_frame_at = time.monotonic()
            if not self._attached or mono.size == 0:
                return
            frames = self._resample(mono, sample_rate)
        for frame in frames:
            self._enqueue(frame)

    def push_av_frame(self, frame: Any) -> None:
        """An `av.AudioFrame` as aiortc decodes it (s16, packed or planar)."""
        channels = len(frame.layout.channels)
        array = frame.to_ndarray()
        if frame.format.is_planar:
            array = array.reshape(channels, -1)
            data = array.T.reshape(-1) if channels > 1 else array.reshape(-1)
        else:
            data = array.reshape(-1)
        if frame.format.name not in ("s16", "s16p"):
            data = data.astype(np.float32)
        self.push_frame(data, sample_rate=frame.sample_rate, num_channels=channels)

    def _resample(self, mono: np.ndarray, sample_rate: int) -> list[rtc.AudioFrame]:
        frame = rtc.AudioFrame(mono.tobytes(), sample_rate, 1, len(mono))
        if sample_rate == self._output_rate:
            return [frame]
        if self._resampler is None or self._resampler_rate != sample_rate:
            self._resampler = rtc.AudioResampler(sample_rate, self._output_rate, num_channels=1,
                                                 quality=rtc.AudioResamplerQuality.MEDIUM)
            self._resampler_rate = sample_rate
        return self._resampler.push(frame)

    def _update_level(self, mono: np.ndarray) -> None:
        level = dbfs(mono)
        self.peak_dbfs = max(level, self.peak_dbfs - 1.0)  # decays ~50 dB/s at 50 frames/s
        # fast attack, slow release, like a VU meter
        alpha = 0.5 if level > self.level_dbfs else 0.1
        self.level_dbfs += alpha * (level - self.level_dbfs)

    def _enqueue(self, frame: rtc.AudioFrame) -> None:
        def put() -> None:
            if self._queue.qsize() >= self._max_pending:
                self._queue.get_nowait()
                self.frames_dropped += 1
            self._queue.put_nowait(frame)

        try:
            self._loop.call_soon_threadsafe(put)
        except RuntimeError:  # the session loop is closed: the call is over
            self._closed = True

    def close(self) -> None:
        """End the stream: the session's audio task stops reading."""
        if self._closed:
            return
        self._closed = True
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, None)
        except RuntimeError:
            pass

    # --- consumer side (session loop) ---------------------------------------
    async def __anext__(self) -> rtc.AudioFrame:
        frame = await self._queue.get()
        if frame is None:
            self._queue.put_nowait(None)  # stay ended for any later reader
            raise StopAsyncIteration
        return frame

    def on_attached(self) -> None:
        self._attached = True

    def on_detached(self) -> None:
        # the session does not want audio (e.g. input disabled): drop instead of queueing
        self._attached = False


class WebRTCAudioOutput(io.AudioOutput):
    """AgentSession -> browser speaker. `read_samples()` is called from the
    WebRTC thread at real-time pace; everything else runs on the session loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, *, label: str = "WebRTC speaker",
                 sample_rate: int = WEBRTC_SAMPLE_RATE) -> None:
        super().__init__(label=label, next_in_chain=None, sample_rate=sample_rate,
                         capabilities=io.AudioOutputCapabilities(pause=True))
        self._loop = loop
        self._lock = threading.Lock()
        self._buffer = bytearray()
        self._segment_id = 0
        self._started_segment = -1  # the segment whose playback_started was reported
        self._pushed_duration = 0.0
        self._played_samples = 0  # of the current segment, counted by the reader
        self._paused = False
        self._flush_task: asyncio.Task[None] | None = None
        self._drained = asyncio.Event()
        self._interrupted = asyncio.Event()
        self._resampler: rtc.AudioResampler | None = None
        self.frames_captured = 0
        self.samples_sent = 0  # non-silent samples handed to the WebRTC track
        self.level_dbfs = SILENCE_DBFS
        self.last_capture_at: float | None = None
        self._closed = False

    # --- session side -------------------------------------------------------
    async def capture_frame(self, frame: rtc.AudioFrame) -> None:
        await super().capture_frame(frame)
        if self._flush_task and not self._flush_task.done():
            # the previous segment is still playing out; this one queues behind it
            await self._flush_task
        if self._closed:  # nobody is listening any more: count the segment, keep nothing
            self._pushed_duration += frame.duration
            self._interrupted.set()
            return
        data = self._to_output_rate(frame)
        with self._lock:
            if not self._pushed_duration:
                self._played_samples = 0
            self._pushed_duration += frame.duration
            self._buffer += data
            self._drained.clear()
        self.frames_captured += 1
        self.last_capture_at = time.time()

    def _to_output_rate(self, frame: rtc.AudioFrame) -> bytes:
        mono = np.frombuffer(frame.data, dtype=np.int16)
        if frame.num_channels > 1:
            mono = to_mono_int16(mono, frame.num_channels)
        if frame.sample_rate == self.sample_rate:
            return mono.tobytes()
        if self._resampler is None:
            self._resampler = rtc.AudioResampler(frame.sample_rate, self.sample_rate, num_channels=1,
                                                 quality=rtc.AudioResamplerQuality.MEDIUM)
        out = self._resampler.push(rtc.AudioFrame(mono.tobytes(), frame.sample_rate, 1, len(mono)))
        return b"".join(bytes(f.data) for f in out)

    def flush(self) -> None:
        """The current segment is complete; report it once it has played out."""
        super().flush()
        if self._resampler is not None:
            tail = b"".join(bytes(f.data) for f in self._resampler.flush())
            self._resampler = None
            with self._lock:
                if not self._interrupted.is_set():
                    self._buffer += tail
        if not self._pushed_duration:
            return
        if self._flush_task and not self._flush_task.done():
            log.error("flush called while the previous segment is still playing out")
            self._flush_task.cancel()
        with self._lock:
            if not self._buffer:
                self._drained.set()
        self._flush_task = asyncio.create_task(self._wait_for_playout())

    def clear_buffer(self) -> None:
        """Barge-in: drop everything not yet played, now. The segment is reported
        as interrupted when it is flushed (the session always flushes after clearing)."""
        with self._lock:
            self._buffer.clear()
        if self._pushed_duration:
            self._interrupted.set()

    def close(self) -> None:
        """The browser is gone: drop what is queued and finish every segment at once
        (as interrupted), so the session can close without waiting for a playout."""
        self._closed = True
        with self._lock:
            self._buffer.clear()
            self._drained.set()
        if self._pushed_duration:
            self._interrupted.set()

    def pause(self) -> None:
        super().pause()
        self._paused = True

    def resume(self) -> None:
        super().resume()
        self._paused = False

    async def _wait_for_playout(self) -> None:
        drained = asyncio.ensure_future(self._drained.wait())
        interrupted = asyncio.ensure_future(self._interrupted.wait())
        try:
            await asyncio.wait([drained, interrupted], return_when=asyncio.FIRST_COMPLETED)
        finally:
            drained.cancel()
            interrupted.cancel()
        was_interrupted = self._interrupted.is_set()
        with self._lock:
            played = self._played_samples / self.sample_rate
            if was_interrupted:
                self._buffer.clear()
            self._segment_id += 1
        position = min(played, self._pushed_duration) if was_interrupted else self._pushed_duration
        self._pushed_duration = 0.0
        self._interrupted.clear()
        self.on_playback_finished(playback_position=position, interrupted=was_interrupted)

    # --- WebRTC side (any thread) -------------------------------------------
    def read_samples(self, count: int = WEBRTC_FRAME_SAMPLES) -> np.ndarray:
        """The next `count` mono int16 samples to play; silence when there is nothing."""
        out = np.zeros(count, dtype=np.int16)
        started = drained = False
        with self._lock:
            if self._paused or not self._buffer:
                self.level_dbfs = SILENCE_DBFS
                return out
            available = min(len(self._buffer) // 2, count)
            out[:available] = np.frombuffer(bytes(self._buffer[: available * 2]), dtype=np.int16)
            del self._buffer[: available * 2]
            self._played_samples += available
            self.samples_sent += available
            segment = self._segment_id
            if self._started_segment != segment:
                self._started_segment = segment
                started = True
            drained = not self._buffer
        self.level_dbfs = dbfs(out[:available])
        if started:
            self._call_on_loop(self._report_started, time.time(), segment)
        if drained:
            self._call_on_loop(self._mark_drained, segment)
        return out

    def _call_on_loop(self, callback, *args) -> None:
        try:
            self._loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # session loop closed
            pass

    def _report_started(self, created_at: float, segment: int) -> None:
        if segment == self._segment_id:
            self.on_playback_started(created_at=created_at)

    def _mark_drained(self, segment: int) -> None:
        with self._lock:
            if segment == self._segment_id and not self._buffer:
                self._drained.set()

    @property
    def buffered_seconds(self) -> float:
        with self._lock:
            return len(self._buffer) / 2 / self.sample_rate

    @property
    def playing(self) -> bool:
        with self._lock:
            return bool(self._buffer) and not self._paused


async def play_out_realtime(output: WebRTCAudioOutput, stop: asyncio.Event, *, speed: float = 1.0,
                            sink: list | None = None) -> None:
    """Read `output` the way a WebRTC track does (20 ms every 20 ms / speed),
    for tests and the benchmark where no browser is connected."""
    period = WEBRTC_FRAME_SAMPLES / output.sample_rate / speed
    next_at = time.monotonic()
    while not stop.is_set():
        samples = output.read_samples()
        if sink is not None and samples.any():
            sink.append(samples)
        next_at += period
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))


class PlaybackBuffer:
    """A thread-safe jitter buffer for audio that is already paced by its
    producer (a LiveKit agent's track): frames in at any rate, 48 kHz mono
    samples out through `read_samples()` like `WebRTCAudioOutput`."""

    def __init__(self, sample_rate: int = WEBRTC_SAMPLE_RATE, *, max_seconds: float = 5.0) -> None:
        self.sample_rate = sample_rate
        self._lock = threading.Lock()
        self._buffer = bytearray()
        self._resampler: rtc.AudioResampler | None = None
        self._resampler_rate = 0
        self._max_bytes = int(max_seconds * sample_rate) * 2
        self.samples_sent = 0
        self.level_dbfs = SILENCE_DBFS

    def push(self, frame: rtc.AudioFrame) -> None:
        mono = np.frombuffer(frame.data, dtype=np.int16)
        if frame.num_channels > 1:
            mono = to_mono_int16(mono, frame.num_channels)
        if frame.sample_rate != self.sample_rate:
            if self._resampler is None or self._resampler_rate != frame.sample_rate:
                self._resampler = rtc.AudioResampler(frame.sample_rate, self.sample_rate, num_channels=1)
                self._resampler_rate = frame.sample_rate
            out = self._resampler.push(rtc.AudioFrame(mono.tobytes(), frame.sample_rate, 1, len(mono)))
            data = b"".join(bytes(f.data) for f in out)
        else:
            data = mono.tobytes()
        with self._lock:
            self._buffer += data
            if len(self._buffer) > self._max_bytes:  # the reader stalled: keep the newest audio
                del self._buffer[: len(self._buffer) - self._max_bytes]

    def clear(self) -> None:
        with self._lock:
            self._buffer.clear()

    def read_samples(self, count: int = WEBRTC_FRAME_SAMPLES) -> np.ndarray:
        out = np.zeros(count, dtype=np.int16)
        with self._lock:
            available = min(len(self._buffer) // 2, count)
            if available:
                out[:available] = np.frombuffer(bytes(self._buffer[: available * 2]), dtype=np.int16)
                del self._buffer[: available * 2]
        self.samples_sent += available
        self.level_dbfs = dbfs(out[:available]) if available else SILENCE_DBFS
        return out

    @property
    def buffered_seconds(self) -> float:
        with self._lock:
            return len(self._buffer) / 2 / self.sample_rate
