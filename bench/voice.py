"""End of user speech -> first agent audio, in the offline voice pipeline.

A fake browser (tests/support/audio.FakeBrowser) plays Piper-recorded
utterances into a LocalVoiceCall in real time, as 48 kHz stereo 20 ms frames,
and reads the agent's audio back every 20 ms like a WebRTC track. For each
turn it notes when the last speech frame was sent (the synthesizer's silence
around the words is trimmed, so that is the end of the last word) and when the
first audible agent frame came back (a sample above -40 dBFS). The session's own per-turn metrics say
where the time went.

In the same run:
- utterances with a pause in the middle (shorter than the end-of-turn silence)
  count false cut-offs: a turn committed at the pause, before the rest was said;
- barge-in: the user starts speaking over a long answer; the time from the first
  speech frame to the agent's last audible frame;
- Whisper alone: the same recordings decoded directly by the same model, prompt
  and thread count, so the pipeline's STT figure can be read as a ratio.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agent import (
    WHISPER_SAMPLE_RATE,
    LocalWhisperSTT,
    end_call,
    open_call,
    per_turn_latency,
    prewarm_voice,
    spoken_pieces_reused,
    voice_thread_budget,
)
from core import identity
from core.db import admin_connection
from tests.support.audio import FakeBrowser, piper_utterance, resample, trim_silence
from tests.support.events import wait_for_event

PIPER_RATE = 22_050
UTTERANCES = [
    "My favorite color is teal.",
    "What is my favorite color?",
    "I live in Denver.",
    "Where do I live?",
    "Where is order 1001?",
    "Remember that I am allergic to nuts.",
    "What do you know about me?",
    "How long does shipping take?",
    "Call me Sam.",
    "Forget my favorite color.",
]
# (words, pause in seconds, the rest): a hesitation shorter than the end-of-turn silence
PAUSED = [
    ("I live in", 0.25, "Albuquerque, New Mexico."),
    ("Where is", 0.30, "order 1003?"),
    ("My favorite color", 0.30, "is sage green."),
    ("How long does", 0.25, "shipping take?"),
    ("Remember that I am allergic", 0.30, "to hazelnuts."),
    ("Call me", 0.30, "Siobhan."),
]
BARGE_IN_PROMPT = "What do you know about me?"
BARGE_IN_WORDS = "Wait, stop, that is enough."


@dataclass
class VoiceTurn:
    text: str
    heard: str | None = None
    turn: int | None = None
    e2e_ms: float | None = None  # browser: last speech frame sent -> first agent audio read
    metrics: dict[str, float] = field(default_factory=dict)
    tools: list[str] = field(default_factory=list)
    tools_ms: float = 0.0
    pause: float | None = None  # a paused utterance: the pause inside it
    finals: int = 0  # user turns committed for this utterance (more than 1: cut off at the pause)
    kept_pieces: int = 0  # pieces of the reply whose audio was kept from an earlier reply (not synthesised)


def _wait(call, predicate, cursor: int, timeout: float):
    """The matching event, or None when the turn never produced one (the benchmark skips it)."""
    try:
        return wait_for_event(call, predicate, cursor=cursor, timeout=timeout)
    except TimeoutError:
        return None


def _wait_quiet(call, timeout: float = 30.0) -> None:
    """Until the agent has finished talking (state listening, nothing left to play)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if call.agent_state == "listening" and call.speaker.buffered_seconds == 0:
            return
        time.sleep(0.05)


def spoken(text: str) -> np.ndarray:
    """`text` in the Piper voice without the silence around the words (22050 Hz int16)."""
    return trim_silence(piper_utterance(text), PIPER_RATE)


def with_pause(first: str, pause: float, rest: str) -> np.ndarray:
    return np.concatenate([spoken(first), np.zeros(int(pause * PIPER_RATE), np.int16), spoken(rest)])


def _user_finals(call, cursor: int) -> list[dict]:
    return [
        e for e in call.events_since(cursor)[0] if e["type"] == "transcript" and e["role"] == "user" and e.get("final")
    ]


