"""Interim transcripts read a 15 s encoder window (`ShortWindow`), turn-ending decodes the whole 30 s one.

On an AVX2-only 2-core EPYC a 30 s interim decode took 0.9 s alone and 3.4 s beside a speculative decode and
a browser, so a 4 s utterance showed no words while it was said; the short window costs about a third."""

from __future__ import annotations

import numpy as np
import pytest

from agent.voice.last_encoding import SHORT_WINDOW_FRAMES, LastEncoding, ShortWindow, audio_frames
from agent.voice.local_stt import WHISPER_SAMPLE_RATE, LocalWhisperSTT, load_model
from agent.voice.threads import thread_budget
from tests.support.audio import piper_utterance, resample, trim_silence

MEL_BINS, WHOLE_WINDOW = 80, 3000


def padded_segment(voiced_frames: int, *, silent_tail: int = 0) -> np.ndarray:
    """A segment as faster-whisper hands it to the encoder: log-mel frames, then zeros up to 30 s.
    `silent_tail`: frames of the audio that were silence (the log-mel floor, not zeros)."""
    rng = np.random.default_rng(voiced_frames)
    features = np.zeros((MEL_BINS, WHOLE_WINDOW), np.float32)
    features[:, :voiced_frames] = rng.uniform(-0.8, 1.2, (MEL_BINS, voiced_frames))
    features[:, voiced_frames : voiced_frames + silent_tail] = -0.75  # what silence turns into
    return features


class RecordingEncoder:
    def __init__(self) -> None:
        self.widths: list[int] = []

    def __call__(self, features: np.ndarray):
        self.widths.append(features.shape[-1])
        return features.shape[-1]


def test_the_audio_of_a_segment_ends_where_its_zero_padding_begins():
    assert audio_frames(padded_segment(420)) == 420
    assert audio_frames(padded_segment(420, silent_tail=300)) == 720  # silence in the audio is audio
    assert audio_frames(padded_segment(0)) == 0
    assert audio_frames(padded_segment(420)[None]) == 420  # with the batch axis


def test_a_short_utterance_is_encoded_in_the_short_window_a_long_one_in_the_whole():
    inner = RecordingEncoder()
    encode = ShortWindow(inner)
    encode(padded_segment(400))  # 4 s
    encode(padded_segment(SHORT_WINDOW_FRAMES - 150))  # 13.5 s: ends inside the window with its margin
    encode(padded_segment(SHORT_WINDOW_FRAMES - 50))  # 14.5 s: too close to the window's end
    encode(padded_segment(2500))  # 25 s
    encode(np.zeros((MEL_BINS, SHORT_WINDOW_FRAMES), np.float32))  # already no longer than the window
    assert inner.widths == [SHORT_WINDOW_FRAMES, SHORT_WINDOW_FRAMES, WHOLE_WINDOW, WHOLE_WINDOW, SHORT_WINDOW_FRAMES]
    assert encode.shortened == 2


def test_the_encoder_reads_the_first_frames_unchanged():
    seen = []
    encode = ShortWindow(lambda features: seen.append(features.copy()))
    segment = padded_segment(300)
    encode(segment)
    np.testing.assert_array_equal(seen[0], segment[:, :SHORT_WINDOW_FRAMES])


@pytest.mark.slow
async def test_interim_decodes_use_the_short_window_and_turn_decodes_the_whole_one():
    words = "Where is order 1003?"
    pcm = resample(trim_silence(piper_utterance(words, steady=True), 22_050), 22_050, WHISPER_SAMPLE_RATE)
    audio = np.concatenate([np.zeros(WHISPER_SAMPLE_RATE // 2, np.float32), pcm.astype(np.float32) / 32768])
    stt = LocalWhisperSTT()
    stt.prewarm()

    interim_model = load_model(thread_budget().whisper_interim, interim=True)
    turn_model = load_model()
    assert isinstance(interim_model.encode, LastEncoding) and isinstance(interim_model.encode._encode, ShortWindow)
    assert not isinstance(turn_model.encode._encode, ShortWindow)
    assert interim_model is not turn_model

    window = interim_model.encode._encode
    shortened = window.shortened
    interim = await stt.decode(audio, interim=True)
    assert window.shortened == shortened + 1
    final = await stt.decode(audio)
    assert window.shortened == shortened + 1  # the turn's decode did not go through the short window
    # the whole utterance, said clearly: the interim already holds what the final transcript holds
    assert final.text == words
    assert interim.text == final.text, (interim.text, final.text)
    assert stt.speculation.interims == 0  # counted by the stream when shown, not by a decode
    # called directly, on other audio (the same would reuse the last encoding): the interim decodes' model
    direct = stt.transcribe_sync(np.concatenate([np.zeros(1600, np.float32), audio]), interim=True)
    assert window.shortened == shortened + 2 and direct.text == words
