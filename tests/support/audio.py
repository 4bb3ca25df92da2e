"""Audio for the voice tests and the benchmark: Piper-recorded utterances, converted the way a
browser's WebRTC track would deliver them, and a fake browser that talks to a voice call in real time."""

from __future__ import annotations

import functools
import io
import threading
import time
import wave
from pathlib import Path

import numpy as np
from livekit import rtc

from agent.voice.audio import MonoResampler, pcm_bytes
from agent.voice.local_tts import synthesize_pcm

# What the fake browser counts as agent audio: a 20 ms read with a sample above -40 dBFS. Near-silence (a
# synthesizer's lead-in, a resampler's ringing) is not heard, so it does not count as the agent speaking.
HEARD_PEAK = 300

WEBRTC_RATE = 48_000
WEBRTC_FRAME_SAMPLES = 960  # 20 ms, what aiortc's Opus decoder produces


@functools.lru_cache(maxsize=32)
def piper_utterance(text: str, length_scale: float = 1.0, *, steady: bool = False) -> np.ndarray:
    """`text` spoken by the offline Piper voice: 22050 Hz mono int16 (`steady`: the same audio every run)."""
    return synthesize_pcm(text, length_scale=length_scale, steady=steady)


def resample(pcm: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    if from_rate == to_rate:
        return pcm
    resampler = MonoResampler(to_rate, quality=rtc.AudioResamplerQuality.HIGH)
    frames = resampler.push_mono(pcm, from_rate) + resampler.flush()
    return np.frombuffer(pcm_bytes(frames), dtype=np.int16)


def webrtc_frames(
    pcm: np.ndarray, rate: int, *, channels: int = 2, lead_silence: float = 0.3, tail_silence: float = 1.2
) -> list[tuple[bytes, int]]:
    """Mono PCM -> 20 ms chunks of 48 kHz interleaved s16 (stereo by default),
    padded with silence before and after, as (bytes, samples_per_channel)."""
    audio = resample(pcm, rate, WEBRTC_RATE)
    audio = np.concatenate(
        [
            np.zeros(int(lead_silence * WEBRTC_RATE), np.int16),
            audio,
            np.zeros(int(tail_silence * WEBRTC_RATE), np.int16),
        ]
    )
    pad = (-len(audio)) % WEBRTC_FRAME_SAMPLES
    audio = np.concatenate([audio, np.zeros(pad, np.int16)])
    out = []
    for start in range(0, len(audio), WEBRTC_FRAME_SAMPLES):
        chunk = audio[start : start + WEBRTC_FRAME_SAMPLES]
        interleaved = np.repeat(chunk, channels) if channels > 1 else chunk
        out.append((interleaved.astype(np.int16).tobytes(), WEBRTC_FRAME_SAMPLES))
    return out


def write_wav(path: Path, pcm: np.ndarray, rate: int, *, lead_silence: float = 0.0, tail_silence: float = 0.0) -> Path:
    audio = np.concatenate(
        [
            np.zeros(int(lead_silence * rate), np.int16),
            pcm.astype(np.int16),
            np.zeros(int(tail_silence * rate), np.int16),
        ]
    )
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(audio.tobytes())
    return path


def wav_bytes(pcm: np.ndarray, rate: int) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(pcm.astype(np.int16).tobytes())
    return buffer.getvalue()


def rms(pcm: np.ndarray) -> float:
    return float(np.sqrt(np.mean(pcm.astype(np.float64) ** 2))) if len(pcm) else 0.0


class FakeBrowser:
    """Plays the part of the browser's WebRTC track for a voice call, in real
    time: one thread sends microphone frames (48 kHz stereo s16, 20 ms) and one
    reads 20 ms of agent audio every 20 ms, noting when sound came back."""

    def __init__(self, call, *, speed: float = 1.0) -> None:
        self.call = call
        self.period = 0.02 / speed
        self.stop_event = threading.Event()
        self.queue: list[tuple[bytes, int]] = []
        self.queue_lock = threading.Lock()
        self.sound_at: list[float] = []  # monotonic time of each audible 20 ms read (HEARD_PEAK)
        self.speech_ended_at: list[float] = []  # monotonic time the last speech frame of each utterance was sent
        self.speech_started_at: list[float] = []  # monotonic time the first speech frame of each utterance was sent
        self.sent_frames = 0
        self._threads = [
            threading.Thread(target=self._mic, daemon=True, name="fake-browser-mic"),
            threading.Thread(target=self._speaker, daemon=True, name="fake-browser-speaker"),
        ]

    def __enter__(self):
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_event.set()
        for thread in self._threads:
            thread.join(timeout=5)

    def say(self, pcm: np.ndarray, rate: int, *, lead_silence: float = 0.3, tail_silence: float = 1.5) -> None:
        frames = webrtc_frames(pcm, rate, lead_silence=lead_silence, tail_silence=tail_silence)
        speech_frames = len(frames) - int(tail_silence / 0.02)
        first_speech = int(lead_silence / 0.02)
        with self.queue_lock:
            for index, frame in enumerate(frames):
                marker = 1 if index == speech_frames - 1 else (2 if index == first_speech else 0)
                self.queue.append((frame[0], marker))

    def wait_until_said(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.queue_lock:
                if not self.queue:
                    return
            time.sleep(0.02)
        raise TimeoutError("the fake browser did not finish speaking")

    def _mic(self) -> None:
        silence = np.zeros(WEBRTC_FRAME_SAMPLES * 2, np.int16).tobytes()
        next_at = time.monotonic()
        while not self.stop_event.is_set():
            with self.queue_lock:
                data, marker = self.queue.pop(0) if self.queue else (silence, 0)
            self.call.mic.push_frame(data, sample_rate=WEBRTC_RATE, num_channels=2)
            self.sent_frames += 1
            if marker == 1:
                self.speech_ended_at.append(time.monotonic())
            elif marker == 2:
                self.speech_started_at.append(time.monotonic())
            next_at += self.period
            time.sleep(max(0.0, next_at - time.monotonic()))

    def _speaker(self) -> None:
        next_at = time.monotonic()
        while not self.stop_event.is_set():
            samples = self.call.read_samples(WEBRTC_FRAME_SAMPLES)
            if samples.size and int(np.abs(samples.astype(np.int32)).max()) > HEARD_PEAK:
                self.sound_at.append(time.monotonic())
            next_at += self.period
            time.sleep(max(0.0, next_at - time.monotonic()))

    def first_sound_after(self, moment: float) -> float | None:
        return next((t for t in self.sound_at if t > moment), None)

    def sound_stopped_after(self, moment: float, *, gap: float = 0.2) -> float | None:
        """The last agent sound read after `moment` before a silence of `gap` seconds (None: still talking)."""
        last = None
        for t in self.sound_at:
            if t <= moment:
                last = t
                continue
            if last is not None and t - last >= gap:
                return last
            last = t
        return last if last is not None and time.monotonic() - last >= gap else None


def trim_silence(pcm: np.ndarray, rate: int, *, threshold: int = 300, margin: float = 0.02) -> np.ndarray:
    """`pcm` without the near-silence the synthesizer puts before and after the words (keeps `margin` s)."""
    loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) > threshold)
    if loud.size == 0:
        return pcm[:0]
    keep = int(margin * rate)
    return pcm[max(0, loud[0] - keep) : loud[-1] + keep]
