"""Browser microphone -> AgentSession: :class:`WebRTCAudioInput`, an ``io.AudioInput``.

`push_frame()` is called from the WebRTC thread; it downmixes to mono,
resamples to 16 kHz (what Silero VAD and Whisper use, so neither resamples
again) and hands the frame to the session loop. It also keeps a smoothed
microphone level for the page's meter.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import numpy as np
from livekit import rtc
from livekit.agents.voice import io

from agent.voice.audio import SESSION_INPUT_RATE, SILENCE_DBFS, WEBRTC_SAMPLE_RATE, MonoResampler, dbfs, to_mono_int16

# frames waiting for the session loop beyond this are stale (the loop is stuck); drop them
MAX_PENDING_INPUT_SECONDS = 10.0


class WebRTCAudioInput(io.AudioInput):
    """Browser microphone -> AgentSession. Thread-safe `push_frame`."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        label: str = "WebRTC microphone",
        output_rate: int = SESSION_INPUT_RATE,
        attached: bool = True,
    ) -> None:
        """`attached=False` drops audio (still metering it) until a session attaches the input."""
        super().__init__(label=label)
        self._loop = loop
        self._queue: asyncio.Queue[rtc.AudioFrame | None] = asyncio.Queue()
        self._resampler = MonoResampler(output_rate)
        self._push_lock = threading.Lock()
        self._attached = attached
        self._closed = False
        self._max_pending = int(MAX_PENDING_INPUT_SECONDS * 50)
        self.level_dbfs = SILENCE_DBFS  # smoothed, for the meter
        self.frames_received = 0
        self.seconds_received = 0.0  # of microphone audio, what the Voice page says it heard
        self.frames_dropped = 0

    # --- producer side (any thread) -----------------------------------------
    def push_frame(self, data: Any, *, sample_rate: int = WEBRTC_SAMPLE_RATE, num_channels: int = 1) -> None:
        """One chunk of microphone audio: interleaved s16 (bytes or int16 array)."""
        if self._closed:
            return
        mono = to_mono_int16(data, num_channels)
        with self._push_lock:
            self._update_level(mono)
            self.frames_received += 1
            self.seconds_received += mono.size / sample_rate
            if not self._attached or mono.size == 0:
                return
            frames = self._resampler.push_mono(mono, sample_rate)
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

    def _update_level(self, mono: np.ndarray) -> None:
        level = dbfs(mono)
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
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._queue.put_nowait, None)

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