def say_and_measure(call, browser: FakeBrowser, text: str, pcm: np.ndarray, log, *, pause: float | None = None):
    record = VoiceTurn(text=text, pause=pause)
    cursor = call.events_since(0)[1]
    kept_before = spoken_pieces_reused()
    browser.say(pcm, PIPER_RATE, lead_silence=0.2, tail_silence=0.0)
    said = _wait(
        call, lambda e: e["type"] == "transcript" and e["role"] == "user" and e.get("final"), cursor, timeout=30
    )
    if said is None:
        log(f"voice: no transcript for {text!r} (skipped)")
        _wait_quiet(call)
        return record
    record.heard, record.turn = said["text"], said["turn"]
    _wait(call, lambda e, turn=record.turn: e["type"] == "turn_done" and e["turn"] == turn, cursor, 60)
    _wait_quiet(call)
    time.sleep(0.3)  # a second turn committed at a pause would show up by now
    _wait_quiet(call)
    finals = _user_finals(call, cursor)
    record.finals = len(finals)
    record.kept_pieces = spoken_pieces_reused() - kept_before
    if len(finals) > 1:
        record.heard = " | ".join(e["text"] for e in finals)
    speech_end = browser.speech_ended_at[-1]
    first_sound = browser.first_sound_after(speech_end)
    if first_sound is not None:
        record.e2e_ms = (first_sound - speech_end) * 1000
    events = [e for e in call.events_since(cursor)[0] if e.get("turn") == record.turn]
    record.tools = [e["name"] for e in events if e["type"] == "tool_call"]
    record.tools_ms = sum(e.get("duration_ms") or 0 for e in events if e["type"] == "tool_call")
    log(
        f"voice: {text!r} -> heard {record.heard!r} · first audio after {record.e2e_ms or float('nan'):.0f} ms"
        + (f" · {record.finals} turns" if record.finals != 1 else "")
    )
    return record


def barge_in(call, browser: FakeBrowser, log) -> float | None:
    """Ask for a long answer, speak over it after 0.8 s of it; ms from the first speech frame to silence."""
    cursor = call.events_since(0)[1]
    heard_before = len(browser.sound_at)
    browser.say(spoken(BARGE_IN_PROMPT), PIPER_RATE, lead_silence=0.2, tail_silence=0.0)
    deadline = time.monotonic() + 30
    while len(browser.sound_at) < heard_before + 40 and time.monotonic() < deadline:  # 0.8 s of the answer
        time.sleep(0.02)
    if len(browser.sound_at) < heard_before + 40:
        log("voice: barge-in skipped (the answer was too short to speak over)")
        return None
    browser.say(spoken(BARGE_IN_WORDS), PIPER_RATE, lead_silence=0.0, tail_silence=0.0)
    deadline = time.monotonic() + 10
    while len(browser.speech_started_at) == 0 or browser.speech_started_at[-1] < browser.sound_at[heard_before]:
        time.sleep(0.02)
        if time.monotonic() > deadline:
            return None
    onset = browser.speech_started_at[-1]
    stopped = None
    while stopped is None and time.monotonic() < deadline:
        time.sleep(0.05)
        stopped = browser.sound_stopped_after(onset)
    _wait(call, lambda e: e["type"] == "turn_done", cursor, 30)
    _wait_quiet(call)
    time.sleep(0.5)
    if stopped is None:
        log("voice: barge-in: the agent kept talking")
        return None
    if stopped <= onset:  # it was between two sentences when the user started: nothing to interrupt
        log("voice: barge-in not measured (the agent was already quiet when the user started)")
        return None
    log(f"voice: barge-in: the agent went quiet {1000 * (stopped - onset):.0f} ms after the user started")
    return (stopped - onset) * 1000


