"""AgentSession -> browser speaker.

:class:`WebRTCAudioOutput` (an ``io.AudioOutput``): the session captures agent
audio into a thread-safe 48 kHz mono buffer; `read_samples()` is called by the
WebRTC track at real-time pace. It follows livekit's console output contract:
`playback_started` when the first sample of a segment is actually sent,
`playback_finished` once a flushed segment has been fully read, or immediately
with `interrupted=True` when `clear_buffer()` is called (barge-in), and
`pause()`/`resume()` send silence without losing audio.

:class:`PlaybackBuffer` does the same for audio a producer already paces (the
agent's track in a LiveKit room).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time

import numpy as np
from livekit import rtc
from livekit.agents.voice import io

from agent.voice.audio import SILENCE_DBFS, WEBRTC_FRAME_SAMPLES, WEBRTC_SAMPLE_RATE, MonoResampler, dbfs, pcm_bytes

log = logging.getLogger(__name__)


class WebRTCAudioOutput(io.AudioOutput):
    """AgentSession -> browser speaker. `read_samples()` is called from the
    WebRTC thread at real-time pace; everything else runs on the session loop."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, *, label: str = "WebRTC speaker", sample_rate: int = WEBRTC_SAMPLE_RATE
    ) -> None:
        super().__init__(
            label=label,
            next_in_chain=None,
            sample_rate=sample_rate,
            capabilities=io.AudioOutputCapabilities(pause=True),
        )
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
        self._resampler = MonoResampler(sample_rate)
        self.frames_captured = 0
        self.samples_sent = 0  # non-silent samples handed to the WebRTC track
        self.level_dbfs = SILENCE_DBFS
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
        data = pcm_bytes(self._resampler.push(frame))
        with self._lock:
            if not self._pushed_duration:
                self._played_samples = 0
            self._pushed_duration += frame.duration
            self._buffer += data
            self._drained.clear()
        self.frames_captured += 1

    def flush(self) -> None:
        """The current segment is complete; report it once it has played out."""
        super().flush()
        tail = pcm_bytes(self._resampler.flush())
        if tail:
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
        with contextlib.suppress(RuntimeError):  # the session loop is closed: nobody is waiting any more
            self._loop.call_soon_threadsafe(callback, *args)

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


class PlaybackBuffer:
    """A thread-safe jitter buffer for audio that is already paced by its
    producer (a LiveKit agent's track): frames in at any rate, 48 kHz mono
    samples out through `read_samples()` like `WebRTCAudioOutput`."""

    def __init__(self, sample_rate: int = WEBRTC_SAMPLE_RATE, *, max_seconds: float = 5.0) -> None:
        self.sample_rate = sample_rate
        self._lock = threading.Lock()
        self._buffer = bytearray()
        self._resampler = MonoResampler(sample_rate)
        self._max_bytes = int(max_seconds * sample_rate) * 2
        self.samples_sent = 0
        self.level_dbfs = SILENCE_DBFS

    def push(self, frame: rtc.AudioFrame) -> None:
        data = pcm_bytes(self._resampler.push(frame))
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
