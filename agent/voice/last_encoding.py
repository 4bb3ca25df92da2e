"""Wrappers of a Whisper model's encoder (faster-whisper calls `model.encode(segment)` once per decode).

`LastEncoding`: the encoder output for the last audio it read, so a second decode of the same audio (the beam
re-decode of an unsure turn, agent/voice/local_stt.py) pays only for the decoder.

`ShortWindow`: the encoder reads the audio's frames in a shorter window than Whisper's 30 s, for interim
transcripts only. The encoder is most of a decode's time on a CPU and does not depend on how much was said,
so every interim decode cost as much as a turn's: ~0.9 s on one thread of an AVX2-only EPYC, 3.4 s there
while a speculative decode and a browser shared the two cores, which left a 4 s utterance with no interim
at all. A 15 s window cost a third of that; an interim is replaced by the turn's own 30 s decode, so the
window's lower accuracy on generic speech (docs/VOICE.md) is never what the transcript keeps.
"""

from __future__ import annotations

import threading

import numpy as np

SHORT_WINDOW_FRAMES = 1_500  # 15 s of 10 ms mel frames
# frames of padding kept after the last word: the encoder reads the audio's end, not a cut
SHORT_WINDOW_MARGIN_FRAMES = 100


class LastEncoding:
    """A Whisper model's `encode`, remembering its last input and output: decoding the same audio again
    (the beam re-decode of an unsure turn) reuses the encoder's work, most of a decode's time on a CPU
    (about 350 of 450 ms on two cores here), and pays only for the decoder."""

    def __init__(self, encode) -> None:
        self._encode = encode
        self._lock = threading.Lock()
        self._last: tuple[np.ndarray, object] | None = None
        self.reused = 0

    def __call__(self, features: np.ndarray):
        with self._lock:
            last = self._last
            if last is not None and last[0].shape == features.shape and np.array_equal(last[0], features):
                self.reused += 1
                return last[1]
        output = self._encode(features)
        with self._lock:
            self._last = (features.copy(), output)
        return output


def audio_frames(features: np.ndarray) -> int:
    """Frames of a segment that hold audio: faster-whisper pads a segment to 30 s with zeros, and a frame of
    real log-mel features (silence included) is never all zeros."""
    voiced = np.flatnonzero(np.any(features.reshape(-1, features.shape[-1]) != 0.0, axis=0))
    return int(voiced[-1]) + 1 if voiced.size else 0


class ShortWindow:
    """`encode` over the first `frames` of a padded segment when its audio ends well inside them (the whole
    30 s window otherwise, so nothing said is cut off)."""

    def __init__(self, encode, frames: int = SHORT_WINDOW_FRAMES, margin: int = SHORT_WINDOW_MARGIN_FRAMES) -> None:
        self._encode = encode
        self.frames = frames
        self.margin = margin
        self.shortened = 0

    def __call__(self, features: np.ndarray):
        if features.shape[-1] > self.frames and audio_frames(features) + self.margin <= self.frames:
            self.shortened += 1
            return self._encode(features[..., : self.frames])
        return self._encode(features)
