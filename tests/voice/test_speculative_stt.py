"""Whisper streaming over the VAD with the real models (Silero, Whisper tiny.en, Piper voices):
a speculative decode at a short pause becomes the final transcript when the turn ends, is thrown
away when the user goes on speaking, and interim transcripts appear while the user speaks but
never take the CPU from a turn that is waiting for its transcript. Also: each stage gets its
thread budget, and Whisper's prompt carries the user's words within Whisper's limit."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest
from livekit import rtc
from livekit.agents import stt as lk_stt

from agent.voice import local_stt, local_tts, threads
from agent.voice.local_call import shared_vad
from agent.voice.local_stt import (
    PROMPT_TOKEN_LIMIT,
    STYLE_PROMPT,
    WHISPER_SAMPLE_RATE,
    LocalWhisperSTT,
    build_prompt,
    turn_decodes_pending,
)
from tests.support.audio import piper_utterance, resample, trim_silence

pytestmark = pytest.mark.slow

FRAME = WHISPER_SAMPLE_RATE // 50  # 20 ms
Kind = lk_stt.SpeechEventType


def speech(text: str) -> np.ndarray:
    """`text` in the Piper voice at 16 kHz, without the silence around the words."""
    return resample(trim_silence(piper_utterance(text), 22_050), 22_050, WHISPER_SAMPLE_RATE)


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * WHISPER_SAMPLE_RATE), np.int16)


async def recognize(stt: LocalWhisperSTT, pcm: np.ndarray, *, realtime: bool = False):
    """Push `pcm` (then 1 s of silence) through a stream; every event with its arrival time."""
    stream = stt.stream()
    received: list[tuple[float, lk_stt.SpeechEvent]] = []

    async def read() -> None:
        async for event in stream:
            received.append((time.monotonic(), event))

    reader = asyncio.create_task(read())
    audio = np.concatenate([silence(0.3), pcm, silence(1.0)])
    for start in range(0, len(audio) - FRAME + 1, FRAME):
        chunk = audio[start : start + FRAME]
        stream.push_frame(rtc.AudioFrame(chunk.tobytes(), WHISPER_SAMPLE_RATE, 1, FRAME))
        await asyncio.sleep(0.02 if realtime else 0)
    stream.end_input()
    await asyncio.wait_for(reader, timeout=120)
    return [event for _, event in received]


def kinds(events) -> list[Kind]:
    return [e.type for e in events if e.type != Kind.RECOGNITION_USAGE]


def finals(events) -> list[str]:
    return [e.alternatives[0].text for e in events if e.type == Kind.FINAL_TRANSCRIPT]


@pytest.fixture(scope="module")
def vad():
    return shared_vad()


async def test_speculation_is_discarded_when_the_user_goes_on_after_a_pause(vad):
    stt = LocalWhisperSTT(vad=vad, interim_every=None)
    told: list[str] = []
    stt.on_speculative_transcript = told.append
    pcm = np.concatenate([speech("I live in"), silence(0.3), speech("Albuquerque.")])
    events = await recognize(stt, pcm)

    # one turn, not two: the pause did not end it, and the final transcript has both halves
    assert kinds(events) == [Kind.START_OF_SPEECH, Kind.END_OF_SPEECH, Kind.FINAL_TRANSCRIPT]
    [text] = finals(events)
    assert "live" in text.lower() and "albuquerque" in text.lower(), text
    # the decode started at the pause was thrown away; the one at the end became the transcript
    stats = stt.speculation
    assert stats.discarded >= 1 and stats.started == stats.discarded + 1
    assert stats.committed == 1 and stats.fresh_finals == 0
    # whoever starts work early on a speculative transcript was last told the one that held
    assert told and told[-1] == text


async def test_speculation_becomes_the_final_transcript_when_the_turn_ends(vad):
    stt = LocalWhisperSTT(vad=vad, interim_every=None)
    told: list[str] = []
    stt.on_speculative_transcript = told.append  # the call starts the turn's recall with it
    events = await recognize(stt, speech("Where is order 1003?"))
    assert kinds(events) == [Kind.START_OF_SPEECH, Kind.END_OF_SPEECH, Kind.FINAL_TRANSCRIPT]
    assert finals(events) == ["Where is order 1003?"] == told
    final = next(e for e in events if e.type == Kind.FINAL_TRANSCRIPT)
    assert final.speech_end_time is not None and final.speech_end_time <= time.time()
    assert stt.speculation.committed == 1 and stt.speculation.fresh_finals == 0


async def test_without_speculation_the_turn_is_decoded_after_it_ends(vad):
    stt = LocalWhisperSTT(vad=vad, interim_every=None, speculate_after=10.0)  # never a long enough pause
    events = await recognize(stt, speech("Where is order 1003?"))
    assert finals(events) == ["Where is order 1003?"]
    assert stt.speculation.started == 0 and stt.speculation.fresh_finals == 1


async def test_interim_transcripts_arrive_while_the_user_speaks(vad):
    stt = LocalWhisperSTT(vad=vad)
    stt.prewarm()
    events = await recognize(stt, speech("Hi, it is me again, and my favorite color is teal."), realtime=True)
    order = kinds(events)
    interims = [e.alternatives[0].text for e in events if e.type == Kind.INTERIM_TRANSCRIPT]
    assert interims and all(interims), order
    # all of them before the turn ended, then the final one
    assert order.index(Kind.END_OF_SPEECH) > max(i for i, k in enumerate(order) if k == Kind.INTERIM_TRANSCRIPT)
    [text] = finals(events)
    assert "teal" in text.lower()
    assert interims[0].split()[0].lower().strip(",.") in text.lower()  # a partial of the same words
    assert stt.speculation.interims == len(interims)


async def test_interim_decodes_wait_while_a_turn_is_waiting_for_its_transcript(vad):
    busy = LocalWhisperSTT()  # another call's turn-ending decodes, back to back
    hog_audio = speech("Remember that I am allergic to nuts.").astype(np.float32) / 32768
    stop = asyncio.Event()

    async def keep_busy() -> None:
        # the next decode starts in the same step as the last one ends: no moment without one pending
        while not stop.is_set():
            await busy.decode(hog_audio)

    hog = asyncio.create_task(keep_busy())
    await asyncio.sleep(0)
    assert turn_decodes_pending() == 1
    stt = LocalWhisperSTT(vad=vad)
    stt.prewarm()
    events = await recognize(stt, speech("Hi, it is me again, and my favorite color is teal."), realtime=True)
    stop.set()
    await hog
    assert Kind.INTERIM_TRANSCRIPT not in kinds(events)
    assert stt.speculation.interims == 0 and stt.speculation.interims_skipped >= 1
    assert "teal" in finals(events)[0].lower()  # the turn itself is still transcribed


def test_each_stage_gets_its_thread_budget(monkeypatch):
    budget = threads.thread_budget(2)
    assert (budget.whisper, budget.whisper_interim, budget.piper, budget.torch, budget.silero) == (2, 1, 2, 1, 1)
    assert threads.thread_budget(8).whisper == 4  # more cores: more for the critical path
    monkeypatch.setenv("VOICE_CPU_CORES", "2")
    assert threads.thread_budget() == budget

    # what the libraries were actually given
    import ctranslate2
    import torch

    threads.apply_process_budget(budget)
    assert torch.get_num_threads() == budget.torch
    seen = []  # a thread that starts torch work afterwards (the embedding workers) gets the budget too
    worker = threading.Thread(
        target=lambda: (torch.ones(64, 64) @ torch.ones(64, 64), seen.append(torch.get_num_threads()))
    )
    worker.start()
    worker.join()
    assert seen == [budget.torch]

    created = []
    original = ctranslate2.models.Whisper

    def recording(*args, **kwargs):
        created.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(ctranslate2.models, "Whisper", recording)
    monkeypatch.setattr(local_stt, "_models", {})
    LocalWhisperSTT(vad=object(), interim_every=1.0).prewarm()
    assert sorted(k["intra_threads"] for k in created) == sorted([budget.whisper, budget.whisper_interim])
    assert all(k["inter_threads"] == 1 for k in created)  # one decode at a time per model

    monkeypatch.setattr(local_tts, "_voice", None)
    voice = local_tts.load_voice()
    options = voice.session.get_session_options()
    assert options.intra_op_num_threads == budget.piper and options.inter_op_num_threads == 1
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_the_prompt_keeps_the_most_important_words_within_whispers_limit():
    local_stt.load_model()
    tokenizer = next(iter(local_stt._models.values())).hf_tokenizer
    many = [f"Product number {i} deluxe edition" for i in range(200)] + ["Ridgeline Ethiopia", "Siobhan Okafor"]
    prompt = build_prompt(many)
    assert len(tokenizer.encode(" " + prompt, add_special_tokens=False).ids) <= PROMPT_TOKEN_LIMIT
    assert prompt.startswith(STYLE_PROMPT) and prompt.endswith("Ridgeline Ethiopia, Siobhan Okafor.")
    assert "Product number 0 " not in prompt  # the least important were left out
    assert build_prompt(["Pretzel", "Pretzel", " "]) == f"{STYLE_PROMPT} Pretzel."

    stt = LocalWhisperSTT()
    stt.set_vocabulary(["Thibault"])
    assert stt.prompt.endswith("Thibault.")
    stt.set_vocabulary([])
    assert stt.prompt == STYLE_PROMPT


def test_the_vocabulary_also_respells_what_whisper_heard():
    stt = LocalWhisperSTT()
    assert stt.respell("My partner Thibbalt asked about order 108.") == "My partner Thibbalt asked about order 108."
    stt.set_vocabulary(["1008", "Thibault"])
    assert stt.respell("My partner Thibbalt asked about order 108.") == "My partner Thibault asked about order 1008."
    stt.set_vocabulary([])  # the user deleted everything: nothing is respelled toward old words
    assert stt.respell("My partner Thibbalt asked about order 108.") == "My partner Thibbalt asked about order 108."

    prompt_only = LocalWhisperSTT(respell=False)
    prompt_only.set_vocabulary(["1008", "Thibault"])
    assert prompt_only.prompt.endswith("1008, Thibault.")
    assert prompt_only.respell("order 108") == "order 108"
