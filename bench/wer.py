"""Word error rate of Whisper on the recorded speech set (bench/speech_set.py), before and after
prompting it with the words this user and deployment use.

A bench user is given the memories in `speech_set.PERSONA` (and a profile name), the way a user
who told the agent about themselves has them. "Before" is Whisper with the app's generic style
prompt; "after" is the prompt the voice call builds from `core.vocabulary.speech_terms` for that
user. Both decode every clip with the same model and threads; jiwer scores them after lowercasing
and removing punctuation.
"""

from __future__ import annotations

import time
from typing import Any

import jiwer

from agent import LocalWhisperSTT
from bench import speech_set
from core import identity, memories, profiles, vocabulary
from core.db import Scope, admin_connection

NORMALIZE = jiwer.Compose(
    [
        jiwer.ToLowerCase(),
        jiwer.SubstituteRegexes({r"(\d),(\d{3})": r"\1\2", r"-": " "}),
        jiwer.RemovePunctuation(),
        jiwer.RemoveMultipleSpaces(),
        jiwer.Strip(),
        jiwer.ReduceToListOfListOfWords(),
    ]
)


def word_error_rate(references: list[str], hypotheses: list[str]) -> float:
    return jiwer.wer(references, hypotheses, reference_transform=NORMALIZE, hypothesis_transform=NORMALIZE)


def _decode_all(stt: LocalWhisperSTT, clips: list[speech_set.Clip]) -> tuple[list[str], float]:
    started = time.perf_counter()
    heard = [stt.transcribe_sync(clip.pcm()).text for clip in clips]
    return heard, time.perf_counter() - started


def run(log=print, *, voices: list[speech_set.Voice] | None = None) -> dict[str, Any]:
    clips = speech_set.build(voices=voices, log=log)
    verified = identity.verify(identity.sign_in_anonymously().access_token)
    scope = Scope.service(verified.user_id)
    try:
        for slot, content in speech_set.PERSONA.items():
            memories.remember(scope, slot, content)
        profiles.update_profile(scope, "name", speech_set.PERSONA["name"].split(",")[0])
        terms = vocabulary.speech_terms(scope)
    finally:
        with admin_connection() as conn:
            conn.execute("delete from auth.users where id = %s", (verified.user_id,))
    stt = LocalWhisperSTT()
    stt.prewarm()
    log(f"wer: {len(clips)} clips, before (generic prompt)…")
    before, before_s = _decode_all(stt, clips)
    stt.set_vocabulary(terms)
    log(f"wer: after (prompt with {len(terms)} terms of this user and deployment)…")
    after, after_s = _decode_all(stt, clips)
    rows = []
    for kind in ("domain", "generic"):
        picked = [i for i, c in enumerate(clips) if c.kind == kind]
        refs = [clips[i].text for i in picked]
        rows.append(
            {
                "kind": kind,
                "clips": len(picked),
                "sentences": len({clips[i].text for i in picked}),
                "before": word_error_rate(refs, [before[i] for i in picked]),
                "after": word_error_rate(refs, [after[i] for i in picked]),
            }
        )
    by_voice = []
    for voice in {c.voice for c in clips}:
        picked = [i for i, c in enumerate(clips) if c.voice == voice]
        refs = [clips[i].text for i in picked]
        by_voice.append(
            {
                "voice": voice.label,
                "before": word_error_rate(refs, [before[i] for i in picked]),
                "after": word_error_rate(refs, [after[i] for i in picked]),
            }
        )
    examples = [
        (c.text, c.voice.label, before[i], after[i])
        for i, c in enumerate(clips)
        if c.kind == "domain" and NORMALIZE(before[i]) != NORMALIZE(after[i])
    ][:12]
    return {
        "rows": rows,
        "by_voice": sorted(by_voice, key=lambda r: r["voice"]),
        "prompt": stt.prompt,
        "terms": len(terms),
        "decode_seconds": {"before": before_s, "after": after_s},
        "examples": examples,
    }
