"""The recorded speech set of the WER bench: Piper's clips in takes, espeak-ng's once, each reused."""

import hashlib

import numpy as np

from bench import speech_set


def test_piper_clips_are_recorded_in_takes_espeak_ones_once_and_both_are_reused(tmp_path, monkeypatch):
    monkeypatch.setattr(speech_set, "folder", lambda: tmp_path)
    piper, espeak = speech_set.VOICES[0], speech_set.VOICES[3]
    made = []
    clips = speech_set.build(sentences=["Call me Sam."], voices=[piper, espeak], takes=2, log=made.append)
    assert [(c.voice, c.take, c.kind) for c in clips] == [
        (piper, 0, "generic"),
        (piper, 1, "generic"),
        (espeak, 0, "generic"),
    ]
    assert made == [f"speech set: recorded 3 clips into {tmp_path}"]
    # take 0 keeps the file name clips had before there were takes, so earlier recordings are reused
    assert clips[0].path.name == hashlib.sha1(b"Call me Sam.|piper joe 1.0x").hexdigest()[:16] + ".wav"
    # Piper samples noise as it speaks: a second take is another recording, not a copy
    assert not np.array_equal(clips[0].pcm_int16(), clips[1].pcm_int16())
    made.clear()
    again = speech_set.build(sentences=["Call me Sam."], voices=[piper, espeak], takes=2, log=made.append)
    assert [c.path for c in again] == [c.path for c in clips] and made == []