def whisper_alone(
    stt: LocalWhisperSTT,
    recordings: list[np.ndarray],
    repeats: int = 2,
    *,
    weigh: bool = True,
    threads: int | None = None,
    interim: bool = False,
) -> list[float]:
    """Decode times (ms) of the same recordings, straight into Whisper with the call's prompt and
    threads, with the VAD's 0.5 s of lead-in the pipeline's decodes also get: the recognition a turn makes
    (with `weigh`, its decodes with and without the user's words), without the rare beam re-decode;
    `weigh=False`: one decode with the user's words; `interim`: an interim decode (its 15 s window)."""
    lead = np.zeros(WHISPER_SAMPLE_RATE // 2, np.float32)
    times = []
    for _ in range(repeats):
        for pcm in recordings:
            audio = np.concatenate([lead, resample(pcm, PIPER_RATE, WHISPER_SAMPLE_RATE).astype(np.float32) / 32768])
            decoded = stt.transcribe_sync(audio, cpu_threads=threads, redecode=False, weigh=weigh, interim=interim)
            times.append(decoded.decode_seconds * 1000)
    return times


def run(
    rounds: int = 2, log=print, *, utterances: int | None = None, paused: int | None = None, barge_ins: int = 3
) -> dict[str, Any]:
    log("voice: loading Silero, Whisper tiny.en and Piper…")
    prewarm_voice()
    said_each_round = UTTERANCES[:utterances] if utterances else UTTERANCES
    recordings = {text: spoken(text) for text in said_each_round}
    paused_said = PAUSED[:paused] if paused is not None else PAUSED
    pauses = {f"{a} … {b}": with_pause(a, p, b) for a, p, b in paused_said}
    verified = identity.verify(identity.sign_in_anonymously().access_token)
    key = f"bench-{uuid.uuid4().hex}"
    call = open_call(key, verified, greet=False)
    turns: list[VoiceTurn] = []
    barge_in_ms: list[float | None] = []
    try:
        with FakeBrowser(call) as browser:
            call.ready.result(timeout=180)
            time.sleep(1.0)  # let the VAD settle on silence
            for _round in range(rounds):
                for text in said_each_round:
                    turns.append(say_and_measure(call, browser, text, recordings[text], log))
                    time.sleep(0.5)
            for (_first, pause, _rest), (label, pcm) in zip(paused_said, pauses.items(), strict=True):
                turns.append(say_and_measure(call, browser, label, pcm, log, pause=pause))
                time.sleep(0.5)
            for _ in range(barge_ins):
                barge_in_ms.append(barge_in(call, browser, log))
            rows = {row["turn"]: row for row in per_turn_latency(call.events_since(0)[0])}
            for record in turns:
                if record.turn in rows:
                    record.metrics = {k: v for k, v in rows[record.turn].items() if k != "turn"}
        stt = call.stt
        speculation = stt.speculation.as_dict() if isinstance(stt, LocalWhisperSTT) else {}
        local = isinstance(stt, LocalWhisperSTT)
        alone_ms = whisper_alone(stt, list(recordings.values())) if local else []
        one_decode_ms = whisper_alone(stt, list(recordings.values()), weigh=False) if local else []
        # interim decodes on their thread share, with their 15 s window and with the whole 30 s one
        said, one = list(recordings.values()), voice_thread_budget().whisper_interim
        interim_ms = whisper_alone(stt, said, threads=one, interim=True) if local else []
        interim_whole_ms = whisper_alone(stt, said, weigh=False, threads=one) if local else []
    finally:
        future = end_call(key)
        if future is not None:
            future.result(timeout=120)
        with admin_connection() as conn:  # the bench user and everything it wrote
            conn.execute("delete from auth.users where id = %s", (verified.user_id,))
    return {
        "turns": turns,
        "rounds": rounds,
        "barge_in_ms": barge_in_ms,
        "speculation": speculation,
        "whisper_alone_ms": alone_ms,
        "one_decode_ms": one_decode_ms,
        "interim_ms": interim_ms,
        "interim_whole_window_ms": interim_whole_ms,
    }
