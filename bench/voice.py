"""End of user speech -> first agent audio, in the offline voice pipeline.

A fake browser (tests/support/audio.FakeBrowser) plays Piper-recorded
utterances into a LocalVoiceCall in real time, as 48 kHz stereo 20 ms frames,
and reads the agent's audio back every 20 ms like a WebRTC track. For each
turn it notes when the last speech frame was sent and when the first
non-silent agent frame came back. The session's own per-turn metrics say
where the time went.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from agent import end_call, open_call, per_turn_latency, prewarm_voice
from core import identity
from core.db import admin_connection
from tests.support.audio import FakeBrowser, piper_utterance
from tests.support.events import wait_for_event

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


@dataclass
class VoiceTurn:
    text: str
    heard: str | None = None
    turn: int | None = None
    e2e_ms: float | None = None  # browser: last speech frame sent -> first agent audio read
    metrics: dict[str, float] = field(default_factory=dict)
    tools: list[str] = field(default_factory=list)
    tools_ms: float = 0.0


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


def run(rounds: int = 2, log=print, *, utterances: int | None = None) -> dict[str, Any]:
    log("voice: loading Silero, Whisper tiny.en and Piper…")
    prewarm_voice()
    said_each_round = UTTERANCES[:utterances] if utterances else UTTERANCES
    recordings = {text: piper_utterance(text) for text in said_each_round}
    verified = identity.verify(identity.sign_in_anonymously().access_token)
    key = f"bench-{uuid.uuid4().hex}"
    call = open_call(key, verified, greet=False)
    turns: list[VoiceTurn] = []
    try:
        with FakeBrowser(call) as browser:
            call.ready.result(timeout=180)
            time.sleep(1.0)  # let the VAD settle on silence
            for round_number in range(rounds):
                for text in said_each_round:
                    record = VoiceTurn(text=text)
                    cursor = call.events_since(0)[1]
                    browser.say(recordings[text], 22_050, lead_silence=0.2, tail_silence=0.0)
                    said = _wait(
                        call,
                        lambda e: e["type"] == "transcript" and e["role"] == "user" and e.get("final"),
                        cursor,
                        timeout=30,
                    )
                    if said is None:
                        log(f"voice: no transcript for {text!r} (skipped)")
                        turns.append(record)
                        _wait_quiet(call)
                        continue
                    record.heard, record.turn = said["text"], said["turn"]
                    _wait(call, lambda e, turn=record.turn: e["type"] == "turn_done" and e["turn"] == turn, cursor, 60)
                    _wait_quiet(call)
                    speech_end = browser.speech_ended_at[-1]
                    first_sound = browser.first_sound_after(speech_end)
                    if first_sound is not None:
                        record.e2e_ms = (first_sound - speech_end) * 1000
                    events = [e for e in call.events_since(cursor)[0] if e.get("turn") == record.turn]
                    record.tools = [e["name"] for e in events if e["type"] == "tool_call"]
                    record.tools_ms = sum(e.get("duration_ms") or 0 for e in events if e["type"] == "tool_call")
                    turns.append(record)
                    log(
                        f"voice: round {round_number + 1} · {text!r} -> heard {record.heard!r} · "
                        f"first audio after {record.e2e_ms or float('nan'):.0f} ms"
                    )
                    time.sleep(0.5)
            rows = {row["turn"]: row for row in per_turn_latency(call.events_since(0)[0])}
            for record in turns:
                if record.turn in rows:
                    record.metrics = {k: v for k, v in rows[record.turn].items() if k != "turn"}
    finally:
        future = end_call(key)
        if future is not None:
            future.result(timeout=120)
        with admin_connection() as conn:  # the bench user and everything it wrote
            conn.execute("delete from auth.users where id = %s", (verified.user_id,))
    return {"turns": turns, "rounds": rounds}
