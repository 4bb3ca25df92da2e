"""The streaming side of `LocalWhisperSTT` (agent/voice/local_stt.py): one VAD-segmented utterance at a
time, with a speculative decode at a short pause (committed when the VAD ends the turn, discarded if
speech resumes) and interim decodes while the user speaks."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field

import numpy as np
from livekit import rtc
from livekit.agents import APIConnectionError, stt, utils, vad
from livekit.agents.types import APIConnectOptions
from livekit.agents.utils import shortuuid

from agent.voice.audio import WHISPER_INPUT_RATE as WHISPER_SAMPLE_RATE
from agent.voice.audio import to_whisper_input

log = logging.getLogger(__name__)

# Silero's deactivation threshold (activation 0.5 - 0.15): above it, the user is still speaking
SPEECH_PROBABILITY = 0.35


@dataclass
class SpeculationStats:
    """What happened to the speculative decodes of one STT (all its streams)."""

    started: int = 0
    committed: int = 0  # became the turn's final transcript
    discarded: int = 0  # the user spoke again before the turn ended
    fresh_finals: int = 0  # the turn ended with no usable speculation: decoded after the end of speech
    interims: int = 0
    interims_skipped: int = 0  # a turn-ending decode was waiting in the process
    redecodes: int = 0  # turn decodes unsure enough to be decoded again with a beam
    plain: int = 0  # turn decodes where the decode without the user's words won

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class _Utterance:
    """One VAD speech segment being recognized."""

    frames: list[rtc.AudioFrame]
    silence: float = 0.0  # seconds of silence since the last speech window
    speculation: asyncio.Task | None = None
    speculation_frames: int = 0
    interim: asyncio.Task | None = None
    interim_samples: int = 0  # length of the audio the last interim decode started from
    closed: bool = False
    tasks: list[asyncio.Task] = field(default_factory=list)

    @property
    def samples(self) -> int:
        return sum(f.samples_per_channel for f in self.frames)

    def pcm(self, frames: int | None = None) -> np.ndarray:
        return to_whisper_input(list(self.frames[:frames] if frames is not None else self.frames))


class SpeculativeRecognizeStream(stt.RecognizeStream):
    """VAD-segmented Whisper recognition with interim and speculative decodes (see the module doc)."""

    def __init__(self, *, stt: stt.STT, vad: vad.VAD, conn_options: APIConnectOptions) -> None:
        super().__init__(stt=stt, conn_options=conn_options)
        self._whisper = stt
        self._vad = vad
        self._finishing: asyncio.Task | None = None

    async def _run(self) -> None:
        vad_stream = self._vad.stream()

        async def forward_input() -> None:
            async for item in self._input_ch:
                if isinstance(item, self._FlushSentinel):
                    vad_stream.flush()
                    continue
                vad_stream.push_frame(item)
            vad_stream.end_input()

        async def follow_vad() -> None:
            utterance: _Utterance | None = None
            async for event in vad_stream:
                if event.type == vad.VADEventType.START_OF_SPEECH:
                    utterance = _Utterance(frames=list(event.frames))
                    self._event_ch.send_nowait(stt.SpeechEvent(stt.SpeechEventType.START_OF_SPEECH))
                elif event.type == vad.VADEventType.INFERENCE_DONE and utterance is not None:
                    utterance.frames.extend(event.frames)
                    self._on_window(utterance, event)
                elif event.type == vad.VADEventType.END_OF_SPEECH and utterance is not None:
                    speech_end_time = time.time() - event.silence_duration - event.inference_duration
                    self._event_ch.send_nowait(
                        stt.SpeechEvent(stt.SpeechEventType.END_OF_SPEECH, speech_end_time=speech_end_time)
                    )
                    utterance.closed = True
                    previous = self._finishing
                    self._finishing = asyncio.create_task(
                        self._finish(utterance, list(event.frames), speech_end_time, previous)
                    )
                    utterance = None
            if self._finishing is not None:
                await self._finishing

        tasks = [asyncio.create_task(forward_input()), asyncio.create_task(follow_vad())]
        try:
            await asyncio.gather(*tasks)
        finally:
            await utils.aio.cancel_and_wait(*tasks)
            if self._finishing is not None:
                await utils.aio.cancel_and_wait(self._finishing)
            await vad_stream.aclose()

    def _on_window(self, utterance: _Utterance, event: vad.VADEvent) -> None:
        """One VAD window (~32 ms) inside an utterance: speculate, discard, or refresh the interim."""
        window = sum(f.samples_per_channel for f in event.frames) / max(1, event.frames[0].sample_rate)
        stats = self._whisper.speculation
        if event.probability >= SPEECH_PROBABILITY:
            utterance.silence = 0.0
            if utterance.speculation is not None:  # the user went on: what was decoded is not the turn
                utterance.speculation.cancel()
                utterance.speculation = None
                stats.discarded += 1
            self._maybe_interim(utterance)
            return
        utterance.silence += window
        if utterance.speculation is None and utterance.silence >= self._whisper.speculate_after:
            utterance.speculation_frames = len(utterance.frames)
            utterance.speculation = asyncio.create_task(self._whisper.decode(utterance.pcm()))
            utterance.speculation.add_done_callback(lambda task: self._speculated(utterance, task))
            stats.started += 1

    def _speculated(self, utterance: _Utterance, task: asyncio.Task) -> None:
        """A speculative decode ended: if the user has not gone on since, tell who wants the words early."""
        hook = self._whisper.on_speculative_transcript
        if hook is None or task.cancelled() or task.exception() is not None or utterance.speculation is not task:
            return
        text = task.result().text.strip()
        if text:
            try:
                hook(text)
            except Exception:  # the early start is an optimisation: the turn still gets its transcript
                log.exception("the speculative transcript's listener failed")

    def _maybe_interim(self, utterance: _Utterance) -> None:
        every = self._whisper.interim_every
        if every is None or (utterance.interim is not None and not utterance.interim.done()):
            return
        if utterance.samples - utterance.interim_samples < every * WHISPER_SAMPLE_RATE:
            return
        # a turn is waiting for its transcript somewhere in the process: it goes first
        if self._whisper.turn_decodes_pending() > 0:
            self._whisper.speculation.interims_skipped += 1
            return
        utterance.interim_samples = utterance.samples
        utterance.interim = asyncio.create_task(self._interim(utterance, utterance.pcm()))

    async def _interim(self, utterance: _Utterance, pcm: np.ndarray) -> None:
        try:
            result = await self._whisper.decode(pcm, interim=True)
        except APIConnectionError as exc:
            log.warning("interim transcript failed: %s", exc)
            return
        if utterance.closed or not result.text:
            return  # the final transcript is on its way (or there was nothing to say yet)
        self._whisper.speculation.interims += 1
        self._event_ch.send_nowait(
            stt.SpeechEvent(
                type=stt.SpeechEventType.INTERIM_TRANSCRIPT,
                request_id=shortuuid("whisper_"),
                alternatives=[self._whisper.speech_data(result)],
            )
        )

    async def _finish(
        self,
        utterance: _Utterance,
        frames: list[rtc.AudioFrame],
        speech_end_time: float,
        previous: asyncio.Task | None,
    ) -> None:
        """The turn's final transcript: the speculation if it still holds, else a decode now."""
        if utterance.interim is not None:
            utterance.interim.cancel()
        result = None
        if utterance.speculation is not None:
            try:
                result = await utterance.speculation
                self._whisper.speculation.committed += 1
            except APIConnectionError as exc:
                log.warning("speculative transcript failed (%s); decoding again", exc)
        if result is None:
            self._whisper.speculation.fresh_finals += 1
            result = await self._whisper.decode(to_whisper_input(frames))
        if previous is not None:  # finals go out in the order they were spoken
            with contextlib.suppress(Exception):
                await previous
        request_id = shortuuid("whisper_")
        self._whisper.report_decode(result, request_id)
        if not result.text:
            return
        self._event_ch.send_nowait(
            stt.SpeechEvent(
                type=stt.SpeechEventType.FINAL_TRANSCRIPT,
                request_id=request_id,
                alternatives=[self._whisper.speech_data(result)],
                speech_end_time=speech_end_time,
            )
        )
