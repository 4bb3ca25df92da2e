"""Audio shared by the voice adapters: WebRTC's format, levels, and conversion to mono at a given rate.

The WebRTC side (aiortc, run by streamlit-webrtc on its own thread and loop)
delivers microphone frames as 48 kHz interleaved s16, usually stereo, and pulls
20 ms of playback audio every 20 ms. The AgentSession runs on another loop;
agent/voice/mic.py and agent/voice/speaker.py sit between the two.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from livekit import rtc

WEBRTC_SAMPLE_RATE = 48_000
SESSION_INPUT_RATE = 16_000
WHISPER_INPUT_RATE = 16_000
WEBRTC_FRAME_SAMPLES = 960  # 20 ms at 48 kHz
SILENCE_DBFS = -90.0


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


class MonoResampler:
    """One stream of audio in any layout and rate -> mono int16 frames at `rate`.

    Keeps the resampler's state between frames (a stream's pieces must not be
    resampled one by one) and starts a new one if the input rate changes.
    """

    def __init__(self, rate: int, *, quality: rtc.AudioResamplerQuality = rtc.AudioResamplerQuality.MEDIUM) -> None:
        self.rate = rate
        self._quality = quality
        self._resampler: rtc.AudioResampler | None = None
        self._input_rate = 0

    def push_mono(self, mono: np.ndarray, sample_rate: int) -> list[rtc.AudioFrame]:
        frame = rtc.AudioFrame(mono.astype(np.int16, copy=False).tobytes(), sample_rate, 1, len(mono))
        if sample_rate == self.rate:
            return [frame]
        if self._resampler is None or self._input_rate != sample_rate:
            self._resampler = rtc.AudioResampler(sample_rate, self.rate, num_channels=1, quality=self._quality)
            self._input_rate = sample_rate
        return self._resampler.push(frame)

    def push(self, frame: rtc.AudioFrame) -> list[rtc.AudioFrame]:
        mono = np.frombuffer(frame.data, dtype=np.int16)
        if frame.num_channels > 1:
            mono = to_mono_int16(mono, frame.num_channels)
        return self.push_mono(mono, frame.sample_rate)

    def flush(self) -> list[rtc.AudioFrame]:
        """The samples still inside the resampler; the next push starts a new stream."""
        if self._resampler is None:
            return []
        tail = self._resampler.flush()
        self._resampler = None
        return tail


def pcm_bytes(frames: list[rtc.AudioFrame]) -> bytes:
    return b"".join(bytes(frame.data) for frame in frames)


def to_whisper_input(buffer: rtc.AudioFrame | list[rtc.AudioFrame]) -> np.ndarray:
    """Any livekit audio (list of frames or one frame, any rate, mono or
    interleaved multi-channel s16) -> 16 kHz mono float32 in [-1, 1]."""
    frame = rtc.combine_audio_frames(buffer) if isinstance(buffer, list) else buffer
    if frame.samples_per_channel == 0:
        return np.zeros(0, dtype=np.float32)
    if frame.sample_rate == WHISPER_INPUT_RATE and frame.num_channels == 1:
        return np.frombuffer(frame.data, dtype=np.int16).astype(np.float32) / 32768.0
    resampler = MonoResampler(WHISPER_INPUT_RATE, quality=rtc.AudioResamplerQuality.HIGH)
    pcm = pcm_bytes(resampler.push(frame) + resampler.flush())
    return np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768.0
